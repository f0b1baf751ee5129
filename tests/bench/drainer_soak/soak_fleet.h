#pragma once
// The simulated fleet of the soak benchmark: which node fails in which cycle, the report it
// sends, and what Slurm should show after a node's acknowledged reports. Assumptions (stated in
// docs/drainer.md "Soak"): 5% of nodes flap (a fatal row-remap failure every 5th cycle, passing
// in between), 2% stay broken (fail every cycle), the rest always pass; the drainer's built-in
// policy drains a fatal failure at once and lifts its drain after 2 consecutive passing reports.
#include <cstdio>
#include <string>
#include <vector>

#include "vigil/base/time.h"
#include "vigil/report/report.h"

namespace vigil::soak {

class Fleet {
 public:
  static constexpr int kResumeAfter = 2;  // the drainer's default resume_after

  static std::string name(int i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "sim-%05d", i);
    return buf;
  }
  static bool flapping(int i) { return i % 20 == 0; }
  static bool broken(int i) { return i % 50 == 1; }
  static bool fails(int i, int cycle) {
    if (broken(i)) return true;
    return flapping(i) && (cycle + i / 20) % 5 == 0;
  }

  static NodeReport report(int i, int cycle) {
    NodeReport r;
    r.node = name(i);
    r.sku = "h100-sxm5-80gb";
    r.run_id = "soak-" + std::to_string(cycle) + "-" + r.node;
    r.start_time = rfc3339_now();
    r.end_time = r.start_time;
    CheckResult ecc;
    ecc.check = "nvml_ecc";
    ecc.short_name = "ecc";
    ecc.measurements.push_back(counter("volatile_uncorrected_ecc", 0));
    CheckResult remap;
    remap.check = "nvml_row_remap";
    remap.short_name = "remap";
    const bool fail = fails(i, cycle);
    remap.measurements.push_back(counter("remap_pending", fail ? 1 : 0));
    if (fail) {
      remap.status = Status::kFail;
      remap.message = "gpu3 row remap pending (1)";  // the same reason every time: one drain
      remap.fault_code = "VIGIL-NVML-REMAP-PENDING";
    }
    r.checks = {ecc, remap};
    return r;
  }

  // Drains Slurm should have seen for these acknowledged cycles, and whether the node ends
  // drained.
  struct Expected {
    int drains = 0;
    int resumes = 0;
    bool drained = false;
  };
  static Expected expected(int i, const std::vector<int>& cycles) {
    Expected e;
    int passes = 0;
    for (int c : cycles) {
      if (fails(i, c)) {
        if (!e.drained) ++e.drains;
        e.drained = true;
        passes = 0;
      } else if (e.drained && ++passes >= kResumeAfter) {
        e.drained = false;
        ++e.resumes;
        passes = 0;
      }
    }
    return e;
  }

 private:
  static Measurement counter(const std::string& name, double v) {
    Measurement m;
    m.name = name;
    m.value = v;
    m.unit = "count";
    m.gpu = 3;
    Threshold t;
    t.op = Op::kLe;
    t.fail = 0;
    t.unit = "count";
    m.threshold = t;
    return m;
  }
};

}  // namespace vigil::soak
