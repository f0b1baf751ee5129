// ib_port: every InfiniBand port of the node is ACTIVE, physically LinkUp and at the SKU's rate,
// and the node has as many active IB ports as its SKU expects; on a SKU whose fabric is RoCE
// (infiniband.link_layer: Ethernet), the same of its RoCE ports. Reads sysfs only (see
// ib_sysfs.h and docs/checks-ib.md).
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "check_factories.h"
#include "ib/ib_sysfs.h"
#include "vigil/checks/findings.h"

namespace vigil {
namespace {

constexpr std::string_view kName = "ib_port";
constexpr std::string_view kFaultPrefix = "VIGIL-IB";
constexpr const char* kFaultPortsMissing = "VIGIL-IB-PORTS-MISSING";
constexpr const char* kFaultPortDown = "VIGIL-IB-PORT-DOWN";
constexpr const char* kFaultPortInactive = "VIGIL-IB-PORT-INACTIVE";
constexpr const char* kFaultRate = "VIGIL-IB-RATE-DEGRADED";

std::string fmt(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// What the SKU asks of the node's ports.
struct Want {
  int ports = 0;         // active ports; 0: no expectation
  double rate_gbps = 0;  // of each active port; 0: not judged
  std::string kind;      // "IB" or "RoCE", for messages
};

struct Row {
  const ib::PortDir* dir;
  ib::PortStatus st;
};

// The SKU has an IB fabric but the node shows none: HCAs missing or driver not loaded.
// That is a hardware/host finding (fail), not a setup problem of Vigil.
CheckResult ports_missing(const CheckContext& ctx, const ib::Scan& scan, const Want& want,
                          const std::string& fabric) {
  CheckResult r;
  r.check = std::string(kName);
  Measurement& m = add_measurement(r, ctx, "active_ports", 0, "count");
  default_threshold(m, Op::kGe, want.ports);
  r.message = "0/" + std::to_string(want.ports) + " " + want.kind + " ports (" +
              (scan.class_dir_present ? "no " + fabric + " port in " : "no ") +
              scan.class_dir.string() + ")";
  r.fault_code = kFaultPortsMissing;
  finalize(r, kFaultPrefix);
  return r;
}

// Adds port_active, port_link_up and port_rate of one port, and its problems to `problems`.
void judge_port(CheckResult& r, const CheckContext& ctx, const Row& row, bool enough_active,
                double want_rate, Findings& problems) {
  const std::string id = row.dir->id();
  // add_measurement appends to a vector: take references only after all three are added.
  const size_t first = r.measurements.size();
  add_measurement(r, ctx, "port_active", row.st.active() ? 1 : 0, "bool", {}, id);
  add_measurement(r, ctx, "port_link_up", row.st.link_up() ? 1 : 0, "bool", {}, id);
  // A port without a trained link has no meaningful rate: report 0, judge only active ones.
  const double rate = row.st.active() ? row.st.rate_gbps.value_or(0) : 0;
  add_measurement(r, ctx, "port_rate", rate, "Gb/s", {}, id);
  Measurement& act = r.measurements[first];
  Measurement& up = r.measurements[first + 1];
  Measurement& rt = r.measurements[first + 2];
  default_threshold(act, Op::kGe, 1);
  default_threshold(up, Op::kGe, 1);
  if (enough_active && row.st.disabled()) {
    // Also overrides a SKU file's "port_active >= 1": the SKU's port count is what decides
    // whether a deliberately disabled port takes the node out.
    act.threshold = built_in_threshold(Op::kGe, 0, 1, "bool");
    up.threshold = built_in_threshold(Op::kGe, 0, 1, "bool");
  }
  if (want_rate > 0) default_threshold(rt, Op::kGe, want_rate);
  if (!row.st.active()) rt.threshold.reset();  // no trained link, no rate to judge

  if (Status s = up.status(); s != Status::kPass) {
    problems.add(s, id + " down", kFaultPortDown);
  } else if (Status s2 = act.status(); s2 != Status::kPass) {
    problems.add(s2, id + " " + row.st.state.text, kFaultPortInactive);
  }
  if (Status s = rt.status(); s != Status::kPass && row.st.active()) {
    const double bound = !rt.threshold                              ? want_rate
                         : s == Status::kWarn && rt.threshold->warn ? *rt.threshold->warn
                                                                    : rt.threshold->fail;
    problems.add(s, id + " rate " + fmt(rate) + "<" + fmt(bound) + "Gb/s", kFaultRate);
  }
}

// Adds active_ports against the SKU's count; a shortfall goes first in `problems`.
void judge_active_count(CheckResult& r, const CheckContext& ctx, int active, int unknown,
                        const ib::Scan& scan, const Want& want, Findings& problems) {
  Measurement& total = add_measurement(r, ctx, "active_ports", active, "count");
  if (want.ports > 0) default_threshold(total, Op::kGe, want.ports);
  // Ports whose files could not be read are unknown, not down: a shortfall they could explain
  // is left unjudged (the check then reports error for the unreadable file, never a false fail).
  if (unknown > 0 && total.threshold && active + unknown >= total.threshold->fail) {
    total.threshold.reset();
  }
  if (Status s = total.status(); s != Status::kPass) {
    const int present = static_cast<int>(scan.ports.size());
    const int needed = static_cast<int>(std::ceil(total.threshold->fail));
    // Per-port problems already explain a shortfall among present ports; name the count only
    // when ports are missing altogether.
    if (present < needed || problems.empty()) {
      problems.prepend(s,
                       std::to_string(active) + "/" + std::to_string(needed) + " " + want.kind +
                           " ports active (" + std::to_string(present) + " present)",
                       present < needed ? kFaultPortsMissing : kFaultPortDown);
    }
  }
}

// A pass's message: what is active, and the ports of another link layer that were ignored.
std::string pass_message(int active, size_t ports, const ib::Scan& scan, const Want& want) {
  std::string m =
      std::to_string(active) + "/" + std::to_string(ports) + " " + want.kind + " ports active";
  if (want.rate_gbps > 0) m += " at >= " + fmt(want.rate_gbps) + " Gb/s";
  if (!scan.ignored.empty()) {
    m += "; ignored non-" + want.kind + ": " + scan.ignored.front();
    if (scan.ignored.size() > 1) m += " +" + std::to_string(scan.ignored.size() - 1);
  }
  return m;
}

class IbPortCheck final : public Check {
 public:
  std::string_view name() const override { return kName; }
  Applies applies(const CheckContext&) const override {
    return {};  // Whether IB exists is decided from sysfs in run() (skipped when none).
  }

  CheckResult run(const CheckContext& ctx) override {
    const std::string layer = ctx.sku ? ctx.sku->infiniband.link_layer : "InfiniBand";
    const std::string fabric(ib::fabric_name(layer));
    const Want want{ctx.sku ? ctx.sku->infiniband.ports : 0,
                    ctx.sku ? ctx.sku->infiniband.rate_gbps : 0,
                    layer == "Ethernet" ? "RoCE" : "IB"};
    auto scan = ib::scan_ports(ctx.sysfs_root, layer,
                               ctx.sku ? ctx.sku->infiniband.devices : std::vector<std::string>{});
    if (!scan)
      return error(kName, scan.error().to_string(), std::string(ib::kFaultSysfsUnreadable));
    if (scan->ports.empty() && scan->errors.empty()) {
      if (want.ports <= 0) return skipped(kName, "no " + fabric + " ports");
      return ports_missing(ctx, *scan, want, fabric);
    }

    std::vector<Row> rows;
    std::vector<Error> errors = scan->errors;
    for (const auto& p : scan->ports) {
      auto st = ib::read_port_status(p);
      if (!st) {
        errors.push_back(st.error());
        continue;
      }
      rows.push_back({&p, *st});
    }
    int active = 0;
    for (const auto& row : rows) active += row.st.active() ? 1 : 0;
    // A port an admin disabled on purpose (phys_state "3: Disabled", e.g. an unused storage
    // port) is only a warning while the node still has the SKU's number of active ports. Any
    // other down state (Polling: no cable or a dead peer) fails: counts alone cannot tell a
    // compute port from a storage port (DGX H100/H200/B200 have 8 compute + 4 storage
    // ConnectX-7 ports, all possibly InfiniBand).
    const bool enough_active = want.ports > 0 && active >= want.ports;

    CheckResult r;
    r.check = std::string(kName);
    Findings problems;
    for (const auto& row : rows) judge_port(r, ctx, row, enough_active, want.rate_gbps, problems);
    judge_active_count(r, ctx, active, static_cast<int>(errors.size()), *scan, want, problems);
    if (problems.conclude(r, kFaultPrefix))
      r.message = pass_message(active, rows.size(), *scan, want);
    ib::merge_read_errors(r, errors);
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_ib_port_check() { return std::make_unique<IbPortCheck>(); }

}  // namespace vigil
