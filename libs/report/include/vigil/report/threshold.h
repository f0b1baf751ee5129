#pragma once
// One bound on one measurement: `value op fail` must hold to avoid fail; `value op warn` to
// avoid warn. For ">=" warn lies above fail; for "<=" below it.
#include <optional>
#include <string>
#include <string_view>

#include "vigil/base/enum_names.h"
#include "vigil/report/status.h"

namespace vigil {

enum class Op { kGe, kLe };

inline constexpr EnumName<Op> kOpNames[] = {{Op::kGe, ">="}, {Op::kLe, "<="}};
inline std::string_view to_string(Op op) { return name_of(kOpNames, op); }

struct Threshold {
  Op op = Op::kGe;
  double fail = 0;
  std::optional<double> warn;
  std::string unit;
  std::string source;  // where a built-in default comes from (not serialised); may be empty
  // A performance floor not yet confirmed by this site's own healthy figures (docs/thresholds.md,
  // "Calibration"): breaking its fail bound is a warning, never a fail, so an unconfirmed floor
  // cannot drain a node. Serialised in reports ("unconfirmed": true) so the drainer sees it.
  bool unconfirmed = false;
  // When and from what data `vigil-drainer calibrate` set the bounds (SKU files only).
  std::string calibrated;
  // The NCCL algorithm the floor was measured with ("NVLS", "Ring", ...: NCCL's ncclAlgoStr), for
  // the all_reduce checks' busbw (SKU files only). A below-floor figure NCCL measured with another
  // algorithm keeps its verdict and carries fault code VIGIL-NCCL-ALGORITHM.
  std::string nccl_algorithm = {};

  // pass, warn or fail for `value` (warn where an unconfirmed floor's fail bound is broken).
  Status evaluate(double value) const;
  // The value breaks the fail bound itself, confirmed or not.
  bool breaks_fail(double value) const;
  // Empty when consistent, else a message (e.g. "warn 400 must be >= fail 460 for op >=").
  std::string validate() const;
};

// Units Vigil emits. Bytes are GB/s (1e9), IB link rates Gb/s.
bool is_known_unit(std::string_view unit);
// Units whose values can never be negative (bandwidths, counts, rates).
bool is_non_negative_unit(std::string_view unit);

}  // namespace vigil
