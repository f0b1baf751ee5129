#include "vigil/base/strings.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace vigil {

std::string bytes_text(unsigned long long bytes) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  const double gib = static_cast<double>(bytes) / kGiB;
  char buf[32];
  if (gib < 1.0) {
    std::snprintf(buf, sizeof buf, "%.0f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  } else if (gib >= 10.0 || gib == static_cast<double>(static_cast<unsigned long long>(gib))) {
    std::snprintf(buf, sizeof buf, "%.0f GiB", gib);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f GiB", gib);
  }
  return buf;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string format_figure(double v, FigureStyle style) {
  char buf[64];
  const bool whole = std::fabs(v - std::round(v)) < 1e-9 && std::fabs(v) < 1e15;
  switch (style) {
    case FigureStyle::kThreeSignificant:
      std::snprintf(buf, sizeof buf, whole ? "%.0f" : "%.3g", v);
      break;
    case FigureStyle::kOneDecimal:
      std::snprintf(buf, sizeof buf, whole ? "%.0f" : "%.1f", v);
      break;
    case FigureStyle::kByMagnitude: {
      const double a = std::fabs(v);
      std::snprintf(buf, sizeof buf, a >= 99.95 ? "%.0f" : a >= 9.995 ? "%.1f" : "%.2f", v);
      break;
    }
  }
  return buf;
}

std::string significant(double v, int digits) {
  const double mag = std::fabs(v);
  const int lead =
      mag > 0 && std::isfinite(mag) ? static_cast<int>(std::floor(std::log10(mag))) : 0;
  return fixed(v, std::clamp(digits - 1 - lead, 0, 6));
}

std::string short_list(const std::vector<std::string>& items, size_t max_shown,
                       std::string_view sep, std::string_view more_sep) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < max_shown; ++i) {
    if (i) out += sep;
    out += items[i];
  }
  if (items.size() > max_shown) {
    out += more_sep;
    out += "+" + std::to_string(items.size() - max_shown) + " more";
  }
  return out;
}

std::string_view trim(std::string_view s, std::string_view chars) {
  const auto first = s.find_first_not_of(chars);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(chars) - first + 1);
}

std::string tail_lines(const std::string& text, int lines) {
  std::size_t pos = text.size();
  while (pos > 0 && (text[pos - 1] == '\n' || text[pos - 1] == ' ')) --pos;
  std::size_t end = pos;
  for (int i = 0; i < lines && pos > 0; ++i) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) {
      pos = 0;
      break;
    }
  }
  std::string out = text.substr(pos, end - pos);
  while (!out.empty() && out.front() == '\n') out.erase(0, 1);
  return out;
}

}  // namespace vigil
