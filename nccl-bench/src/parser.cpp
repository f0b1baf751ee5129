#include "vigil/ncclbench/parser.h"

#include <cctype>
#include <charconv>
#include <string>
#include <vector>

#include "vigil/base/strings.h"

namespace vigil::ncclbench {
namespace {

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    std::size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

template <typename T>
std::optional<T> number(std::string_view s) {
  T v{};
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// `srun -l` puts "<task>: " in front of every line (" 0: ", "12: ").
std::string_view strip_srun_label(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  std::size_t d = i;
  while (d < line.size() && std::isdigit(static_cast<unsigned char>(line[d]))) ++d;
  if (d > i && d + 1 < line.size() && line[d] == ':' && (line[d + 1] == ' ' || line[d + 1] == '\t'))
    return line.substr(d + 2);
  if (d > i && d + 1 == line.size() && line[d] == ':') return {};
  return line;
}

// Where the columns of a data row are, from the "#  size  count  type ..." header line.
struct Layout {
  std::size_t columns = 0;
  int type = 2;
  int redop = -1;
  int root = -1;
  int first_time = -1;        // out-of-place time; in-place time is first_time + 4
  bool error_column = false;  // old format: max error instead of #wrong
};

std::optional<Layout> layout_from_header(const std::vector<std::string_view>& t) {
  Layout l;
  l.columns = t.size();
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] == "type") l.type = static_cast<int>(i);
    if (t[i] == "redop") l.redop = static_cast<int>(i);
    if (t[i] == "root") l.root = static_cast<int>(i);
    if (t[i] == "time" && l.first_time < 0) l.first_time = static_cast<int>(i);
    if (t[i] == "error") l.error_column = true;
  }
  if (l.first_time < 0 || static_cast<std::size_t>(l.first_time) + 8 != t.size())
    return std::nullopt;
  return l;
}

// Without a header line, the token count tells the format apart.
std::optional<Layout> layout_from_count(std::size_t n) {
  Layout l;
  l.columns = n;
  if (n == 13) {  // 2.x: size count type redop root | 4 | 4
    l.redop = 3;
    l.root = 4;
    l.first_time = 5;
  } else if (n == 12) {  // old all_reduce: size count type redop | 4 | 4
    l.redop = 3;
    l.first_time = 4;
  } else if (n == 11) {  // old all_gather: size count type | 4 | 4
    l.first_time = 3;
  } else {
    return std::nullopt;
  }
  return l;
}

std::optional<BenchPoint> parse_point(const std::vector<std::string_view>& t, std::size_t at,
                                      bool error_column) {
  BenchPoint p;
  auto time = number<double>(t[at]);
  auto alg = number<double>(t[at + 1]);
  auto bus = number<double>(t[at + 2]);
  if (!time || !alg || !bus) return std::nullopt;
  p.time_us = *time;
  p.algbw_gb_s = *alg;
  p.busbw_gb_s = *bus;
  std::string_view w = t[at + 3];
  if (w == "N/A") return p;
  if (auto i = number<std::int64_t>(w); i && !error_column) {
    p.wrong = *i;
  } else if (auto d = number<double>(w)) {
    p.max_error = *d;  // old "error" column: maximum deviation, not a count
  } else {
    return std::nullopt;
  }
  return p;
}

std::optional<BenchRow> parse_row(const std::vector<std::string_view>& t, const Layout& l) {
  if (t.size() != l.columns) return std::nullopt;
  auto size = number<std::uint64_t>(t[0]);
  auto count = number<std::uint64_t>(t[1]);
  if (!size || !count) return std::nullopt;
  BenchRow r;
  r.size_bytes = *size;
  r.count = *count;
  r.type = std::string(t[l.type]);
  if (r.type.empty() || !std::isalpha(static_cast<unsigned char>(r.type[0]))) return std::nullopt;
  if (l.redop >= 0) r.redop = std::string(t[l.redop]);
  if (l.root >= 0) {
    auto root = number<int>(t[l.root]);
    if (!root) return std::nullopt;
    r.root = *root;
  }
  auto oop = parse_point(t, l.first_time, l.error_column);
  auto ip = parse_point(t, l.first_time + 4, l.error_column);
  if (!oop || !ip) return std::nullopt;
  r.out_of_place = *oop;
  r.in_place = *ip;
  return r;
}

// "nccl-library=23007" -> "2.30.7" (NCCL_VERSION_CODE: major*10000 + minor*100 + patch since
// 2.9; before that major*1000 + minor*100 + patch).
std::string nccl_version_from_code(std::string_view code) {
  auto v = number<int>(code);
  if (!v) return std::string(code);
  int c = *v;
  if (c >= 20900)
    return std::to_string(c / 10000) + "." + std::to_string(c / 100 % 100) + "." +
           std::to_string(c % 100);
  return std::to_string(c / 1000) + "." + std::to_string(c / 100 % 10) + "." +
         std::to_string(c % 100);
}

void parse_comment(std::string_view body, BenchRun& run, std::optional<Layout>& layout) {
  auto t = split_ws(body);
  if (t.empty()) return;
  if (body.starts_with("nccl-tests version")) {
    run.tool = "nccl-tests";
    if (t.size() >= 3) run.tool_version = std::string(t[2]);
    for (auto tok : t)
      if (tok.starts_with("nccl-library="))
        run.nccl_version = nccl_version_from_code(tok.substr(13));
    return;
  }
  if (t[0] == "vigil-allreduce") {
    run.tool = "vigil-allreduce";
    if (t.size() >= 2) run.tool_version = std::string(t[1]);
    for (std::size_t i = 2; i + 1 < t.size(); ++i) {
      if (t[i] == "backend") run.backend = std::string(t[i + 1]);
      if (t[i] == "transport") run.transport = std::string(t[i + 1]);
      if (t[i] == "nccl") run.nccl_version = std::string(t[i + 1]);
    }
    return;
  }
  if (body.starts_with("Collective test starting:") && t.size() >= 4) {
    std::string name(t[3]);
    if (name.size() > 5 && name.ends_with("_perf")) name.resize(name.size() - 5);
    run.collective = name;
    return;
  }
  if (t[0] == "nThread") {
    for (std::size_t i = 0; i + 1 < t.size(); ++i) {
      bool is_warmup = i > 0 && t[i - 1] == "warmup";
      bool is_agg = i > 0 && t[i - 1] == "agg";
      if (t[i] == "iters:" && is_warmup) run.warmup_iters = number<int>(t[i + 1]);
      if (t[i] == "iters:" && !is_warmup && !is_agg) run.iters = number<int>(t[i + 1]);
      if (t[i] == "validation:") {
        if (auto v = number<int>(t[i + 1])) run.check = *v != 0;
      }
    }
    return;
  }
  if (t[0] == "Rank" && t.size() >= 2 && number<int>(t[1])) {
    run.ranks = run.ranks.value_or(0) + 1;
    for (std::size_t i = 2; i + 1 < t.size(); ++i)
      if (t[i] == "on") {
        run.hostnames.emplace_back(t[i + 1]);
        break;
      }
    return;
  }
  if (t[0] == "size" && t.size() > 8) {
    if (auto l = layout_from_header(t)) layout = l;
    return;
  }
  auto colon = body.find(':');
  if (colon == std::string_view::npos) return;
  auto key = trim(body.substr(0, colon));
  auto val = split_ws(body.substr(colon + 1));
  if (key == "Out of bounds values" && !val.empty()) {
    run.out_of_bounds = number<std::int64_t>(val[0]);
    if (val.size() >= 2) run.out_of_bounds_ok = val[1] == "OK";
  } else if (key == "Avg bus bandwidth" && !val.empty()) {
    run.avg_busbw_gb_s = number<double>(val[0]);
  } else if (key == "Result" && !val.empty()) {  // vigil-allreduce's own footer line
    if (auto o = value_of(kOutcomeNames, val[0])) run.outcome = *o;
  }
}

}  // namespace

Result<BenchRun> parse_nccl_tests_text(std::string_view text) {
  BenchRun run;
  run.tool = "nccl-tests";
  std::optional<Layout> layout;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    auto nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    line = trim(strip_srun_label(line));
    if (line.empty()) continue;
    if (line.front() == '#') {
      parse_comment(trim(line.substr(1)), run, layout);
      continue;
    }
    // Anything else is a data row or noise (NCCL INFO/WARN lines, launcher messages).
    auto t = split_ws(line);
    if (t.size() < 11 || !std::isdigit(static_cast<unsigned char>(t[0][0]))) continue;
    std::optional<Layout> l =
        layout && layout->columns == t.size() ? layout : layout_from_count(t.size());
    if (!l) continue;
    if (auto row = parse_row(t, *l)) run.rows.push_back(std::move(*row));
  }
  if (run.rows.empty() && !run.avg_busbw_gb_s && !run.out_of_bounds)
    return Error{
        "no nccl-tests table found (no data rows, no footer); the benchmark probably "
        "failed before its first size: read its stderr",
        "parse_nccl_tests_text"};
  if (run.outcome == Outcome::kOk && (run.out_of_bounds_ok == false || run.total_wrong() > 0))
    run.outcome = Outcome::kWrongResults;
  return run;
}

}  // namespace vigil::ncclbench
