// make_scontrol_api, nodes_from_scontrol, load_leaf_switches_scontrol: see scontrol.h.
#include <charconv>
#include <cstdlib>
#include <ctime>
#include <map>
#include <regex>
#include <sstream>

#include "node_update.h"
#include "topology_text.h"
#include "vigil/base/process.h"
#include "vigil/base/strings.h"
#include "vigil/slurm/scontrol.h"

namespace vigil::slurm {

namespace {

constexpr auto kTimeout = std::chrono::seconds(15);

// How every scontrol here runs. SLURM_TIME_FORMAT=standard: a site's setting in the hook's
// environment would change the "[user@time]" stamp nodes_from_scontrol reads reason_time from.
// PATH: slurmd gives a hook a near-empty environment, and sites install Slurm under /usr,
// /usr/local or /opt/slurm: those follow the caller's own PATH.
LaunchOptions scontrol_options(const std::string& conf) {
  LaunchOptions o;
  o.timeout = kTimeout;
  if (!conf.empty()) o.env.emplace_back("SLURM_CONF", conf);
  o.env.emplace_back("SLURM_TIME_FORMAT", "standard");
  const char* path = std::getenv("PATH");
  o.env.emplace_back("PATH", std::string(path && *path ? path : "/usr/bin:/bin") +
                                 ":/usr/local/bin:/usr/bin:/bin:/opt/slurm/bin");
  return o;
}

// The value of `key` ("State") in a one-line record: up to the next blank. "" when absent.
std::string field(const std::string& line, const std::string& key) {
  const std::string tag = key + "=";
  std::size_t at = line.rfind(tag, 0) == 0 ? 0 : line.find(" " + tag);
  if (at == std::string::npos) return "";
  if (at != 0) ++at;
  const std::size_t start = at + tag.size();
  const std::size_t end = line.find(' ', start);
  return line.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// "IDLE+DRAIN", "DOWN*+DRAIN+MAINT", "MIXED~": base state, its suffix marks and the flags.
void parse_state(const std::string& text, SlurmNodeInfo& n) {
  std::vector<std::string> parts;
  std::stringstream ss(text);
  for (std::string p; std::getline(ss, p, '+');) parts.push_back(p);
  if (parts.empty()) return;
  std::string base = parts[0];
  // Suffix marks (scontrol/sinfo): * not responding, ~ powered off, # powering up, % powering
  // down, ! pending power down, $ maintenance reservation, @ pending reboot, ^ rebooting, -
  // planned.
  while (!base.empty() && std::string("*~#%!$@^-").find(base.back()) != std::string::npos) {
    if (base.back() == '*') n.not_responding = true;
    if (base.back() == '@' || base.back() == '^') n.reboot_pending = true;
    base.pop_back();
  }
  n.state = base;
  n.down = base == "DOWN";
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string& f = parts[i];
    if (f == "DRAIN") n.drain = true;
    if (f == "FAIL") n.fail = true;
    if (f == "MAINT" || f == "MAINTENANCE") n.maint = true;  // scontrol prints MAINTENANCE
    if (f == "RESERVED") n.reserved = true;
    if (f == "NOT_RESPONDING") n.not_responding = true;
    if (f == "COMPLETING") n.completing = true;
    if (f == "REBOOT_REQUESTED" || f == "REBOOT_ISSUED") n.reboot_pending = true;
  }
}

// "[root@2026-11-26T05:00:00]" at the end of the reason, in scontrol's (local) time.
std::int64_t local_time(const std::string& text) {
  std::tm tm{};
  if (::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return 0;
  tm.tm_isdst = -1;
  const std::time_t t = std::mktime(&tm);
  return t < 0 ? 0 : static_cast<std::int64_t>(t);
}

class ScontrolApi final : public SlurmApi {
 public:
  explicit ScontrolApi(std::string conf) : conf_(std::move(conf)) {}

  Result<std::vector<SlurmNodeInfo>> load_nodes() override {
    VIGIL_TRY(auto out, scontrol({"-o", "show", "node"}, "load_nodes"));
    VIGIL_TRY(auto nodes, nodes_from_scontrol(out));
    mark_holds(nodes, reservation_names());
    return nodes;
  }

  Result<std::vector<SlurmNodeInfo>> load_nodes_named(
      const std::vector<std::string>& nodes) override {
    if (auto ok = validate_names(nodes, "load_nodes_named"); !ok.ok()) return ok.error();
    std::vector<SlurmNodeInfo> out;
    for (const std::string& name : nodes) {  // the hook asks for its own node only
      auto r = run({"-o", "show", "node", name});
      if (!r.ok()) return r.error();
      if (r->exit_code != 0 &&
          (r->err + r->out).find("Node " + name + " not found") != std::string::npos)
        continue;
      if (r->exit_code != 0 || r->timed_out) return failed(*r, "show node " + name);
      VIGIL_TRY(auto found, nodes_from_scontrol(r->out));
      for (auto& n : found)
        if (n.name == name) out.push_back(std::move(n));
    }
    if (!out.empty()) mark_holds(out, reservation_names());
    return out;
  }

  VoidResult drain(const std::vector<std::string>& nodes, const std::string& reason) override {
    if (auto ok = validate_names(nodes, "drain"); !ok.ok()) return ok.error();
    if (auto ok = validate_reason(reason); !ok.ok()) return ok.error();
    return update(nodes, {"State=DRAIN", "Reason=" + reason}, "drain");
  }

  // vigil-check never lifts a drain (the drainer does, through libslurm or slurmrestd), and
  // scontrol's node updates are not one behaviour across releases: on 24.11, slurm_client_test's
  // drain, DOWN, drain again, undrain through scontrol left the node IDLE, where libslurm's and
  // slurmrestd's UNDRAIN leave it DOWN. So this backend refuses rather than risk resuming a DOWN
  // node. (The hook drains only nodes that are not DOWN, FAIL or MAINT.)
  VoidResult undrain(const std::vector<std::string>& nodes) override {
    if (auto ok = validate_names(nodes, "undrain"); !ok.ok()) return ok.error();
    return Error{
        "the scontrol backend does not lift drains (vigil-check never does; the drainer "
        "uses libslurm or slurmrestd)",
        "undrain"};
  }

  // `scontrol reboot reason=R a,b`: no public libslurm call asks for a reboot (scontrol sends
  // REQUEST_REBOOT_NODES itself, SchedMD/slurm src/scontrol/reboot_node.c), so the libslurm
  // backend comes here too. Neither ASAP nor nextstate: measured on Slurm 22.05 (docs/repair.md),
  // ASAP and nextstate=RESUME lift the drain once the node is back, and nextstate=DOWN clears it
  // too; plain reboot keeps the node DRAINED with REASON, which is what keeps it Vigil's.
  VoidResult reboot(const std::vector<std::string>& nodes, const std::string& reason) override {
    if (nodes.empty()) return ok_result();
    if (auto ok = validate_names(nodes, "reboot"); !ok.ok()) return ok.error();
    if (auto ok = validate_reason(reason); !ok.ok()) return ok.error();
    auto r = run({"reboot", "reason=" + reason, comma_list(nodes)});
    if (!r.ok()) return r.error();
    if (r->exit_code != 0 || r->timed_out) return failed(*r, "reboot");
    return ok_result();
  }

  Result<int64_t> resume_timeout_s() override {
    VIGIL_TRY(auto out, scontrol({"show", "config"}, "show config"));
    const std::string v = config_from_scontrol(out)["ResumeTimeout"];  // "60 sec"
    int64_t t = -1;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), t);
    if (ec != std::errc() || t < 0)
      return Error{"no ResumeTimeout in `scontrol show config`", "ResumeTimeout"};
    return t;
  }

 private:
  // `scontrol -o show reservation`: one line per reservation ("No reservations in the system"
  // when none); unreadable: none (slurm_api.h vigil_hold).
  std::vector<std::string> reservation_names() {
    std::vector<std::string> names;
    auto r = run({"-o", "show", "reservation"});
    if (!r.ok() || r->exit_code != 0) return names;
    static const std::string kKey = "ReservationName=";
    std::istringstream lines(r->out);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind(kKey, 0) != 0) continue;
      names.push_back(line.substr(kKey.size(), line.find(' ') - kKey.size()));
    }
    return names;
  }

  Result<LaunchResult> run(std::vector<std::string> args) {
    LaunchOptions o = scontrol_options(conf_);
    args.insert(args.begin(), "scontrol");
    auto r = run_command(args, o);
    if (!r.ok()) return Error{r.error().message, "scontrol"};
    return r;
  }
  static Error failed(const LaunchResult& r, const std::string& what) {
    const std::string why = r.timed_out ? "timed out after 15 s" : tail_lines(r.err, 3);
    return Error{"`scontrol " + what + "` failed (exit " + std::to_string(shell_status(r)) +
                     "): " + why + " (is slurmctld running and reachable from this host?)",
                 "scontrol"};
  }
  Result<std::string> scontrol(std::vector<std::string> args, const std::string& what) {
    auto r = run(args);
    if (!r.ok()) return r.error();
    if (r->exit_code != 0 || r->timed_out) return failed(*r, what);
    return r->out;
  }
  static std::string comma_list(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
    return out;
  }
  // slurmctld refuses a whole update naming one unknown node, so the known ones are applied
  // and the unknown ones named, as the other backends do (node_update.h).
  VoidResult update(const std::vector<std::string>& nodes, std::vector<std::string> set,
                    const std::string& what) {
    if (nodes.empty()) return ok_result();
    VIGIL_TRY(auto table, load_nodes_named(nodes));  // one `show node` per name, not the table
    const KnownSplit split = split_known(nodes, table);
    if (!split.known.empty()) {
      const std::string names = comma_list(split.known);
      std::vector<std::string> args = {"update", "NodeName=" + names};
      args.insert(args.end(), set.begin(), set.end());
      auto r = scontrol(args, "update NodeName=" + names + " (" + what + ")");
      if (!r.ok()) return r.error();
    }
    if (!split.unknown.empty())
      return unknown_nodes_error(split, comma_list(split.unknown),
                                 "scontrol update (" + what + ")");
    return ok_result();
  }

  std::string conf_;
};

}  // namespace

std::unique_ptr<SlurmApi> make_scontrol_api(const std::string& conf_path) {
  return std::make_unique<ScontrolApi>(conf_path);
}

std::map<std::string, std::string> config_from_scontrol(std::string_view text) {
  std::map<std::string, std::string> out;
  std::stringstream ss{std::string(text)};
  for (std::string line; std::getline(ss, line);) {
    const size_t eq = line.find(" = ");
    if (eq == std::string::npos) continue;
    std::string key(trim(std::string_view(line).substr(0, eq)));
    std::string value(trim(std::string_view(line).substr(eq + 3)));
    if (value == "(null)") value.clear();
    if (const size_t bracket = key.find('['); bracket != std::string::npos) {
      key.resize(bracket);  // Prolog[0], Prolog[1]: one list
      std::string& all = out[key];
      if (!value.empty()) all += (all.empty() ? "" : ",") + value;
      continue;
    }
    out[key] = value;
  }
  return out;
}

Result<std::vector<SlurmNodeInfo>> nodes_from_scontrol(const std::string& text) {
  // The reason runs to the bracket scontrol appends; fields may follow it in newer releases.
  static const std::regex kReason(
      R"re( Reason=(.*) \[([^\]@ ]+)@(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\])re");
  std::vector<SlurmNodeInfo> out;
  std::istringstream lines(text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    SlurmNodeInfo n;
    n.name = field(line, "NodeName");
    if (n.name.empty())
      return Error{"line " + std::to_string(number) + " has no NodeName=: " + line.substr(0, 80),
                   "scontrol -o show node"};
    parse_state(field(line, "State"), n);
    n.address = field(line, "NodeAddr");
    n.hostname = field(line, "NodeHostName");
    n.gres = field(line, "Gres");
    n.features = split_feature_list(field(line, "ActiveFeatures"));
    n.boot_time = local_time(field(line, "BootTime"));
    std::stringstream parts(field(line, "Partitions"));
    for (std::string p; std::getline(parts, p, ',');)
      if (!p.empty() && p != "(null)") n.partitions.push_back(p);
    std::smatch m;
    if (std::regex_search(line, m, kReason)) {
      n.reason = m[1];
      n.reason_time = local_time(m[3]);
    } else if (std::string r = field(line, "Reason"); !r.empty() && r != "(null)") {
      n.reason = r;  // no bracket: a one-word reason, time unknown
    }
    out.push_back(std::move(n));
  }
  return out;
}

Result<std::map<std::string, std::string>> load_leaf_switches_scontrol(
    const std::string& conf_path) {
  constexpr const char* kWhere = "load_leaf_switches";
  const LaunchOptions o = scontrol_options(conf_path);
  auto ask = [&](std::vector<std::string> args) -> Result<std::string> {
    args.insert(args.begin(), "scontrol");
    auto r = run_command(args, o);
    if (!r.ok()) return Error{r.error().message, kWhere};
    if (r->exit_code != 0 || r->timed_out)
      return Error{"`scontrol " + args[1] + " " + args[2] + "` failed (exit " +
                       std::to_string(shell_status(*r)) +
                       "): " + (r->timed_out ? "timed out" : tail_lines(r->err, 3)) +
                       " (is slurmctld running and reachable from this host?)",
                   kWhere};
    return r->out;
  };
  VIGIL_TRY(auto text, ask({"show", "topology"}));
  return leaves_of(
      parse_switch_lines(text),
      [&](const std::string& expr) -> Result<std::vector<std::string>> {
        if (expr.empty() || expr == "(null)") return std::vector<std::string>{};
        VIGIL_TRY(auto names, ask({"show", "hostnames", expr}));
        std::vector<std::string> v;
        std::istringstream in(names);
        for (std::string s; in >> s;) v.push_back(s);
        return v;
      },
      kWhere);
}

}  // namespace vigil::slurm
