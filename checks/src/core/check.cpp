#include "vigil/checks/check.h"

#include <cmath>
#include <fstream>
#include <thread>

#include "vigil/base/files.h"
#include "vigil/report/check_catalog.h"

namespace vigil {

std::string_view Check::short_name() const {
  const CheckSpec* spec = find_check_spec(name());
  return spec ? spec->short_name : name();
}

std::chrono::seconds Check::timeout() const {
  const CheckSpec* spec = find_check_spec(name());
  return spec ? spec->timeout : std::chrono::seconds(60);
}

Measurement& add_measurement(CheckResult& r, const CheckContext& ctx, std::string name,
                             double value, std::string unit, std::optional<int> gpu,
                             std::optional<std::string> port) {
  Measurement m;
  if (const Threshold* t = ctx.threshold(r.check, name)) m.threshold = *t;
  m.name = std::move(name);
  m.value = value;
  m.unit = std::move(unit);
  m.gpu = gpu;
  m.port = std::move(port);
  r.measurements.push_back(std::move(m));
  return r.measurements.back();
}

Threshold built_in_threshold(Op op, double fail, std::optional<double> warn, std::string unit,
                             std::string source) {
  Threshold t;
  t.op = op;
  t.fail = fail;
  t.warn = warn;
  t.unit = std::move(unit);
  t.source = std::move(source);
  return t;
}

void default_threshold(Measurement& m, Op op, double fail, std::optional<double> warn,
                       std::string source) {
  if (!m.threshold) m.threshold = built_in_threshold(op, fail, warn, m.unit, std::move(source));
}

void finalize(CheckResult& r, std::string_view fault_prefix) {
  if (r.status == Status::kError || r.status == Status::kSkipped) return;
  Status worst = Status::kPass;
  const Measurement* culprit = nullptr;
  for (const auto& m : r.measurements) {
    Status s = m.status();
    if (combine(worst, s) != worst) {  // strictly worse than anything seen so far
      culprit = &m;
      worst = s;
    }
  }
  r.status = combine(r.status, worst);
  if (r.status == Status::kPass || !culprit) return;
  if (r.message.empty()) {
    // Same compact figure the Slurm reason uses, e.g. "gpu3 hbm_bandwidth 1500<1905GB/s".
    r.message =
        culprit->threshold ? measurement_figure(*culprit) : std::string(to_string(r.status));
  }
  if (r.fault_code.empty()) {
    std::string code(fault_prefix);
    code += "-";
    for (char c : culprit->name) code += (c == '_') ? '-' : static_cast<char>(std::toupper(c));
    r.fault_code = code;
  }
}

std::optional<double> uptime_s(const CheckContext& ctx) {
  std::ifstream in(ctx.proc_root + "/uptime");
  double up = 0;
  if (in >> up && up >= 0) return up;
  return std::nullopt;
}

std::string boot_id(const CheckContext& ctx) {
  const auto text = read_whole_file(ctx.proc_root + "/sys/kernel/random/boot_id");
  return text ? text->substr(0, text->find('\n')) : "";
}

CheckResult skipped(std::string_view check, std::string why) {
  CheckResult r;
  r.check = std::string(check);
  r.status = Status::kSkipped;
  r.message = std::move(why);
  return r;
}

bool another_run_fits(std::chrono::steady_clock::duration elapsed,
                      std::chrono::steady_clock::duration longest,
                      std::chrono::milliseconds limit) {
  return limit.count() <= 0 || elapsed + longest * 3 / 2 <= limit;
}

std::string repeats_stopped_note(int done, int planned, std::chrono::milliseconds limit) {
  return "repeats stopped after " + std::to_string(done) + " of " + std::to_string(planned) +
         ": another might pass the check's " +
         std::to_string(std::chrono::duration_cast<std::chrono::seconds>(limit).count()) +
         " s limit";
}

bool wait_before_repeats(const CheckContext& ctx, std::chrono::steady_clock::duration elapsed,
                         std::chrono::steady_clock::duration longest, std::string& note) {
  if (ctx.repeat_spacing.count() <= 0) return true;
  if (!another_run_fits(elapsed + ctx.repeat_spacing, longest, ctx.time_limit)) {
    note =
        "repeats not run: waiting " + std::to_string(ctx.repeat_spacing.count()) +
        " s first would pass the check's " +
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(ctx.time_limit).count()) +
        " s limit";
    return false;
  }
  std::this_thread::sleep_for(ctx.repeat_spacing);
  return true;
}

CheckResult error(std::string_view check, std::string why, std::string fault_code) {
  CheckResult r;
  r.check = std::string(check);
  r.status = Status::kError;
  r.message = std::move(why);
  r.fault_code = fault_code.empty() ? "VIGIL-CHECK-ERROR" : std::move(fault_code);
  return r;
}

}  // namespace vigil
