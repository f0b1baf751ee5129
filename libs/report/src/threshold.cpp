#include "vigil/report/threshold.h"

#include <array>
#include <cmath>
#include <sstream>

namespace vigil {

namespace {
bool holds(Op op, double value, double bound) {
  return op == Op::kGe ? value >= bound : value <= bound;
}

std::string fmt(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
}  // namespace

bool Threshold::breaks_fail(double value) const {
  return !std::isfinite(value) || !holds(op, value, fail);
}

Status Threshold::evaluate(double value) const {
  if (!std::isfinite(value) || !holds(op, value, fail))
    return unconfirmed ? Status::kWarn : Status::kFail;
  if (warn && !holds(op, value, *warn)) return Status::kWarn;
  return Status::kPass;
}

std::string Threshold::validate() const {
  if (!std::isfinite(fail)) return "fail bound must be a finite number";
  if (unit.empty()) return "unit is required";
  if (!is_known_unit(unit)) return "unknown unit '" + unit + "'";
  if (warn) {
    if (!std::isfinite(*warn)) return "warn bound must be a finite number";
    // The warn band lies on the healthy side of fail.
    if (!holds(op, *warn, fail)) {
      return "warn " + fmt(*warn) + " must be " + std::string(to_string(op)) + " fail " +
             fmt(fail) + " for op " + std::string(to_string(op));
    }
  }
  if (is_non_negative_unit(unit) && fail < 0)
    return "fail bound must not be negative for unit " + unit;
  return "";
}

namespace {
// "enum": a member of an NVML enumeration (a fabric state, a recovery action), named in the
// check's message; added 2026-11-26 (older drainers reject it: upgrade the drainer first).
// "MHz": a clock (gpu_soak's SM clock under load); added 2026-12-04, likewise.
constexpr std::array<std::string_view, 14> kUnits = {
    "GB/s", "Gb/s", "TFLOP/s", "count", "bool",    "celsius", "W",
    "s",    "gen",  "lanes",   "MiB",   "percent", "enum",    "MHz"};
}  // namespace

bool is_known_unit(std::string_view unit) {
  for (auto u : kUnits) {
    if (u == unit) return true;
  }
  return false;
}

bool is_non_negative_unit(std::string_view unit) {
  return is_known_unit(unit) && unit != "celsius";
}

}  // namespace vigil
