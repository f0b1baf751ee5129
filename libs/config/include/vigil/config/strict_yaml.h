#pragma once
// The one strict reader for Vigil's own YAML files: the SKU files (checks/src/core/sku.cpp) and
// the drainer's configuration (drainer/src/config_file.cpp). Both say a problem the same way,
// "<file>:<line>: <field>: <what>", refuse a key they do not know (naming the ones they do), and
// read a scalar by the same rules:
//   boolean  only the words true and false: "yes", "on", 1 or a quoted "true" are errors (YAML
//            1.1's yes/no/on/off are exactly the spellings that surprise people);
//   integer  decimal or 0x hex, nothing after the digits, in the type's range;
//   number   finite, nothing after the digits;
//   string   a scalar (quoted or not); `text()` also refuses an empty one.
// Every reader records the problem and returns std::nullopt / false; a caller decides whether to
// go on (the SKU loader collects every problem of a file) or to stop at the first.
#include <yaml-cpp/yaml.h>

#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "vigil/config/config_error.h"

namespace vigil {

class YamlReader {
 public:
  explicit YamlReader(std::string file) : file_(std::move(file)) {}
  std::vector<ConfigError> errors;

  const std::string& file() const { return file_; }
  // "a.b" from "a" and "b"; "b" when the parent is the document.
  static std::string join(const std::string& parent, const std::string& key);

  void error(const YAML::Node& at, const std::string& field, const std::string& message);
  bool only_keys(const YAML::Node& map, const std::string& field,
                 const std::set<std::string>& allowed);
  std::optional<bool> boolean(const YAML::Node& n, const std::string& field);
  std::optional<long long> integer(const YAML::Node& n, const std::string& field,
                                   long long min_value = std::numeric_limits<long long>::min(),
                                   long long max_value = std::numeric_limits<long long>::max());
  std::optional<double> number(const YAML::Node& n, const std::string& field);
  std::optional<std::string> scalar(const YAML::Node& n, const std::string& field);
  std::optional<std::string> text(const YAML::Node& n, const std::string& field);  // non-empty

 private:
  std::string file_;
};

}  // namespace vigil
