#pragma once
// vigil-drainer's YAML configuration file: parse -> apply defaults -> validate; every error names
// the file, line and field, e.g. "drainer.yaml:12: breaker.max_percent: must be in (0, 100]".
// Part of the program library (yaml-cpp), not of the drainer core. Reference: docs/drainer.md.
#include <string>
#include <string_view>

#include "vigil/base/result.h"
#include "vigil/drainer/config.h"

namespace vigil::drainer {

// Parses YAML text; `source` names the file in errors. Loads the token file when auth is on.
Result<DrainerConfig> parse_config(std::string_view yaml, const std::string& source);
Result<DrainerConfig> load_config(const std::string& path);

}  // namespace vigil::drainer
