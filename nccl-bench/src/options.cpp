#include "vigil/ncclbench/options.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "vigil/base/strings.h"

namespace vigil::ncclbench {

std::size_t element_size(DataType d) { return d == DataType::kBf16 ? 2 : 4; }

std::optional<std::uint64_t> parse_size(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  if (s.empty()) return std::nullopt;
  std::uint64_t mult = 1;
  switch (s.back()) {
    case 'K':
    case 'k':
      mult = 1ull << 10;
      break;
    case 'M':
    case 'm':
      mult = 1ull << 20;
      break;
    case 'G':
    case 'g':
      mult = 1ull << 30;
      break;
    case 'T':
    case 't':
      mult = 1ull << 40;
      break;
    default:
      break;
  }
  if (mult != 1) s.remove_suffix(1);
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  if (v > std::numeric_limits<std::uint64_t>::max() / mult) return std::nullopt;
  return v * mult;
}

std::optional<std::vector<std::uint64_t>> parse_size_list(std::string_view s) {
  std::vector<std::uint64_t> out;
  while (!s.empty()) {
    auto comma = s.find(',');
    auto item = s.substr(0, comma);
    auto v = parse_size(item);
    if (!v) return std::nullopt;
    out.push_back(*v);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

std::vector<std::uint64_t> BenchOptions::size_list() const {
  const std::uint64_t elem = element_size(datatype);
  auto round = [elem](std::uint64_t b) {
    if (b == 0) return b;
    return std::max<std::uint64_t>(elem, b / elem * elem);
  };
  std::vector<std::uint64_t> out;
  if (!sizes.empty()) {
    for (auto b : sizes) out.push_back(round(b));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  if (step_factor < 2 || min_bytes > max_bytes) return out;
  std::uint64_t b = min_bytes;
  while (true) {
    out.push_back(round(b));
    if (b == 0 || b > max_bytes / static_cast<std::uint64_t>(step_factor)) break;
    b *= static_cast<std::uint64_t>(step_factor);
    if (b > max_bytes) break;
  }
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string BenchOptions::validate() const {
  if (sizes.empty()) {
    if (min_bytes > max_bytes) return "-b (minbytes) must be <= -e (maxbytes)";
    if (step_factor < 2) return "-f (stepfactor) must be >= 2";
  }
  if (warmup_iters < 0) return "-w (warmup iterations) must be >= 0";
  if (iters < 1) return "-n (iterations) must be >= 1";
  if (timeout_s < 0) return "--timeout must be >= 0 seconds (0 disables the watchdog)";
  if (min_busbw_gb_s && *min_busbw_gb_s < 0) return "--min-busbw must be >= 0 GB/s";
  if (datatype == DataType::kBf16 && backend == Backend::kHost)
    return "-d bf16 needs --backend nccl (MPI has no bfloat16 sum); use -d float with the host "
           "backend";
  if (size_list().empty()) return "no message sizes to run; check -b/-e/-f or --sizes";
  return {};
}

std::vector<std::pair<std::string, std::string>> transport_env(Transport t) {
  if (t == Transport::kIb)
    return {{"NCCL_P2P_DISABLE", "1"},
            {"NCCL_SHM_DISABLE", "1"},
            {"NCCL_ALGO", "Ring"},
            {"NCCL_MNNVL_ENABLE", "0"}};
  // A fabric job measures the network between nodes: on a GB200/GB300 NVL72 two trays of one
  // rack would otherwise be joined over multi-node NVLink (NCCL_MNNVL_ENABLE defaults to 2,
  // "auto", for a job across nodes: NVIDIA/nccl src/init.cc) and no byte would cross the NICs.
  if (t == Transport::kFabric)
    return {{"NCCL_P2P_DISABLE", "0"}, {"NCCL_SHM_DISABLE", "0"}, {"NCCL_MNNVL_ENABLE", "0"}};
  // An NVLink domain job (GB200/GB300 NVL72) measures the trays' NVLink through the NVSwitch
  // trays, so multi-node NVLink is forced: with NCCL_MNNVL_ENABLE=1 NCCL's init fails ("MNNVL is
  // not supported on this system", ncclSystemError: NVIDIA/nccl src/init.cc) instead of quietly
  // joining the trays over the network. NVLS (NVLink SHARP) is forced too (NCCL_NVLS_ENABLE=1
  // skips the multicast probe, src/transport/nvls.cc): it is the production path in one rack.
  if (t == Transport::kDomain)
    return {{"NCCL_P2P_DISABLE", "0"},
            {"NCCL_SHM_DISABLE", "0"},
            {"NCCL_MNNVL_ENABLE", "1"},
            {"NCCL_NVLS_ENABLE", "1"}};
  return {{"NCCL_P2P_DISABLE", "0"}, {"NCCL_SHM_DISABLE", "0"}};
}

const std::vector<std::string>& tuning_env_names() {
  static const std::vector<std::string> names = {
      "NCCL_ALGO",          "NCCL_PROTO",
      "NCCL_NVLS_ENABLE",   "NCCL_NVLSTREE_MAX_CHUNKSIZE",
      "NCCL_P2P_DISABLE",   "NCCL_P2P_LEVEL",
      "NCCL_SHM_DISABLE",   "NCCL_MIN_NCHANNELS",
      "NCCL_MAX_NCHANNELS", "NCCL_MIN_CTAS",
      "NCCL_MAX_CTAS",      "NCCL_NTHREADS",
      "NCCL_BUFFSIZE",      "NCCL_COLLNET_ENABLE",
      "NCCL_TUNER_PLUGIN",  "NCCL_CROSS_NIC",
  };
  return names;
}

std::vector<std::string> conf_file_tuning(const std::string& text, const std::string& file) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    line = std::string(trim(line, " \r"));
    if (line.empty() || line[0] == '#') continue;
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = line.substr(0, eq);
    for (const auto& t : tuning_env_names())
      if (name == t) out.push_back(line + " (" + file + ")");
    if (end == text.size()) break;
  }
  return out;
}

std::vector<std::string> remove_tuning_env() {
  std::vector<std::string> removed;
  for (const std::string& name : tuning_env_names()) {
    if (const char* v = std::getenv(name.c_str())) {
      removed.push_back(name + "=" + v);
      unsetenv(name.c_str());
    }
  }
  return removed;
}

std::vector<std::string> nccl_conf_files(const std::string& etc_conf) {
  std::vector<std::string> files;
  if (const char* f = std::getenv("NCCL_CONF_FILE"); f && *f) {
    files.push_back(f);
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    files.push_back(std::string(home) + "/.nccl.conf");
  }
  files.push_back(etc_conf);
  return files;
}

bool conf_files_set(const std::string& name, const std::string& etc_conf) {
  for (const std::string& f : nccl_conf_files(etc_conf)) {
    std::ifstream in(f);
    for (std::string line; in && std::getline(in, line);) {
      line = std::string(trim(line, " \t\r"));
      if (line.rfind(name + "=", 0) == 0) return true;
    }
  }
  return false;
}

std::vector<std::string> conf_tuning_in_effect(const std::string& etc_conf) {
  std::vector<std::string> out;
  for (const std::string& f : nccl_conf_files(etc_conf)) {
    std::ifstream in(f);
    if (!in) continue;
    std::stringstream text;
    text << in.rdbuf();
    for (std::string& t : conf_file_tuning(text.str(), f)) {
      // A value already in the environment wins over the file's (NCCL's rule), e.g. the
      // transport mode's NCCL_P2P_DISABLE; the first file to set a variable wins too.
      const std::string name = t.substr(0, t.find('='));
      bool seen = std::getenv(name.c_str()) != nullptr;
      for (const auto& o : out) seen = seen || o.rfind(name + "=", 0) == 0;
      if (!seen) out.push_back(std::move(t));
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> tuning_log_env(const std::string& path) {
  if (const char* d = std::getenv("NCCL_DEBUG"); d && *d) return {};
  // TUNING: the algorithm per collective; INIT and NET: the channels' transports and the network
  // NCCL chose (parse_transport_log), logged once at communicator setup.
  return {
      {"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_SUBSYS", "INIT,NET,TUNING"}, {"NCCL_DEBUG_FILE", path}};
}

namespace {

// The names Vigil reports, NCCL's src/init.cc ncclAlgoStr and ncclProtoStr (the spelling of
// NCCL_ALGO / NCCL_PROTO and the SKU files), indexed by NCCL_ALGO_* / NCCL_PROTO_*
// (src/include/nccl_common.h).
constexpr std::array<std::string_view, 7> kNcclAlgorithms = {
    "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
constexpr std::array<std::string_view, 3> kNcclProtocols = {"LL", "LL128", "Simple"};

// Upper case without underscores: "NVLS_TREE" (ncclAlgoToString, what 2.24+ print) and
// "NVLSTree" (ncclAlgoStr) meet as "NVLSTREE"; "SIMPLE" and "Simple" as "SIMPLE".
std::string name_key(std::string_view word) {
  std::string key;
  for (char c : word)
    if (c != '_') key += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return key;
}

// A name as NCCL prints it, or a number (2.20-2.23) turned into that name; empty when neither.
// The per-collective TUNING line (src/enqueue.cc) printed numbers from v2.20.3-1 (line 1498,
// "%ld Bytes -> Algo %d proto %d time %f"; 2.23 adds the collective's name) and, from v2.24.3-1
// (line 678; v2.26.2-1 line 701), ncclAlgoToString / ncclProtoToString (src/collectives.cc):
// "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"; "LL", "LL128",
// "SIMPLE" (review W6). Genuine lines of both: tests/fixtures/nccl-info/SOURCES.md.
template <std::size_t N>
std::string nccl_name(std::string_view word, const std::array<std::string_view, N>& table) {
  const std::string key = name_key(word);
  for (std::string_view name : table)
    if (key == name_key(name)) return std::string(name);
  unsigned index = 0;
  const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), index);
  if (ec == std::errc() && end == word.data() + word.size() && index < N)
    return std::string(table[index]);
  return {};
}

}  // namespace

std::vector<AlgoChoice> parse_tuning_log(std::string_view text) {
  std::map<std::uint64_t, AlgoChoice> by_size;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    const auto info = line.find("NCCL INFO ");
    if (info == std::string::npos) continue;
    std::istringstream words(line.substr(info + 10));
    std::string w, bytes_word, arrow, algo_kw, algo, proto_kw, proto;
    if (!(words >> w)) continue;
    if (w.back() == ':') {  // "AllReduce:" (2.23+); 2.20-2.22 start with the size
      if (w != "AllReduce:") continue;
      if (!(words >> w)) continue;
    }
    if (!(words >> bytes_word >> arrow >> algo_kw >> algo >> proto_kw >> proto)) continue;
    if (bytes_word != "Bytes" || arrow != "->" || algo_kw != "Algo" || proto_kw != "proto")
      continue;
    std::uint64_t size = 0;
    const auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), size);
    if (ec != std::errc() || end != w.data() + w.size()) continue;
    AlgoChoice c{size, nccl_name(algo, kNcclAlgorithms), nccl_name(proto, kNcclProtocols)};
    if (c.algorithm.empty() || c.protocol.empty()) continue;
    by_size[size] = std::move(c);
  }
  std::vector<AlgoChoice> out;
  for (auto& [size, c] : by_size) out.push_back(std::move(c));
  return out;
}

namespace {

// "NET/IB/0(8)/GDRDMA" -> "NET/IB"; "P2P/IPC/read" -> "P2P/IPC"; "SHM/direct/direct" -> "SHM";
// "direct shared memory" (NCCL 2.4) -> "SHM".
std::string transport_path(std::string_view via) {
  if (via.rfind("direct shared memory", 0) == 0) return "SHM";
  const auto first = via.find('/');
  const std::string_view kind = via.substr(0, first);
  if (kind == "SHM" || first == std::string_view::npos) return std::string(kind);
  const std::string_view rest = via.substr(first + 1);
  return std::string(kind) + "/" + std::string(rest.substr(0, rest.find('/')));
}

}  // namespace

TransportUse parse_transport_log(std::string_view text) {
  TransportUse t;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto info = line.find(" INFO ");  // NCCL 2.1 wrote "INFO", later "NCCL INFO"
    if (info == std::string::npos) continue;
    const std::string_view msg = std::string_view(line).substr(info + 6);
    if (const auto via = msg.find(" via ");
        via != std::string_view::npos &&
        (msg.rfind("Channel ", 0) == 0 || msg.rfind("Ring ", 0) == 0 ||
         msg.find(" -> ") != std::string_view::npos)) {
      const std::string_view what = msg.substr(via + 5);
      const std::string path = transport_path(what);
      if (path.empty()) continue;
      if (std::find(t.paths.begin(), t.paths.end(), path) == t.paths.end()) t.paths.push_back(path);
      if (path.rfind("NET/", 0) == 0) {
        t.net_connections++;
        // "/GDRDMA", and with NCCL 2.26+'s extras "/GDRDMA(PCI)", "/GDRDMA/Shared" (src/net.cc)
        if (what.find("/GDRDMA") != std::string_view::npos) t.gdr_connections++;
      }
    } else if (msg.rfind("Using network ", 0) == 0) {
      t.network = std::string(msg.substr(14));
    } else if (msg.rfind("NVLS multicast support is available", 0) == 0 ||
               msg.rfind("NVLS comm ", 0) == 0 || msg.rfind("Connected NVLS", 0) == 0) {
      t.nvls = true;
    }
  }
  return t;
}

std::optional<int> select_device(int visible_devices, int local_rank, int local_ranks) {
  if (visible_devices <= 0 || local_rank < 0 || local_rank >= local_ranks) return std::nullopt;
  if (visible_devices >= local_ranks) return local_rank;
  if (visible_devices == 1) return 0;
  return std::nullopt;
}

}  // namespace vigil::ncclbench
