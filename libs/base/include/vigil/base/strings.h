#pragma once
// Small text helpers shared by checks, the benchmark launcher and the drainer.
#include <string>
#include <string_view>
#include <vector>

namespace vigil {

// "a, b, c +2 more": the first max_shown items joined by sep, then how many were left out
// (after more_sep). Short enough for a Slurm reason; the whole list is in the measurements.
std::string short_list(const std::vector<std::string>& items, size_t max_shown,
                       std::string_view sep = ", ", std::string_view more_sep = " ");

// A byte count in binary units for messages: "40 GiB", "2.5 GiB", "512 MiB".
std::string bytes_text(unsigned long long bytes);

// `v` with `decimals` digits after the point ("%.<decimals>f"), for figures in messages.
std::string fixed(double v, int decimals);

// The one formatter of figures in messages, reasons and tables. kThreeSignificant
// and kOneDecimal write whole numbers bare ("3", "1000"); others with "%.3g" (0.0123, 1.23e+06:
// the NVML checks' messages) or one decimal ("151.5": the short Slurm reasons). kByMagnitude
// always gives 0, 1 or 2 decimals by size (>= 100, >= 10, below: "712", "31.2", "3.00": the
// detection messages, where "3.00" says the figure was measured, not counted).
enum class FigureStyle { kThreeSignificant, kOneDecimal, kByMagnitude };
std::string format_figure(double v, FigureStyle style);

// `v` with at least `digits` significant digits and no exponent: 712.4 -> "712", 31.24 -> "31.2",
// 0.04871 -> "0.0487" (at most 6 decimals), for figures whose scale varies (fabric busbw is
// ~40 GB/s on InfiniBand and ~0.05 GB/s on a test's shaped veth link).
std::string significant(double v, int digits = 3);

// `s` without the leading and trailing characters of `chars` (by default whitespace).
std::string_view trim(std::string_view s, std::string_view chars = " \t\r\n");

// The last `lines` lines of `text`, for error messages.
std::string tail_lines(const std::string& text, int lines);

}  // namespace vigil
