#pragma once
// A count the passive checks report without a SKU threshold (the check judges it itself).
#include <string>
#include <utility>

#include "vigil/report/report.h"

namespace vigil {

inline Measurement count_measurement(std::string name, double value) {
  Measurement m;
  m.name = std::move(name);
  m.value = value;
  m.unit = "count";
  return m;
}

}  // namespace vigil
