#pragma once
// One bound on one measurement: `value op fail` must hold to avoid fail; `value op warn` to
// avoid warn. For ">=" warn lies above fail; for "<=" below it.
#include <optional>
#include <string>
#include <string_view>

#include "vigil/report/status.h"

namespace vigil {

enum class Op { kGe, kLe };

std::string_view to_string(Op op);
std::optional<Op> op_from_string(std::string_view s);

struct Threshold {
  Op op = Op::kGe;
  double fail = 0;
  std::optional<double> warn;
  std::string unit;
  std::string source;  // where a built-in default comes from (not serialised); may be empty

  // pass, warn or fail for `value`.
  Status evaluate(double value) const;
  // Empty when consistent, else a message (e.g. "warn 400 must be >= fail 460 for op >=").
  std::string validate() const;
};

// Units Vigil emits. Bytes are GB/s (1e9), IB link rates Gb/s.
bool is_known_unit(std::string_view unit);
// Units whose values can never be negative (bandwidths, counts, rates).
bool is_non_negative_unit(std::string_view unit);

}  // namespace vigil
