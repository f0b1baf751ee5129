#pragma once
// Robust statistics for the baselines. All take values by copy or span and never throw; the
// callers guarantee non-empty input where a centre is needed.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "vigil/detect/config.h"

namespace vigil::detect::stats {

// 1.4826 * MAD estimates the standard deviation of normally distributed data.
inline constexpr double kMadToSigma = 1.4826;

// Median; the mean of the two middle values for an even count. 0 for no values.
double median(std::vector<double> values);
// The centre of a unit's history ring: the mean without the lowest and the highest value when
// there are at least 5 (as robust to one stray figure as the median, and ~1.3x less noisy on
// normal run-to-run noise: ~0.36 sigma vs ~0.44 sigma for 8 values); the median below 5.
double history_centre(std::vector<double> values);
// Median of an already sorted range.
double sorted_median(std::span<const double> sorted);
// 1.4826 * median(|x - centre|) of a sorted range, in O(n/2) by merging outward from the centre.
double sorted_mad_sigma(std::span<const double> sorted, double centre);
// A sorted range without the element at `skip` (none when skip >= size): the fleet's figures
// without the judged node's own, with no copy.
struct SortedSkip {
  std::span<const double> sorted;
  std::size_t skip = SIZE_MAX;
  std::size_t size() const { return skip < sorted.size() ? sorted.size() - 1 : sorted.size(); }
  double operator[](std::size_t k) const { return sorted[k < skip ? k : k + 1]; }
};
double sorted_median(const SortedSkip& s);
double sorted_mad_sigma(const SortedSkip& s, double centre);

// 1.4826 * MAD of unsorted values around their median.
double mad_sigma(std::vector<double> values);

// How much worse `value` is than `centre`, as a fraction of centre (> 0 = worse).
double deviation(double value, double centre, Direction d);

// Kendall's tau of the sequence against its index: -1 for a strictly decreasing sequence.
double kendall_tau(std::span<const double> seq);
// Theil-Sen slope (median of pairwise slopes) times (n - 1): the fitted change across the
// sequence, in the sequence's units.
double theil_sen_change(std::span<const double> seq);

}  // namespace vigil::detect::stats
