#include "ib/ib_sysfs.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <system_error>

#include "vigil/base/strings.h"

namespace vigil::ib {

namespace fs = std::filesystem;

std::optional<NumberedState> parse_numbered_state(std::string_view s) {
  s = trim(s);
  int code = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), code);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  std::string_view rest(end, static_cast<size_t>(s.data() + s.size() - end));
  if (rest.empty() || rest.front() != ':') return std::nullopt;
  rest = trim(rest.substr(1));
  if (rest.empty()) return std::nullopt;
  return NumberedState{code, std::string(rest)};
}

std::optional<double> parse_rate_gbps(std::string_view s) {
  s = trim(s);
  double rate = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), rate);
  if (ec != std::errc() || end == s.data() || rate < 0) return std::nullopt;
  std::string_view rest =
      trim(std::string_view(end, static_cast<size_t>(s.data() + s.size() - end)));
  // The kernel always prints the unit after the number ("Gb/sec"); anything else is not a rate.
  if (rest.substr(0, 6) != "Gb/sec") return std::nullopt;
  return rate;
}

std::optional<std::uint64_t> parse_counter(std::string_view s) {
  s = trim(s);
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<std::string> read_attribute(const fs::path& path, std::string* why) {
  // POSIX read rather than ifstream: we want errno (EISDIR, EACCES, EINVAL from a driver) to say
  // why a read failed, and sysfs attributes are small.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (why) *why = std::strerror(errno);
    return std::nullopt;
  }
  std::string out;
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (why) *why = std::strerror(errno);
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > (1u << 20)) {  // no sysfs attribute is this large: not what we expect
      if (why) *why = "file larger than 1 MiB";
      ::close(fd);
      return std::nullopt;
    }
  }
  ::close(fd);
  return out;
}

bool natural_less(std::string_view a, std::string_view b) {
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && is_digit(a[ie])) ++ie;
      while (je < b.size() && is_digit(b[je])) ++je;
      std::string_view na = a.substr(i, ie - i), nb = b.substr(j, je - j);
      while (na.size() > 1 && na.front() == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb.front() == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

namespace {

Error read_error(const fs::path& path, const std::string& why) {
  return Error{"cannot read (" + why + ")", path.string()};
}

Error content_error(const fs::path& path, std::string_view content, std::string_view expected) {
  std::string shown(trim(content).substr(0, 40));
  return Error{"unexpected content '" + shown + "' (expected e.g. " + std::string(expected) + ")",
               path.string()};
}

Result<NumberedState> read_state_file(const fs::path& path, std::string_view example) {
  std::string why;
  auto text = read_attribute(path, &why);
  if (!text) return read_error(path, why);
  auto st = parse_numbered_state(*text);
  if (!st) return content_error(path, *text, example);
  return *st;
}

// Directory entries (following symlinks, as /sys/class/* entries are symlinks) in natural order.
Result<std::vector<fs::path>> list_dirs(const fs::path& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return Error{"cannot list directory (" + ec.message() + ")", dir.string()};
  std::vector<fs::path> out;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    if (fs::is_directory(it->path(), type_ec)) out.push_back(it->path());
  }
  if (ec) return Error{"cannot list directory (" + ec.message() + ")", dir.string()};
  std::sort(out.begin(), out.end(), [](const fs::path& x, const fs::path& y) {
    return natural_less(x.filename().native(), y.filename().native());
  });
  return out;
}

}  // namespace

std::vector<NicPart> nic_parts(const fs::path& root) {
  std::vector<NicPart> out;
  auto devices = list_dirs(root / "sys/class/infiniband");
  if (!devices) return out;
  const auto field = [](const fs::path& file) {
    const auto text = read_attribute(file);
    const std::string value(text ? trim(*text) : std::string_view{});
    return is_part_identifier(value) ? value : std::string();
  };
  for (const auto& dir : *devices) {
    NicPart n;
    n.device = dir.filename().string();
    if (!is_part_identifier(n.device)) continue;
    n.firmware = field(dir / "fw_ver");
    n.board_id = field(dir / "board_id");
    out.push_back(std::move(n));
  }
  return out;
}

const CounterSet& counters_for(std::string_view link_layer) {
  return link_layer == "Ethernet" ? kRoceCounters : kErrorCounters;
}

std::string_view fabric_name(std::string_view link_layer) {
  return link_layer == "Ethernet" ? "RoCE" : "InfiniBand";
}

bool is_fabric_hca(const std::string& hca, const std::vector<std::string>& devices) {
  return devices.empty() || std::any_of(devices.begin(), devices.end(), [&](const std::string& d) {
           return ::fnmatch(d.c_str(), hca.c_str(), 0) == 0;
         });
}

Result<Scan> scan_ports(const fs::path& root, std::string_view link_layer,
                        const std::vector<std::string>& devices) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return Error{"sysfs root does not exist or is not a directory (check --sysfs-root)",
                 root.string()};
  }
  const fs::path sys_class = root / "sys" / "class";
  if (!fs::is_directory(sys_class, ec)) {
    return Error{"not a sysfs tree: " + sys_class.string() + " is missing (check --sysfs-root)",
                 root.string()};
  }
  Scan scan;
  scan.class_dir = sys_class / "infiniband";
  scan.class_dir_present = fs::exists(scan.class_dir, ec);
  if (!scan.class_dir_present) return scan;

  VIGIL_TRY(auto hcas, list_dirs(scan.class_dir));
  for (const auto& hca_dir : hcas) {
    const std::string hca = hca_dir.filename().string();
    const bool listed = is_fabric_hca(hca, devices);
    const fs::path ports_dir = hca_dir / "ports";
    auto ports = list_dirs(ports_dir);
    if (!ports) {
      if (listed) scan.errors.push_back(ports.error());
      continue;
    }
    for (const auto& port_dir : *ports) {
      PortDir p{hca, port_dir.filename().string(), port_dir};
      if (!listed) {
        scan.ignored.push_back(p.id() + " (not in infiniband.devices)");
        continue;
      }
      const fs::path ll = port_dir / "link_layer";
      std::string why;
      auto layer = read_attribute(ll, &why);
      if (!layer) {
        scan.errors.push_back(read_error(ll, why));
        continue;
      }
      const std::string_view kind = trim(*layer);
      if (kind == link_layer) {
        scan.ports.push_back(std::move(p));
      } else {
        scan.ignored.push_back(p.id() + " (" + std::string(kind.empty() ? "empty" : kind) + ")");
      }
    }
  }
  return scan;
}

Result<PortStatus> read_port_status(const PortDir& port) {
  PortStatus st;
  VIGIL_TRY(st.state, read_state_file(port.dir / "state", "\"4: ACTIVE\""));
  VIGIL_TRY(st.phys_state, read_state_file(port.dir / "phys_state", "\"5: LinkUp\""));
  const fs::path rate_path = port.dir / "rate";
  std::string why;
  auto text = read_attribute(rate_path, &why);
  if (text) st.rate_gbps = parse_rate_gbps(*text);
  if (!st.rate_gbps && st.active()) {
    // An ACTIVE port always has a rate; a port without a trained link may legitimately not.
    if (!text) return read_error(rate_path, why);
    return content_error(rate_path, *text, "\"400 Gb/sec (4X NDR)\"");
  }
  return st;
}

Result<Counters> read_error_counters(const PortDir& port, const CounterSet& set) {
  Counters out;
  for (const auto& spec : set.specs) {
    const fs::path path = port.dir / std::string(set.dir) / std::string(spec.name);
    std::error_code ec;
    if (set.missing_ok && !fs::exists(path, ec) && !ec) continue;
    std::string why;
    auto text = read_attribute(path, &why);
    if (!text) return read_error(path, why);
    auto v = parse_counter(*text);
    if (!v) return content_error(path, *text, "\"0\"");
    out.emplace(std::string(spec.name), *v);
  }
  return out;
}

void merge_read_errors(CheckResult& r, const std::vector<Error>& errors) {
  if (errors.empty()) return;
  const std::string what =
      errors.front().to_string() +
      (errors.size() > 1 ? " (+" + std::to_string(errors.size() - 1) + " more unreadable)" : "");
  if (r.status == Status::kFail) {
    r.message += "; also " + what;
  } else {
    r.status = Status::kError;
    r.message = what;
    r.fault_code = std::string(kFaultSysfsUnreadable);
  }
}

std::vector<std::string> listed_hca_ports(const fs::path& root, std::string_view link_layer,
                                          const std::vector<std::string>& devices) {
  std::vector<std::string> out;
  if (devices.empty()) return out;
  auto scan = scan_ports(root, link_layer, devices);
  if (!scan) return out;
  for (const PortDir& p : scan->ports) out.push_back(p.hca + ":" + p.port);
  return out;
}

}  // namespace vigil::ib
