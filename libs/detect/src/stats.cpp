#include "stats.h"

#include <algorithm>
#include <cmath>

namespace vigil::detect::stats {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid),
                   values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(),
                                         values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

double sorted_median(std::span<const double> sorted) {
  if (sorted.empty()) return 0;
  const std::size_t mid = sorted.size() / 2;
  return sorted.size() % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

double sorted_mad_sigma(std::span<const double> sorted, double centre) {
  const std::size_t n = sorted.size();
  if (n == 0) return 0;
  // Distances grow outward from the centre on both sides: merge the two sorted runs of
  // distances until the middle one(s) of all n are reached.
  auto right = static_cast<std::size_t>(
      std::lower_bound(sorted.begin(), sorted.end(), centre) - sorted.begin());
  std::size_t left = right;  // next candidate on the left is left - 1
  const std::size_t want_lo = (n - 1) / 2, want_hi = n / 2;
  double lo_value = 0, d = 0;
  for (std::size_t k = 0; k <= want_hi; ++k) {
    const bool take_left =
        left > 0 && (right >= n || centre - sorted[left - 1] <= sorted[right] - centre);
    if (take_left) {
      d = centre - sorted[--left];
    } else {
      d = sorted[right++] - centre;
    }
    if (k == want_lo) lo_value = d;
  }
  return kMadToSigma * (lo_value + d) / 2;
}

double mad_sigma(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return sorted_mad_sigma(values, sorted_median(values));
}

double deviation(double value, double centre, Direction d) {
  if (centre == 0) return 0;
  const double slower = (centre - value) / centre;
  return d == Direction::kHigherIsBetter ? slower : -slower;
}

double kendall_tau(std::span<const double> seq) {
  const std::size_t n = seq.size();
  if (n < 2) return 0;
  long concordant = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      if (seq[j] > seq[i]) ++concordant;
      if (seq[j] < seq[i]) --concordant;
    }
  }
  return static_cast<double>(concordant) / static_cast<double>(n * (n - 1) / 2);
}

double theil_sen_change(std::span<const double> seq) {
  const std::size_t n = seq.size();
  if (n < 2) return 0;
  std::vector<double> slopes;
  slopes.reserve(n * (n - 1) / 2);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      slopes.push_back((seq[j] - seq[i]) / static_cast<double>(j - i));
    }
  }
  return median(std::move(slopes)) * static_cast<double>(n - 1);
}

}  // namespace vigil::detect::stats
