// host_mounts: are the filesystems the SKU file lists mounted, of their type, writable when they
// must be, answering, and with free space (host_mounts.h for the table; docs/checks-host.md)?
// Peers check the same: Soperator and LBNL NHC's check_fs_mount_rw (mounted, read-write), GPUd
// #1189 and Verda (free space). A job that lands on a node without its filesystem fails at once
// or writes where it should not.
//   - Each path is asked first with `stat -f` (coreutils; statfs(2)) in a child with a 5 s limit:
//     it mounts an automount (autofs) and says whether the filesystem answers. A hang is an error,
//     never a fail: a storage server that stops answering stops every node at once, and draining
//     the fleet would not help (the breaker would stop it anyway). "Transport endpoint is not
//     connected" (ENOTCONN: a FUSE or Lustre client cut off) and "Stale file handle" (ESTALE:
//     NFS) are this node's mount broken: fail. Other errors (EACCES under root squash): error.
//   - Then the mount table: the last mount on the path (a later one covers an earlier one); none
//     fails (VIGIL-MOUNT-MISSING), another type fails (VIGIL-MOUNT-TYPE), "ro" where the file
//     says rw fails (VIGIL-MOUNT-READONLY).
//   - Free space (`stat -f`'s available blocks over total) below min_free_percent fails.
// The table is the check's own mount namespace's (<proc_root>/self/mountinfo): under Slurm, the
// hook's, which is what the node's jobs see; in a Slurm-on-Kubernetes slurmd pod, the pod's.
#include "host/host_mounts.h"

#include <algorithm>
#include <sstream>

#include "check_factories.h"
#include "vigil/base/files.h"
#include "vigil/base/process.h"
#include "vigil/base/strings.h"
#include "vigil/checks/findings.h"

namespace vigil {
namespace mounts {

namespace {

// "\040" -> " ", as the kernel's seq_file escaping writes it (fs/proc_namespace.c).
std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto octal = [&](size_t at) { return s[at] >= '0' && s[at] <= '7'; };
    if (s[i] == '\\' && i + 3 < s.size() && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool has_ro(const std::string& options) {
  std::istringstream in(options);
  for (std::string o; std::getline(in, o, ',');)
    if (o == "ro") return true;
  return false;
}

}  // namespace

std::vector<Mount> parse_mountinfo(std::string_view text) {
  std::vector<Mount> out;
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream pre(line.substr(0, dash)), post(line.substr(dash + 3));
    std::string id, parent, dev, root, point, options, fstype, source, super;
    if (!(pre >> id >> parent >> dev >> root >> point >> options)) continue;
    if (!(post >> fstype >> source)) continue;
    post >> super;
    out.push_back({unescape(point), fstype, unescape(source), has_ro(options) || has_ro(super)});
  }
  return out;
}

}  // namespace mounts

namespace {

constexpr std::string_view kName = "host_mounts";

// What `stat -f` said of a path: its free percent, or a finding.
struct Probe {
  std::optional<double> free_percent;
  std::optional<Status> status;  // set when the path did not answer well
  std::string why;
  std::string fault;
};

Probe probe(const std::string& path, const LaunchResult& r) {
  if (r.timed_out)
    return {{},
            Status::kError,
            path + " did not answer statfs within 5 s (a hung server?)",
            "VIGIL-MOUNT-HUNG"};
  const std::string err = std::string(trim(r.err));
  if (r.exit_code == 127 && r.term_signal == 0)
    return {{}, Status::kError, "stat could not run: " + err, "VIGIL-MOUNT-QUERY"};
  if (r.exit_code != 0 || r.term_signal != 0) {
    for (const char* broken : {"Transport endpoint is not connected", "Stale file handle"})
      if (err.find(broken) != std::string::npos)
        return {{}, Status::kFail, path + ": " + broken, "VIGIL-MOUNT-BROKEN"};
    if (err.find("No such file or directory") != std::string::npos) return {};  // table says
    return {{}, Status::kError, path + ": " + err.substr(0, 160), "VIGIL-MOUNT-QUERY"};
  }
  double total = 0, avail = 0;
  std::istringstream in(r.out);
  if (!(in >> total >> avail) || total <= 0) return {};
  return {100.0 * avail / total, {}, "", ""};
}

// Every path asked at once (8 at a time), so that hung mounts cost 5 s, not 5 s each.
std::vector<Probe> probe_all(const CheckContext& ctx) {
  std::vector<std::vector<std::string>> argvs;
  for (const MountSpec& m : ctx.sku->mounts)
    argvs.push_back({ctx.host.stat, "-f", "-c", "%b %a", "--", m.path});
  LaunchOptions o;
  o.timeout = std::chrono::seconds(5);
  o.env = {{"LC_ALL", "C"}};  // strerror's English words, matched above
  const auto ran = run_commands(argvs, 8, o);
  std::vector<Probe> out;
  for (size_t i = 0; i < ran.size(); ++i) out.push_back(probe(ctx.sku->mounts[i].path, ran[i]));
  return out;
}

class HostMountsCheck final : public Check {
 public:
  std::string_view name() const override { return kName; }
  Applies applies(const CheckContext& ctx) const override {
    if (!ctx.sku || ctx.sku->mounts.empty())
      return {false, ctx.sku ? "the SKU file lists no mounts" : "SKU unknown: no mounts listed"};
    return {};
  }

  CheckResult run(const CheckContext& ctx) override {
    const std::vector<Probe> probes = probe_all(ctx);
    const std::string table_path = ctx.proc_root + "/self/mountinfo";
    const auto text = read_whole_file(table_path);
    if (!text) return error(kName, "cannot read " + table_path, "VIGIL-MOUNT-QUERY");
    const auto table = mounts::parse_mountinfo(*text);
    CheckResult r;
    r.check = std::string(kName);
    Findings found;
    std::vector<std::string> errors;  // paths Vigil could not judge: error unless a fail stands
    std::string error_fault;          // the first one's
    for (size_t i = 0; i < probes.size(); ++i) {
      const MountSpec& want = ctx.sku->mounts[i];
      const Probe& p = probes[i];
      const mounts::Mount* have = nullptr;
      for (const auto& m : table)
        if (m.point == want.path) have = &m;
      add_measurement(r, ctx, "mount_present", have ? 1 : 0, "bool", {}, want.path);
      if (!have) {
        found.add(Status::kFail, want.path + " is not mounted", "VIGIL-MOUNT-MISSING");
        continue;
      }
      if (!want.fstype.empty() && have->fstype != want.fstype)
        found.add(Status::kFail, want.path + " is " + have->fstype + ", not " + want.fstype,
                  "VIGIL-MOUNT-TYPE");
      if (want.rw && have->read_only)
        found.add(Status::kFail, want.path + " is read-only", "VIGIL-MOUNT-READONLY");
      if (p.status == Status::kError) {
        if (errors.empty()) error_fault = p.fault;
        errors.push_back(p.why);
      } else if (p.status)
        found.add(*p.status, p.why, p.fault);
      if (p.free_percent) {
        Measurement& m = add_measurement(r, ctx, "mount_free_percent", *p.free_percent, "percent",
                                         {}, want.path);
        if (want.min_free_percent)
          default_threshold(m, Op::kGe, *want.min_free_percent, {}, "the SKU file's mounts");
      }
    }
    if (found.conclude(r, "VIGIL"))  // mount_free_percent: VIGIL-MOUNT-FREE-PERCENT
      r.message = std::to_string(ctx.sku->mounts.size()) + " mount" +
                  (ctx.sku->mounts.size() == 1 ? "" : "s") + " in place";
    add_unjudged(r, errors, error_fault);
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_host_mounts_check() { return std::make_unique<HostMountsCheck>(); }

}  // namespace vigil
