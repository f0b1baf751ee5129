#pragma once
// A problem in one of Vigil's own configuration files, where it is and what is wrong, said the
// same way by every reader (strict_yaml.h): "<file>:<line>: <field>: <what>".
#include <string>

namespace vigil {

struct ConfigError {
  std::string file;
  int line = 0;       // 1-based; 0 when unknown
  std::string field;  // e.g. "thresholds.nvml_ecc.volatile_uncorrected_ecc.warn"
  std::string message;
  std::string to_string() const;  // "file:line: field: message"
};

}  // namespace vigil
