// The parser reads genuine nccl-tests output (tests/fixtures/nccl-tests-logs, copied verbatim
// with their sources) and the variants real logs carry: srun -l prefixes, NCCL INFO lines, N/A.
#include "vigil/ncclbench/parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>
#include <string>

namespace nb = vigil::ncclbench;

namespace {

std::string read_log(const std::string& name) {
  std::ifstream f(std::string(VIGIL_NCCL_TESTS_LOGS) + "/" + name);
  EXPECT_TRUE(f.good()) << "missing fixture " << name;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const char* kHealthy = "10-gh200x2-2node-slingshot-v2.18.2-unalign-header-healthy.txt";
const char* kOldAllReduce = "01-dgx2-v100x12-old-format-allreduce.txt";
const char* kOldAllGatherFailed = "02-dgx2-v100x12-old-format-allgather-FAILED.txt";

nb::BenchRun parse_ok(const std::string& text) {
  auto r = nb::parse_nccl_tests_text(text);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
  return r.ok() ? r.value() : nb::BenchRun{};
}

std::string prefix_lines(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) out += prefix + line + "\n";
  return out;
}

}  // namespace

TEST(Parser, reads_genuine_2_18_log_with_header_rows_and_footer) {
  auto run = parse_ok(read_log(kHealthy));
  EXPECT_EQ(run.tool, "nccl-tests");
  EXPECT_EQ(run.tool_version, "2.18.2");
  EXPECT_EQ(run.nccl_version, "2.30.7");
  EXPECT_EQ(run.collective, "all_reduce");
  EXPECT_EQ(run.ranks, 2);
  EXPECT_EQ(run.hostnames, (std::vector<std::string>{"nid007106", "nid007109"}));
  EXPECT_EQ(run.warmup_iters, 1);
  EXPECT_EQ(run.iters, 20);
  EXPECT_EQ(run.check, true);
  ASSERT_EQ(run.rows.size(), 8u);
  const auto& first = run.rows.front();
  EXPECT_EQ(first.size_bytes, 1048576u);
  EXPECT_EQ(first.count, 262144u);
  EXPECT_EQ(first.type, "float");
  EXPECT_EQ(first.redop, "sum");
  EXPECT_EQ(first.root, -1);
  EXPECT_DOUBLE_EQ(first.out_of_place.time_us, 339.61);
  EXPECT_DOUBLE_EQ(first.out_of_place.busbw_gb_s, 3.09);
  EXPECT_EQ(first.out_of_place.wrong, 0);
  EXPECT_DOUBLE_EQ(first.in_place.time_us, 335.85);
  const auto& last = run.rows.back();
  EXPECT_EQ(last.size_bytes, 134217728u);
  EXPECT_DOUBLE_EQ(last.in_place.busbw_gb_s, 22.88);
  EXPECT_EQ(run.out_of_bounds, 0);
  EXPECT_EQ(run.out_of_bounds_ok, true);
  ASSERT_TRUE(run.avg_busbw_gb_s);
  EXPECT_DOUBLE_EQ(*run.avg_busbw_gb_s, 14.9966);
  EXPECT_DOUBLE_EQ(run.summary_busbw(), 14.9966);
  EXPECT_EQ(run.outcome, nb::Outcome::kOk);
  // The footer is the mean over out-of-place and in-place busbw of every row.
  EXPECT_NEAR(run.mean_busbw(), 14.9966, 0.005);
}

TEST(Parser, reads_genuine_old_format_with_error_column) {
  auto run = parse_ok(read_log(kOldAllReduce));
  ASSERT_EQ(run.rows.size(), 31u);
  EXPECT_EQ(run.ranks, 12);
  EXPECT_EQ(run.hostnames.front(), "seville");
  EXPECT_EQ(run.warmup_iters, 5);
  const auto& first = run.rows.front();
  EXPECT_EQ(first.size_bytes, 8u);
  EXPECT_EQ(first.count, 2u);
  EXPECT_EQ(first.redop, "sum");
  EXPECT_FALSE(first.root);                // no root column before 2.x
  EXPECT_FALSE(first.out_of_place.wrong);  // "error" is a max deviation, not a count
  ASSERT_TRUE(first.out_of_place.max_error);
  EXPECT_DOUBLE_EQ(*first.out_of_place.max_error, 2e-07);
  const auto& last = run.rows.back();
  EXPECT_EQ(last.size_bytes, 8589934592u);
  EXPECT_EQ(last.count, 2147483648u);
  EXPECT_DOUBLE_EQ(last.out_of_place.time_us, 127453);
  EXPECT_DOUBLE_EQ(last.out_of_place.busbw_gb_s, 123.56);
  EXPECT_DOUBLE_EQ(last.in_place.time_us, 127443);
  EXPECT_EQ(run.out_of_bounds, 0);
  EXPECT_DOUBLE_EQ(run.summary_busbw(), 42.5578);
  EXPECT_NEAR(run.mean_busbw(), 42.5578, 0.005);
  EXPECT_EQ(run.outcome, nb::Outcome::kOk);
}

TEST(Parser, reads_genuine_failed_all_gather_without_redop_column) {
  auto run = parse_ok(read_log(kOldAllGatherFailed));
  ASSERT_EQ(run.rows.size(), 31u);
  EXPECT_EQ(run.rows[0].size_bytes, 0u);
  EXPECT_EQ(run.rows[3].size_bytes, 48u);
  EXPECT_EQ(run.rows[3].type, "float");
  EXPECT_EQ(run.rows[3].redop, "");
  EXPECT_DOUBLE_EQ(*run.rows.back().in_place.max_error, 1.0);
  EXPECT_DOUBLE_EQ(run.rows.back().in_place.time_us, 70089);
  EXPECT_EQ(run.out_of_bounds, 4);
  EXPECT_EQ(run.out_of_bounds_ok, false);
  EXPECT_DOUBLE_EQ(*run.avg_busbw_gb_s, 30.2993);
  EXPECT_EQ(run.outcome, nb::Outcome::kWrongResults);
}

TEST(Parser, strips_srun_label_prefixes) {
  const std::string plain = read_log(kHealthy);
  auto want = parse_ok(plain);
  auto got = parse_ok(prefix_lines(plain, " 0: "));
  EXPECT_EQ(got.rows, want.rows);
  EXPECT_EQ(got.avg_busbw_gb_s, want.avg_busbw_gb_s);
  EXPECT_EQ(got.out_of_bounds_ok, true);
  EXPECT_EQ(got.ranks, 2);
  // Two-digit task ids, no padding.
  auto got2 = parse_ok(prefix_lines(plain, "12: "));
  EXPECT_EQ(got2.rows, want.rows);
}

TEST(Parser, skips_nccl_info_lines_inside_the_table) {
  std::string text = read_log(kHealthy);
  const std::string info =
      "nid007106:15784:15790 [0] NCCL INFO Channel 00/24 :    0   1\n"
      " 1: nid007109:24926:24930 [0] NCCL INFO comm 0x55d3 rank 1 nranks 2 - Init COMPLETE\n"
      "nid007106:15784:15784 [0] NCCL WARN NET/OFI something 12 34 56 78 90 11 12 13 14 15 16\n";
  auto pos = text.find("     2097152");
  ASSERT_NE(pos, std::string::npos);
  text.insert(pos, info);
  auto run = parse_ok(text);
  EXPECT_EQ(run.rows.size(), 8u);
  EXPECT_EQ(run.rows[1].size_bytes, 2097152u);
}

TEST(Parser, reads_na_in_wrong_column_as_unchecked) {
  std::string text = read_log(kHealthy);
  // -c 0: nccl-tests prints N/A instead of #wrong.
  text = std::regex_replace(text, std::regex("       0( |\n)"), "     N/A$1");
  auto run = parse_ok(text);
  ASSERT_EQ(run.rows.size(), 8u);
  for (const auto& r : run.rows) {
    EXPECT_FALSE(r.out_of_place.wrong);
    EXPECT_FALSE(r.in_place.wrong);
  }
  EXPECT_DOUBLE_EQ(run.rows[0].in_place.busbw_gb_s, 3.12);
}

TEST(Parser, survives_columns_that_overflow_their_width) {
  const std::string text =
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong     "
      "time   algbw   busbw  #wrong\n"
      "17179869184    4294967296     float     sum      -1 123456789.0  139.16 1243.56       0 "
      "35154  488.71 1855.99       0\n"
      "   1048576 262144 float sum -1 10.5 99.87 174.77 0 10.4 100.83 176.45 3\n"
      "# Out of bounds values : 3 FAILED\n"
      "# Avg bus bandwidth    : 1362.69\n";
  auto run = parse_ok(text);
  ASSERT_EQ(run.rows.size(), 2u);
  EXPECT_EQ(run.rows[0].size_bytes, 17179869184u);
  EXPECT_DOUBLE_EQ(run.rows[0].out_of_place.time_us, 123456789.0);
  EXPECT_DOUBLE_EQ(run.rows[0].out_of_place.busbw_gb_s, 1243.56);
  EXPECT_DOUBLE_EQ(run.rows[0].in_place.busbw_gb_s, 1855.99);
  EXPECT_EQ(run.rows[1].in_place.wrong, 3);
  EXPECT_EQ(run.total_wrong(), 3);
  EXPECT_EQ(run.outcome, nb::Outcome::kWrongResults);
  // #wrong counts near the 64-bit limit add up to the limit, not past it (fuzz_nccl_tests found
  // the signed overflow, 2026-12-02).
  run.rows[0].out_of_place.wrong = 7683156601792772323;
  run.rows[0].in_place.wrong = 7683156601792772323;
  EXPECT_EQ(run.total_wrong(), std::numeric_limits<std::int64_t>::max());
}

TEST(Parser, table_without_footer_uses_mean_of_rows) {
  std::string text = read_log(kHealthy);
  text = text.substr(0, text.find("# Out of bounds"));
  auto run = parse_ok(text);
  EXPECT_EQ(run.rows.size(), 8u);
  EXPECT_FALSE(run.avg_busbw_gb_s);
  EXPECT_NEAR(run.summary_busbw(), 14.9966, 0.005);
}

TEST(Parser, windows_line_endings_are_accepted) {
  std::string text = std::regex_replace(read_log(kHealthy), std::regex("\n"), "\r\n");
  auto run = parse_ok(text);
  EXPECT_EQ(run.rows.size(), 8u);
  EXPECT_DOUBLE_EQ(*run.avg_busbw_gb_s, 14.9966);
}

TEST(Parser, output_without_a_table_is_an_error) {
  auto r = nb::parse_nccl_tests_text(
      "nid007106: NCCL WARN Cuda failure 'no CUDA-capable device is detected'\n"
      "all_reduce_perf: Test NCCL failure common.cu:958 'unhandled cuda error'\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no nccl-tests table"), std::string::npos);
  EXPECT_FALSE(nb::parse_nccl_tests_text("").ok());
}
