#include "vigil/base/time.h"

#include <chrono>
#include <ctime>

namespace vigil {
namespace {

std::string format_utc(std::int64_t unix_seconds, const char* format) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

}  // namespace

std::string rfc3339_utc(std::int64_t unix_seconds) {
  return format_utc(unix_seconds, "%Y-%m-%dT%H:%M:%SZ");
}

std::string rfc3339_now() {
  return rfc3339_utc(std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count());
}

std::string compact_utc(std::int64_t unix_seconds) {
  return format_utc(unix_seconds, "%Y%m%dT%H%M%SZ");
}

std::optional<std::int64_t> parse_rfc3339(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)
  auto digits = [&](size_t pos, size_t n, int& out) {
    if (pos + n > s.size()) return false;
    out = 0;
    for (size_t i = pos; i < pos + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      out = out * 10 + (s[i] - '0');
    }
    return true;
  };
  int Y, M, D, h, m, sec;
  if (!digits(0, 4, Y) || s.size() < 20 || s[4] != '-' || !digits(5, 2, M) || s[7] != '-' ||
      !digits(8, 2, D) || (s[10] != 'T' && s[10] != 't') || !digits(11, 2, h) || s[13] != ':' ||
      !digits(14, 2, m) || s[16] != ':' || !digits(17, 2, sec)) {
    return std::nullopt;
  }
  if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60) return std::nullopt;
  size_t pos = 19;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    size_t start = pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') ++pos;
    if (pos == start) return std::nullopt;
  }
  int offset = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!digits(pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !digits(pos + 4, 2, om)) {
      return std::nullopt;
    }
    offset = (oh * 60 + om) * 60 * (s[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  std::tm tm{};
  tm.tm_year = Y - 1900;
  tm.tm_mon = M - 1;
  tm.tm_mday = D;
  tm.tm_hour = h;
  tm.tm_min = m;
  tm.tm_sec = sec;
  std::time_t t = timegm(&tm);
  return static_cast<std::int64_t>(t) - offset;
}

}  // namespace vigil
