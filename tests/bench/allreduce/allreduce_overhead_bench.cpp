// Harness overhead of vigil-allreduce (host backend): the library harness against a minimal
// MPI_Allreduce loop written only for this comparison, same sizes, same iterations, same MPI
// run, interleaved per size to spread machine noise over both. Prints per size the slowest-rank
// time per operation of each, median and minimum over repetitions, and their ratios; goal: the
// geometric mean over the sizes >= 1 MiB (both placements) of the ratio of the minimums <= 1.05.
// Why the mean and not the worst ratio: on a loaded 2-core machine the single ratios scatter
// 10-15% both ways in one run (0.85 and 1.07 side by side, 2026-11-26), and the harness cannot
// be 15% faster than a bare loop making the same MPI calls, so the worst of six is noise. A real
// overhead moves every ratio up and shows in the mean; noise cancels there. The lowest and
// highest ratio are printed with it, as the noise of the run.
// Options: --reps N (default 7), --iters N (default 20), --enforce X (exit 1 if that mean
// exceeds X).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "vigil/ncclbench/harness.h"

namespace nb = vigil::ncclbench;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// The reference: what a hand-written benchmark would do. Returns the slowest rank's us/op.
double minimal_loop(std::vector<float>& send, std::vector<float>& recv, int count, bool in_place,
                    int warmup, int iters) {
  const void* s = in_place ? MPI_IN_PLACE : send.data();
  for (int i = 0; i < warmup; ++i)
    MPI_Allreduce(s, recv.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i)
    MPI_Allreduce(s, recv.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  const auto t1 = std::chrono::steady_clock::now();
  double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / iters, max_us = 0;
  MPI_Allreduce(&us, &max_us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return max_us;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);  // as vigil-allreduce does
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int reps = 7, iters = 20, warmup = 5;
  double enforce = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--iters")) iters = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--enforce")) enforce = std::atof(argv[i + 1]);
  }
  const std::vector<std::uint64_t> sizes = {64ull << 10, 1ull << 20, 4ull << 20, 16ull << 20};

  nb::BenchOptions opts;
  opts.backend = nb::Backend::kHost;
  opts.sizes = sizes;
  opts.warmup_iters = warmup;
  opts.iters = iters;
  opts.check = false;  // the data check runs outside the timed loop; skip it to save time
  opts.print_table = false;

  std::vector<float> send(sizes.back() / 4, 1.0f), recv(sizes.back() / 4, 0.0f);
  // [size][placement] -> samples
  std::vector<std::vector<double>> h(sizes.size() * 2), m(sizes.size() * 2);
  // Interleave per size (harness, then the minimal loop, same size) so that load changes on a
  // shared machine hit both sides alike.
  for (int rep = 0; rep < reps; ++rep) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      opts.sizes = {sizes[i]};
      auto run = nb::run_allreduce(opts, nullptr);
      if (!run.ok() || run->rows.size() != 1) {
        if (rank == 0)
          std::fprintf(stderr, "harness run failed: %s\n",
                       run.ok() ? run->message.c_str() : run.error().to_string().c_str());
        MPI_Abort(MPI_COMM_WORLD, 3);
      }
      h[2 * i].push_back(run->rows[0].out_of_place.time_us);
      h[2 * i + 1].push_back(run->rows[0].in_place.time_us);
      const int count = static_cast<int>(sizes[i] / 4);
      m[2 * i].push_back(minimal_loop(send, recv, count, false, warmup, iters));
      m[2 * i + 1].push_back(minimal_loop(send, recv, count, true, warmup, iters));
    }
  }

  int rc = 0;
  if (rank == 0) {
    // Median shows the typical cost; the minimum over repetitions is the estimator that is least
    // disturbed by other load on a shared machine, so the goal is judged on it.
    std::printf(
        "# all_reduce harness overhead, host backend, %d ranks, %d reps x %d iters "
        "(slowest rank per op)\n",
        ranks, reps, iters);
    std::printf("# %10s %6s %12s %12s %8s %12s %12s %8s %10s\n", "size(B)", "place", "h_med(us)",
                "m_med(us)", "ratio", "h_min(us)", "m_min(us)", "ratio", "diff(us)");
    double worst_min = 0, best_min = 1e9, worst_med = 0, log_sum = 0;
    int judged = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      for (int p = 0; p < 2; ++p) {
        const auto& hs = h[2 * i + p];
        const auto& ms = m[2 * i + p];
        const double hmed = median(hs), mmed = median(ms);
        const double hmin = *std::min_element(hs.begin(), hs.end());
        const double mmin = *std::min_element(ms.begin(), ms.end());
        std::printf("  %10llu %6s %12.2f %12.2f %8.3f %12.2f %12.2f %8.3f %10.3f\n",
                    static_cast<unsigned long long>(sizes[i]), p ? "in" : "out", hmed, mmed,
                    hmed / mmed, hmin, mmin, hmin / mmin, hmin - mmin);
        // Ratios of operations that move no data (1 rank, in-place: ~10 ns) say nothing about
        // a >= 1 MiB collective; the goal is judged where the reference takes >= 10 us.
        if (sizes[i] >= (1ull << 20) && mmin >= 10.0) {
          worst_min = std::max(worst_min, hmin / mmin);
          best_min = std::min(best_min, hmin / mmin);
          worst_med = std::max(worst_med, hmed / mmed);
          log_sum += std::log(hmin / mmin);
          judged++;
        }
      }
    }
    const double mean = judged ? std::exp(log_sum / judged) : 0;
    std::printf(
        "# ratio of the minimums at >= 1 MiB: geometric mean %.3f over %d (goal <= 1.05); "
        "lowest %.3f, highest %.3f (the run's noise); worst on the median %.3f\n",
        mean, judged, best_min, worst_min, worst_med);
    if (enforce > 0 && (judged == 0 || mean > enforce)) rc = 1;
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
