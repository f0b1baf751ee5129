// The one strict YAML reader (strict_yaml.h).
#include "vigil/config/strict_yaml.h"

#include <charconv>
#include <cmath>

namespace vigil {

std::string ConfigError::to_string() const {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line);
  out += ": ";
  if (!field.empty()) out += field + ": ";
  return out + message;
}

std::string YamlReader::join(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

void YamlReader::error(const YAML::Node& at, const std::string& field, const std::string& message) {
  const int line = at.IsDefined() && at.Mark().line >= 0 ? at.Mark().line + 1 : 0;
  errors.push_back({file_, line, field, message});
}

bool YamlReader::only_keys(const YAML::Node& map, const std::string& field,
                           const std::set<std::string>& allowed) {
  if (!map.IsMap()) {
    error(map, field, "must be a mapping");
    return false;
  }
  bool ok = true;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) {
      error(kv.first, field, "keys must be plain names, not lists or mappings");
      ok = false;
      continue;
    }
    const std::string key = kv.first.Scalar();
    if (allowed.count(key)) continue;
    std::string known;
    for (const auto& a : allowed) known += (known.empty() ? "" : ", ") + a;
    error(kv.first, join(field, key), "unknown key (expected one of: " + known + ")");
    ok = false;
  }
  return ok;
}

std::optional<bool> YamlReader::boolean(const YAML::Node& n, const std::string& field) {
  if (n.IsScalar() && n.Tag() != "!" && (n.Scalar() == "true" || n.Scalar() == "false"))
    return n.Scalar() == "true";
  error(n, field,
        "must be true or false" + (n.IsScalar() ? ", got '" + n.Scalar() + "'" : std::string()) +
            (n.IsScalar() && n.Tag() == "!" ? " (quoted)" : ""));
  return std::nullopt;
}

std::optional<long long> YamlReader::integer(const YAML::Node& n, const std::string& field,
                                             long long min_value, long long max_value) {
  if (!n.IsScalar()) {
    error(n, field, "must be an integer");
    return std::nullopt;
  }
  const std::string& s = n.Scalar();
  int base = 10;
  size_t skip = (!s.empty() && s[0] == '-') ? 1 : 0;
  if (s.size() > skip + 2 && s[skip] == '0' && (s[skip + 1] == 'x' || s[skip + 1] == 'X'))
    base = 16, skip += 2;
  unsigned long long magnitude = 0;
  auto [p, ec] = std::from_chars(s.data() + skip, s.data() + s.size(), magnitude, base);
  const bool negative = !s.empty() && s[0] == '-';
  const unsigned long long limit =
      negative ? static_cast<unsigned long long>(std::numeric_limits<long long>::max()) + 1
               : static_cast<unsigned long long>(std::numeric_limits<long long>::max());
  if (ec != std::errc() || p != s.data() + s.size() || skip == s.size() || magnitude > limit) {
    error(n, field, "must be an integer, got '" + s + "'");
    return std::nullopt;
  }
  const long long v =
      negative ? static_cast<long long>(0ULL - magnitude) : static_cast<long long>(magnitude);
  if (v < min_value) {
    error(n, field, "must be >= " + std::to_string(min_value));
    return std::nullopt;
  }
  if (v > max_value) {
    error(n, field, "must be <= " + std::to_string(max_value));
    return std::nullopt;
  }
  return v;
}

std::optional<double> YamlReader::number(const YAML::Node& n, const std::string& field) {
  if (!n.IsScalar()) {
    error(n, field, "must be a number");
    return std::nullopt;
  }
  const std::string& s = n.Scalar();
  double d = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(d)) {
    error(n, field, "must be a finite number, got '" + s + "'");
    return std::nullopt;
  }
  return d;
}

std::optional<std::string> YamlReader::scalar(const YAML::Node& n, const std::string& field) {
  if (!n.IsScalar()) {
    error(n, field, "must be a single value, not a list or mapping");
    return std::nullopt;
  }
  return n.Scalar();
}

std::optional<std::string> YamlReader::text(const YAML::Node& n, const std::string& field) {
  if (!n.IsScalar() || n.Scalar().empty()) {
    error(n, field, "must be a non-empty string");
    return std::nullopt;
  }
  return n.Scalar();
}

}  // namespace vigil
