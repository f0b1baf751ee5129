// The real vigil-allreduce under the real mpirun, host backend (MPI_Allreduce on host memory).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "temp_dir.h"
#include "vigil/base/process.h"
#include "vigil/ncclbench/bench_result.h"
#include "vigil/ncclbench/parser.h"

namespace nb = vigil::ncclbench;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

using vigil::testing::TempDir;

struct Run {
  vigil::LaunchResult launch;
  std::string json_text;
};

Run run_allreduce(int ranks, const std::vector<std::string>& args, const TempDir& dir,
                  std::vector<std::pair<std::string, std::string>> env = {},
                  std::chrono::milliseconds timeout = 120s) {
  std::vector<std::string> argv = {VIGIL_MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np",
                                   std::to_string(ranks)};
  for (const auto& [k, v] : env) {
    argv.push_back("-x");
    argv.push_back(k + "=" + v);
  }
  argv.push_back(VIGIL_ALLREDUCE_BIN);
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("--json");
  argv.push_back(dir.file("run.json"));
  vigil::LaunchOptions o;
  o.timeout = timeout;
  auto r = vigil::run_command(argv, o);
  EXPECT_TRUE(r.ok());
  Run out;
  if (r.ok()) out.launch = *r;
  std::ifstream f(dir.file("run.json"));
  std::stringstream ss;
  ss << f.rdbuf();
  out.json_text = ss.str();
  return out;
}

nb::BenchRun json_of(const Run& r) {
  auto j = nb::parse_bench_json(r.json_text);
  EXPECT_TRUE(j.ok()) << (j.ok() ? "" : j.error().to_string()) << "\nstderr:\n" << r.launch.err;
  return j.ok() ? j.value() : nb::BenchRun{};
}

const std::vector<std::string> kSmallSweep = {"--backend", "host", "-b", "4K", "-e", "256K",
                                              "-f",        "8",    "-w", "2",  "-n", "5"};

void expect_consistent_arithmetic(const nb::BenchRun& run, int ranks) {
  for (const auto& row : run.rows) {
    for (const nb::BenchPoint* p : {&row.out_of_place, &row.in_place}) {
      ASSERT_GT(p->time_us, 0);
      // Hand formula: algbw = bytes / 1e9 / (time_us * 1e-6); busbw = algbw * 2(n-1)/n.
      const double algbw = static_cast<double>(row.size_bytes) / 1e9 / (p->time_us * 1e-6);
      EXPECT_NEAR(p->algbw_gb_s, algbw, algbw * 1e-9);
      EXPECT_NEAR(p->busbw_gb_s, algbw * 2.0 * (ranks - 1) / ranks, algbw * 1e-9);
      // The row time is the slowest rank's.
      ASSERT_TRUE(p->time_us_min && p->time_us_avg);
      EXPECT_LE(*p->time_us_min, *p->time_us_avg + 1e-9);
      EXPECT_LE(*p->time_us_avg, p->time_us + 1e-9);
    }
  }
}

}  // namespace

class HostBackendRanks : public ::testing::TestWithParam<int> {};

TEST_P(HostBackendRanks, sweep_passes_data_check_and_reports_consistent_figures) {
  const int ranks = GetParam();
  TempDir dir;
  auto r = run_allreduce(ranks, kSmallSweep, dir);
  ASSERT_EQ(r.launch.exit_code, nb::kExitOk) << r.launch.err;
  auto run = json_of(r);
  EXPECT_EQ(run.outcome, nb::Outcome::kOk);
  EXPECT_EQ(run.ranks, ranks);
  EXPECT_EQ(run.nodes, 1);
  EXPECT_EQ(run.hostnames.size(), static_cast<std::size_t>(ranks));
  EXPECT_EQ(run.backend, "host");
  EXPECT_EQ(run.collective, "all_reduce");
  ASSERT_EQ(run.rows.size(), 3u);  // 4K, 32K, 256K
  EXPECT_EQ(run.rows[0].size_bytes, 4096u);
  EXPECT_EQ(run.rows[0].count, 1024u);
  EXPECT_EQ(run.rows[2].size_bytes, 262144u);
  EXPECT_EQ(run.total_wrong(), 0);
  EXPECT_EQ(run.out_of_bounds_ok, true);
  expect_consistent_arithmetic(run, ranks);
  if (ranks == 1) {
    EXPECT_DOUBLE_EQ(run.rows[0].out_of_place.busbw_gb_s, 0.0);  // 2(n-1)/n = 0
  }
  EXPECT_NEAR(*run.avg_busbw_gb_s, run.mean_busbw(), 1e-9);

  // Round trip: the table on stdout parses to the rows of the JSON file.
  auto text = nb::parse_nccl_tests_text(r.launch.out);
  ASSERT_TRUE(text.ok()) << text.error().to_string() << "\n" << r.launch.out;
  EXPECT_EQ(text->tool, "vigil-allreduce");
  EXPECT_EQ(text->ranks, ranks);
  ASSERT_EQ(text->rows.size(), run.rows.size());
  for (std::size_t i = 0; i < run.rows.size(); ++i) {
    EXPECT_EQ(text->rows[i].size_bytes, run.rows[i].size_bytes);
    EXPECT_EQ(text->rows[i].count, run.rows[i].count);
    EXPECT_EQ(text->rows[i].out_of_place.wrong, run.rows[i].out_of_place.wrong);
    EXPECT_NEAR(text->rows[i].in_place.busbw_gb_s, run.rows[i].in_place.busbw_gb_s, 0.005 + 1e-9);
    EXPECT_NEAR(text->rows[i].out_of_place.time_us, run.rows[i].out_of_place.time_us,
                run.rows[i].out_of_place.time_us * 1e-4 + 0.005);
  }
  EXPECT_NEAR(text->summary_busbw(), run.summary_busbw(), run.summary_busbw() * 1e-5 + 1e-9);
  EXPECT_NE(r.launch.out.find("slowest of " + std::to_string(ranks) + " ranks"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(AllreduceMpi, HostBackendRanks, ::testing::Values(1, 2, 4));

TEST(AllreduceMpi, corrupted_result_is_counted_in_wrong_and_exit_code) {
  TempDir dir;
  auto r = run_allreduce(2, kSmallSweep, dir, {{"VIGIL_ALLREDUCE_CORRUPT_RANK", "1"}});
  EXPECT_EQ(r.launch.exit_code, nb::kExitWrongResults) << r.launch.err;
  auto run = json_of(r);
  EXPECT_EQ(run.outcome, nb::Outcome::kWrongResults);
  // One flipped value per checked result on rank 1: 3 sizes x 2 placements.
  EXPECT_EQ(run.total_wrong(), 6);
  EXPECT_EQ(run.rows[0].out_of_place.wrong, 1);
  EXPECT_EQ(run.out_of_bounds, 6);
  EXPECT_NE(r.launch.out.find("# Out of bounds values : 6 FAILED"), std::string::npos);
}

TEST(AllreduceMpi, unchecked_run_prints_na) {
  TempDir dir;
  auto args = kSmallSweep;
  args.insert(args.end(), {"-c", "0"});
  auto r = run_allreduce(2, args, dir, {{"VIGIL_ALLREDUCE_CORRUPT_RANK", "1"}});
  EXPECT_EQ(r.launch.exit_code, nb::kExitOk) << r.launch.err;
  EXPECT_NE(r.launch.out.find("N/A"), std::string::npos);
  auto run = json_of(r);
  EXPECT_FALSE(run.rows[0].in_place.wrong);
}

TEST(AllreduceMpi, min_busbw_above_measured_exits_2) {
  TempDir dir;
  auto args = kSmallSweep;
  args.insert(args.end(), {"--min-busbw", "100000"});
  auto r = run_allreduce(2, args, dir);
  EXPECT_EQ(r.launch.exit_code, nb::kExitBelowMinBusbw) << r.launch.err;
  auto run = json_of(r);
  EXPECT_EQ(run.outcome, nb::Outcome::kBelowMinBusbw);
  EXPECT_EQ(run.min_busbw_gb_s, 100000);
}

TEST(AllreduceMpi, stalled_rank_ends_with_timeout_within_the_configured_time) {
  TempDir dir;
  auto args = kSmallSweep;
  args.insert(args.end(), {"--timeout", "3"});
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_allreduce(2, args, dir, {{"VIGIL_ALLREDUCE_STALL_RANK", "1"}}, 60s);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(r.launch.timed_out) << "the watchdog did not end the run";
  EXPECT_EQ(r.launch.exit_code, nb::kExitTimeout) << r.launch.err;
  // 3 s watchdog + 0.6 s for the other ranks + MPI teardown; a loaded CI box gets some slack.
  EXPECT_LT(wall, 3.0 + 4.0);
  auto run = json_of(r);
  EXPECT_EQ(run.outcome, nb::Outcome::kTimeout);
  EXPECT_EQ(run.message.rfind("timeout after 3 s", 0), 0u) << run.message;
  EXPECT_NE(r.launch.out.find("# Result : timeout"), std::string::npos);
  EXPECT_NE(r.launch.err.find("timeout after 3 s"), std::string::npos);
}

TEST(AllreduceMpi, bad_options_exit_3_with_a_hint) {
  TempDir dir;
  auto r = run_allreduce(1, {"--backend", "host", "-d", "bf16"}, dir);
  EXPECT_EQ(r.launch.exit_code, nb::kExitSetupError);
  EXPECT_NE(r.launch.err.find("bf16 needs --backend nccl"), std::string::npos) << r.launch.err;
}
