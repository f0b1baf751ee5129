#pragma once
// The drainer configuration file's reader, shared by the files that read its sections
// (config_file.cpp, config_sections.cpp). Private to the program: yaml-cpp never reaches the
// drainer core.
#include <yaml-cpp/yaml.h>

#include <limits>
#include <optional>
#include <set>
#include <string>
#include <type_traits>

#include "vigil/config/strict_yaml.h"
#include "vigil/drainer/config.h"

namespace vigil::drainer::config_detail {

// The drainer's file is read with the one strict reader (vigil/config/strict_yaml.h) and stops
// at its first problem: later sections often depend on earlier ones (auth mode, backend).
struct Stop {};

class Reader {
 public:
  explicit Reader(std::string source) : yr_(std::move(source)) {}

  [[noreturn]] void fail(const YAML::Node& n, const std::string& field,
                         const std::string& what) const {
    yr_.error(n, field, what);
    throw Stop{};
  }

  void only_keys(const YAML::Node& map, const std::string& field,
                 const std::set<std::string>& keys) const {
    if (!yr_.only_keys(map, field, keys)) throw Stop{};
  }

  // An absent or null key leaves `out` at its default.
  template <typename T>
  void get(const YAML::Node& map, const char* key, const std::string& field, T& out) const {
    const YAML::Node n = map[key];
    if (!n.IsDefined() || n.IsNull()) return;
    if constexpr (std::is_same_v<T, bool>) {
      out = need(yr_.boolean(n, field));
    } else if constexpr (std::is_same_v<T, std::string>) {
      out = need(yr_.scalar(n, field));
    } else if constexpr (std::is_integral_v<T>) {
      static_assert(std::is_signed_v<T> || sizeof(T) < sizeof(long long),
                    "the strict reader's integers are long long");
      out = static_cast<T>(need(
          yr_.integer(n, field, std::numeric_limits<T>::min(), std::numeric_limits<T>::max())));
    } else {
      static_assert(std::is_floating_point_v<T>);
      out = static_cast<T>(need(yr_.number(n, field)));
    }
  }

  const std::string& source() const { return yr_.file(); }
  std::string first_error() const { return yr_.errors.front().to_string(); }

 private:
  template <typename T>
  static T need(std::optional<T> v) {
    if (!v) throw Stop{};
    return *v;
  }
  mutable YamlReader yr_;
};

// Sections read in config_sections.cpp.
void read_detection(const Reader& rd, const YAML::Node& n, DetectionSettings& d);
void read_classes(const Reader& rd, const YAML::Node& n, ClassSettings& c);

}  // namespace vigil::drainer::config_detail
