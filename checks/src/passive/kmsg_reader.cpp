#include "kmsg_reader.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/counter_state.h"
#include "vigil/base/files.h"
#include "vigil/base/strings.h"

namespace vigil::kmsg {

namespace fs = std::filesystem;

namespace {

template <typename T>
bool parse_number(std::string_view s, T& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

std::optional<Record> parse_record(std::string_view line) {
  const size_t semi = line.find(';');
  if (semi == std::string_view::npos) return std::nullopt;
  std::string_view prefix = line.substr(0, semi);
  // prio, seq, usec, flags (and optional further fields): at least the first three numbers.
  std::string_view fields[3];
  for (auto& f : fields) {
    const size_t comma = prefix.find(',');
    if (comma == std::string_view::npos) return std::nullopt;
    f = prefix.substr(0, comma);
    prefix.remove_prefix(comma + 1);
  }
  unsigned prio = 0;
  std::uint64_t seq = 0, usec = 0;
  if (!parse_number(fields[0], prio) || !parse_number(fields[1], seq) ||
      !parse_number(fields[2], usec)) {
    return std::nullopt;
  }
  return Record{seq, std::string(line.substr(semi + 1)), prio, usec};
}

namespace {

// "(<device>): <number>, <rest>" after `tag`; device as written, rest trimmed.
struct Tagged {
  std::string_view device;
  unsigned long long number = 0;
  std::string_view rest;
};
std::optional<Tagged> after_tag(std::string_view message, std::string_view tag) {
  const size_t at = message.find(tag);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = message.substr(at + tag.size());
  const size_t close = rest.find("):");
  if (close == std::string_view::npos) return std::nullopt;
  Tagged t;
  t.device = rest.substr(0, close);
  if (t.device.substr(0, 4) == "PCI:") t.device.remove_prefix(4);
  t.device = t.device.substr(0, t.device.find(' '));  // MIG: "0000:01:00 GPU-I:05"
  rest = trim(rest.substr(close + 2));
  const size_t comma = rest.find(',');
  if (!parse_number(trim(rest.substr(0, comma)), t.number)) return std::nullopt;
  if (comma != std::string_view::npos) t.rest = trim(rest.substr(comma + 1));
  return t;
}

}  // namespace

std::optional<Xid> parse_xid(std::string_view message) {
  auto t = after_tag(message, "NVRM: Xid (");
  if (!t) return std::nullopt;
  return Xid{std::string(t->device), t->number, std::string(t->rest)};
}

namespace {

// The decimal number right after `word` in `text` ("Link 44 ..." -> 44); nullopt without one.
std::optional<unsigned> number_after(std::string_view text, std::string_view word) {
  const size_t at = text.find(word);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view digits = text.substr(at + word.size());
  digits = digits.substr(0, digits.find_first_not_of("0123456789"));
  unsigned n = 0;
  if (!parse_number(digits, n)) return std::nullopt;
  return n;
}

}  // namespace

std::optional<Sxid> parse_sxid(std::string_view message) {
  auto t = after_tag(message, "SXid (");
  if (!t || message.find("nvswitch") == std::string_view::npos) return std::nullopt;
  Sxid s{std::string(t->device), t->number, false, std::nullopt, false, std::nullopt};
  if (t->rest.starts_with("Severity ")) {
    s.severity_line = true;
    s.severity = number_after(t->rest, "Severity ");
    if (!s.severity) return std::nullopt;
    s.fatal = *s.severity == 1;
    s.instance = number_after(t->rest, "Engine instance ");
    return s;
  }
  const std::string_view severity = t->rest.substr(0, t->rest.find(','));
  if (severity != "Fatal" && severity != "Non-fatal") return std::nullopt;  // Data, Correctable
  s.fatal = severity == "Fatal";
  s.instance = number_after(t->rest, ", Link ");
  if (!s.instance) s.instance = number_after(t->rest, "instance=");
  return s;
}

std::optional<DeviceFault> parse_device_fault(std::string_view message) {
  constexpr auto npos = std::string_view::npos;
  // The record must begin with the driver's own prefix: a kernel message that quotes a user's
  // text (an exec'd file name, say) holds such words elsewhere, never at its start.
  if (message.starts_with("NVRM: knvlink") &&
      (message.find("postRxDetLinkMask failed!") != npos ||
       message.find("Failed to update Rx Detect Link mask!") != npos))
    return DeviceFault{"NVLINK", "post-RX-detect link mask failed", false};
  if (!message.starts_with("mlx5_core ")) return std::nullopt;
  std::string_view rest = message.substr(10);
  const size_t colon = rest.find(": ");
  if (colon == npos || colon == 0) return std::nullopt;
  const std::string_view bdf = rest.substr(0, colon);
  if (bdf.find_first_not_of("0123456789abcdefABCDEF:.") != npos) return std::nullopt;
  std::string_view text = rest.substr(colon + 2);
  // mlx5_core_err's "<function>:<line>:(pid N): " before the text.
  if (const size_t pid = text.find(":(pid "); pid != npos)
    if (const size_t end = text.find("): ", pid); end != npos) text = text.substr(end + 3);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  DeviceFault f{"NIC " + std::string(bdf), "", false};
  if (text.starts_with("device's health compromised")) {
    f.what = "mlx5 health compromised";
  } else if (text.starts_with("Fatal error ") && text.ends_with(" detected")) {
    f.what = "mlx5 " + std::string(text.substr(0, text.size() - 9));  // "mlx5 Fatal error 1"
  } else if (text.starts_with("synd 0x")) {
    std::string t(text);
    std::erase(t, ':');
    f.what = "mlx5 " + t;  // "mlx5 synd 0x1 firmware internal error"
  } else if (text.starts_with("PCI slot") && text.ends_with("is unavailable")) {
    f.what = "mlx5 PCI slot unavailable";
  } else if (text.starts_with("health recovery flow aborted") ||
             text.starts_with("health recovery failed")) {
    f.what = "mlx5 health recovery failed";
  } else if (text.starts_with("health recovery succeeded")) {
    f.recovered = true;
  } else {
    return std::nullopt;
  }
  // An item's last "(...)" is its action (remembered_action): none inside the text.
  std::replace(f.what.begin(), f.what.end(), '(', '[');
  std::replace(f.what.begin(), f.what.end(), ')', ']');
  return f;
}

XidAction remembered_action(std::string_view item, const XidCatalogue& catalogue) {
  const size_t open = item.rfind('(');
  if (open != std::string_view::npos) {
    std::string_view token = item.substr(open + 1);
    token = token.substr(0, token.find_first_of(",:)"));
    if (auto a = value_of(kXidActionNames, token)) return *a;
  }
  // Written before the catalogue: "XID 48 0000:18:00", "XID 154 0000:18:00 (gpu reset required)".
  unsigned long long xid = 0;
  std::string_view rest = item.starts_with("XID ") ? item.substr(4) : std::string_view{};
  if (!parse_number(rest.substr(0, rest.find(' ')), xid)) return XidAction::kReboot;
  if (xid == 154)
    return item.find("reset") != std::string_view::npos ? XidAction::kResetGpu : XidAction::kReboot;
  const XidAction a = catalogue.judge(xid).action;
  return drains(a) ? a : XidAction::kReboot;  // it failed then: keep it until the boot ends
}

Result<Scan> read_records(const std::string& path, std::uint64_t after_seq) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Error{std::strerror(errno), "open " + path};
  Scan scan;
  std::string pending;  // bytes after the last '\n'
  char buf[8192];       // a /dev/kmsg record is at most ~1 KiB (LOG_LINE_MAX + prefix)
  auto take_line = [&](std::string_view line) {
    if (line.empty() || line.front() == ' ') return;  // continuation ("KEY=value") or blank
    auto rec = parse_record(line);
    if (!rec) {
      ++scan.malformed;
      return;
    }
    if (scan.first_seq == 0 || rec->seq < scan.first_seq) scan.first_seq = rec->seq;
    if (rec->seq > scan.last_seq) scan.last_seq = rec->seq;
    if (rec->seq > after_seq) scan.records.push_back(std::move(*rec));
  };
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE) {  // the ring buffer overwrote records we had not read yet
        ++scan.overwritten;
        continue;
      }
      if (errno == EAGAIN) break;  // /dev/kmsg: no more records
      const int err = errno;
      ::close(fd);
      return Error{std::strerror(err), "read " + path};
    }
    if (n == 0) break;  // regular file: end
    pending.append(buf, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      take_line(std::string_view(pending).substr(start, nl - start));
    }
    pending.erase(0, start);
  }
  ::close(fd);
  // `pending` is a record still being written (no '\n' yet): left for the next run.
  return scan;
}

std::string cursor_path(const std::string& state_dir, const std::string& node) {
  if (state_dir.empty()) return "";
  return (fs::path(state_dir) / ("kmsg_xid." + file_safe(node) + ".json")).string();
}

Result<ResetCleared> clear_after_gpu_reset(const std::string& path, std::string device) {
  for (char& c : device) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (device.size() == 16 && device.rfind("0000", 0) == 0) device.erase(0, 4);  // nvidia-smi
  if (device.size() == 12 && device[10] == '.') device.resize(10);              // "0000:18:00.0"
  if (device.size() != 10 || device[4] != ':' || device[7] != ':')
    return Error{
        "expected a PCI bus id like 0000:18:00, 0000:18:00.0 or nvidia-smi's "
        "00000000:18:00.0, got '" +
            device + "'",
        "--gpu"};
  auto lock = CursorLock::acquire(path);
  if (!lock) return lock.error();
  auto cursor = load_cursor(path);
  if (!cursor) return cursor.error();
  ResetCleared out;
  std::vector<std::string> remaining;
  for (const std::string& item : cursor->fatal) {
    // "XID 48 0000:18:00 (reset_gpu)"; the device as the driver wrote it, compared without
    // case.
    std::string lower = item;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool this_gpu = lower.find(" " + device) != std::string::npos;
    if (this_gpu && remembered_action(item, *XidCatalogue::builtin()) == XidAction::kResetGpu) {
      out.cleared.push_back(item);
      continue;
    }
    if (this_gpu) out.kept.push_back(item);
    remaining.push_back(item);
  }
  if (out.cleared.empty()) return out;
  cursor->fatal = std::move(remaining);
  if (auto saved = save_cursor(path, *cursor); !saved) return saved.error();
  return out;
}

Result<Cursor> load_cursor(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Cursor{};  // first run
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    Cursor c;
    c.boot_id = j.at("boot_id").get<std::string>();
    if (j.contains("last_seq")) c.last_seq = j.at("last_seq").get<std::uint64_t>();
    c.fatal = j.value("fatal", std::vector<std::string>{});
    return c;
  } catch (const nlohmann::json::exception& e) {
    return Error{std::string("malformed cursor: ") + e.what(), path};
  }
}

VoidResult save_cursor(const std::string& path, const Cursor& c) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) return Error{ec.message(), "create_directories for " + path};
  nlohmann::json j{{"boot_id", c.boot_id}, {"fatal", c.fatal}};
  if (c.last_seq) j["last_seq"] = *c.last_seq;
  if (auto w = replace_file_atomically(path, j.dump(2) + "\n"); !w.ok()) return w.error();
  return ok_result();
}

Result<CursorLock> CursorLock::acquire(const std::string& path) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string lock_path = path + ".lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Error{std::strerror(errno), "open " + lock_path};
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    ::close(fd);
    return Error{std::strerror(err), "flock " + lock_path};
  }
  return CursorLock(fd);
}

CursorLock::~CursorLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace vigil::kmsg
