#include "stats.h"

#include <algorithm>
#include <cmath>

namespace vigil::detect::stats {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower =
      *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

double history_centre(std::vector<double> values) {
  if (values.size() < 5) return median(std::move(values));
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (std::size_t i = 1; i + 1 < values.size(); ++i) sum += values[i];
  return sum / static_cast<double>(values.size() - 2);
}

double sorted_median(std::span<const double> sorted) { return sorted_median(SortedSkip{sorted}); }

double sorted_median(const SortedSkip& s) {
  const std::size_t n = s.size();
  if (n == 0) return 0;
  const std::size_t mid = n / 2;
  return n % 2 == 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

double sorted_mad_sigma(std::span<const double> sorted, double centre) {
  return sorted_mad_sigma(SortedSkip{sorted}, centre);
}

namespace {

// The k-th smallest (0-based) distance from `centre`: the distances form two increasing runs,
// leftward from `split` (the first element >= centre) and rightward from it; a binary search
// on how many come from the left run finds it in O(log n).
double kth_distance(const SortedSkip& s, double centre, std::size_t split, std::size_t k) {
  const std::size_t n_left = split, n_right = s.size() - split;
  auto left = [&](std::size_t i) { return centre - s[split - 1 - i]; };
  auto right = [&](std::size_t j) { return s[split + j] - centre; };
  std::size_t lo = k + 1 > n_right ? k + 1 - n_right : 0;
  std::size_t hi = std::min(k + 1, n_left);
  while (lo < hi) {
    const std::size_t a = (lo + hi) / 2, b = k + 1 - a;
    if (b > 0 && right(b - 1) > left(a)) {
      lo = a + 1;  // too few taken from the left run
    } else {
      hi = a;
    }
  }
  const std::size_t b = k + 1 - lo;
  if (lo == 0) return right(b - 1);
  if (b == 0) return left(lo - 1);
  return std::max(left(lo - 1), right(b - 1));
}

}  // namespace

double sorted_mad_sigma(const SortedSkip& s, double centre) {
  const std::size_t n = s.size();
  if (n == 0) return 0;
  std::size_t split = 0, hi = n;  // first element >= centre
  while (split < hi) {
    const std::size_t mid = (split + hi) / 2;
    if (s[mid] < centre) {
      split = mid + 1;
    } else {
      hi = mid;
    }
  }
  const double lo_value = kth_distance(s, centre, split, (n - 1) / 2);
  const double hi_value = n % 2 == 1 ? lo_value : kth_distance(s, centre, split, n / 2);
  return kMadToSigma * (lo_value + hi_value) / 2;
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
