// nvlink_imex: on a multi-node NVLink SKU (GB200 / GB300 NVL72: `nvlink.imex: true`), is the
// node's IMEX daemon ready, and does the node have IMEX channels?
//
// Sources:
//   - NVIDIA's IMEX guide (docs.nvidia.com/multi-node-nvlink-systems/imex-guide): the
//     nvidia-imex service shares GPU memory across the compute trays of an NVLink domain; CUDA's
//     fabric memory handles need it, and a job reaches it through a channel device
//     /dev/nvidia-caps-imex-channels/channelN, which is not created by default
//     ("imexchannels.html": the driver option NVreg_CreateImexChannel0=1, or per job by NVIDIA's
//     DRA driver for GPUs on Kubernetes).
//   - NCCL src/mnnvl.cc: when a fabric handle cannot be made or imported, NCCL fails the job
//     ("MNNVL ... is available but not working on this system. Check the IMEX configuration").
//   - How to ask the daemon without the network: DCGM's DcgmImexManager.cpp runs
//     `nvidia-imex-ctl -q`, whose output is one word: INITIALIZING, STARTING_AUTH_SERVER,
//     WAITING_FOR_PEERS, WAITING_FOR_RECOVERY, INIT_GPU, READY, SHUTTING_DOWN or UNAVAILABLE;
//     "Failed to read node configuration file" means IMEX is not configured. The numbers of
//     imex_daemon_state are DCGM's (dcgm_fields.h DCGM_FI_IMEX_DAEMON_STATUS: 0..7 in that order).
//
// Verdicts (Vigil's choices, docs/checks-nvml.md):
//   READY: pass. The starting and waiting states: warn (the daemon may be waiting for a peer
//   tray, which is not this node's fault). SHUTTING_DOWN / UNAVAILABLE: a fault only where the
//   site runs nvidia-imex as a resident service (SKU `nvlink.imex_resident: true`): warn within
//   ctx.fabric_wait.grace after boot, fail after it (VIGIL-IMEX-DOWN: every multi-node NVLink job
//   fails here). Elsewhere the daemon may run per job (a Slurm prolog, NVIDIA's DRA driver's
//   ComputeDomains) and none between jobs is normal: warn, never fail (DCGM's health watch, too,
//   counts UNAVAILABLE as healthy: DcgmHealthWatch.cpp). No nvidia-imex-ctl, not configured, a
//   failed or timed-out query, or an answer Vigil does not know: error, never fail (a setup
//   problem, not a sick node).
//   Channels: `imex_channels` is a figure; a site whose channels are static may bound it in its
//   SKU file (>= 1); under the DRA driver there are none between jobs.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <string>

#include "check_factories.h"
#include "vigil/base/process.h"
#include "vigil/base/strings.h"

namespace vigil {
namespace {

constexpr std::string_view kName = "nvlink_imex";
constexpr const char* kFaultDown = "VIGIL-IMEX-DOWN";
constexpr const char* kFaultPending = "VIGIL-IMEX-PENDING";
constexpr const char* kFaultSetup = "VIGIL-IMEX-SETUP";

// nvidia-imex-ctl -q's words, in DCGM's numbering (the index).
constexpr std::array<std::string_view, 8> kStates = {
    "INITIALIZING", "STARTING_AUTH_SERVER", "WAITING_FOR_PEERS", "WAITING_FOR_RECOVERY", "INIT_GPU",
    "READY",        "SHUTTING_DOWN",        "UNAVAILABLE"};
constexpr size_t kReady = 5;
constexpr size_t kShuttingDown = 6;

// The directories DCGM searches (DcgmImexManager.cpp GetImexCtlSearchPaths), but its own.
constexpr const char* kSearched[] = {"/usr/bin", "/usr/local/bin", "/opt/nvidia/imex/bin",
                                     "/usr/local/nvidia/imex/bin"};

std::string find_imex_ctl(const CheckContext& ctx) {
  if (!ctx.imex.ctl.empty()) return ctx.imex.ctl;
  for (const char* dir : kSearched) {
    const std::string p = std::string(dir) + "/nvidia-imex-ctl";
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

int count_channels(const CheckContext& ctx) {
  namespace fs = std::filesystem;
  std::error_code ec;
  int n = 0;
  for (fs::directory_iterator it(fs::path(ctx.imex.dev_root) / "nvidia-caps-imex-channels", ec),
       end;
       !ec && it != end; it.increment(ec))
    n += it->path().filename().string().starts_with("channel");
  return n;
}

class NvlinkImexCheck final : public Check {
 public:
  std::string_view name() const override { return kName; }
  Applies applies(const CheckContext& ctx) const override {
    if (!ctx.sku || !ctx.sku->nvlink.imex)
      return {false, "SKU has no multi-node NVLink domain (nvlink.imex)"};
    return {};
  }

  CheckResult run(const CheckContext& ctx) override {
    const std::string ctl = find_imex_ctl(ctx);
    if (ctl.empty())
      return error(kName,
                   "nvidia-imex-ctl not found in /usr/bin, /usr/local/bin, /opt/nvidia/imex/bin "
                   "or /usr/local/nvidia/imex/bin (IMEX not installed, or not visible to this "
                   "check: --imex-ctl PATH)",
                   kFaultSetup);
    LaunchOptions opts;
    opts.timeout = std::chrono::seconds(5);
    auto ran = run_command({ctl, "-q"}, opts);
    if (!ran) return error(kName, ctl + " -q: " + ran.error().to_string(), kFaultSetup);
    const std::string out(trim(ran->out + ran->err));
    if (out.find("Failed to read node configuration file") != std::string::npos)
      return error(kName, "IMEX is not configured (" + ctl + ": " + out + ")", kFaultSetup);
    if (ran->timed_out || ran->exit_code != 0)
      return error(kName,
                   ctl + " -q " + (ran->timed_out ? "timed out" : "failed") +
                       (out.empty() ? "" : ": " + out.substr(0, 200)),
                   kFaultSetup);
    const auto it = std::find(kStates.begin(), kStates.end(), out);
    if (it == kStates.end())
      return error(kName, ctl + " -q answered '" + out.substr(0, 80) + "', unknown to Vigil",
                   kFaultSetup);
    const size_t state = static_cast<size_t>(it - kStates.begin());

    CheckResult r;
    r.check = std::string(kName);
    add_measurement(r, ctx, "imex_daemon_state", static_cast<double>(state), "enum");
    const int channels = count_channels(ctx);
    add_measurement(r, ctx, "imex_channels", channels, "count");
    finalize(r, "VIGIL-IMEX");  // a SKU bound on imex_channels, if any
    const std::string said = "IMEX daemon " + std::string(*it);
    if (state == kReady) {
      if (r.status == Status::kPass)
        r.message = said + ", " + std::to_string(channels) + " IMEX channel(s)";
      return r;
    }
    auto worse = [&](Status s, std::string text, const char* code) {
      if (r.status != Status::kPass && combine(r.status, s) == r.status) return;
      r.status = s;
      r.message = std::move(text);
      r.fault_code = code;
    };
    if (state >= kShuttingDown && !ctx.sku->nvlink.imex_resident) {
      worse(Status::kWarn,
            said + ": multi-node NVLink jobs fail here unless the job starts its own IMEX daemon",
            kFaultPending);
    } else if (state >= kShuttingDown) {
      const std::optional<double> up = uptime_s(ctx);
      const double grace = std::chrono::duration<double>(ctx.fabric_wait.grace).count();
      if (up && *up >= grace)
        worse(Status::kFail, said + ": multi-node NVLink jobs fail on this node", kFaultDown);
      else
        worse(Status::kWarn,
              said + " " + (up ? std::to_string(static_cast<int>(*up)) : "?") + " s after boot",
              kFaultPending);
    } else {
      worse(Status::kWarn, said + ": multi-node NVLink jobs wait until it is READY", kFaultPending);
    }
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_nvlink_imex_check() { return std::make_unique<NvlinkImexCheck>(); }

}  // namespace vigil
