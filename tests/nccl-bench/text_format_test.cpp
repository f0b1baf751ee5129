// Our table must read back, through the same parser used for nccl-tests logs, as the rows the
// JSON file holds.
#include "vigil/ncclbench/text_format.h"

#include <gtest/gtest.h>

#include "vigil/ncclbench/parser.h"

namespace nb = vigil::ncclbench;

namespace {

nb::BenchRun sample_run() {
  nb::BenchRun run;
  run.tool = "vigil-allreduce";
  run.tool_version = "0.1.0";
  run.collective = "all_reduce";
  run.backend = "host";
  run.transport = "ib";
  run.ranks = 4;
  run.warmup_iters = 5;
  run.iters = 20;
  run.check = true;
  std::uint64_t size = 1024;
  for (int i = 0; i < 6; ++i, size *= 16) {
    nb::BenchRow row;
    row.size_bytes = size;
    row.count = size / 4;
    row.type = "float";
    row.redop = "sum";
    row.root = -1;
    const double us = 3.0 + static_cast<double>(size) / 2000.0;
    row.out_of_place.time_us = us;
    row.out_of_place.algbw_gb_s = nb::algbw_gb_s(size, us * 1e-6);
    row.out_of_place.busbw_gb_s = row.out_of_place.algbw_gb_s * 1.5;
    row.out_of_place.wrong = 0;
    row.in_place = row.out_of_place;
    row.in_place.wrong = i == 5 ? 2 : 0;
    run.rows.push_back(row);
  }
  run.out_of_bounds = run.total_wrong();
  run.out_of_bounds_ok = false;
  run.avg_busbw_gb_s = run.mean_busbw();
  run.outcome = nb::Outcome::kWrongResults;
  return run;
}

}  // namespace

TEST(TextFormat, time_uses_fewer_decimals_as_it_grows) {
  EXPECT_EQ(nb::format_time_us(3.14159), "   3.14");
  EXPECT_EQ(nb::format_time_us(12345.67), "12345.7");
  EXPECT_EQ(nb::format_time_us(1234567.8), "1234568");
}

TEST(TextFormat, row_has_nccl_tests_columns_and_na_when_unchecked) {
  nb::BenchRow row;
  row.size_bytes = 1048576;
  row.count = 262144;
  row.type = "float";
  row.redop = "sum";
  row.root = -1;
  row.out_of_place = {339.61, 3.09, 3.09, 0, {}, {}, {}};
  row.in_place = {335.85, 3.12, 3.12, std::nullopt, {}, {}, {}};
  EXPECT_EQ(nb::format_row(row),
            "     1048576        262144     float     sum      -1   339.61    3.09    3.09       0"
            "   335.85    3.12    3.12     N/A\n");
}

TEST(TextFormat, footer_has_the_two_lines_existing_parsers_read) {
  auto run = sample_run();
  const std::string footer = nb::format_footer(run);
  EXPECT_NE(footer.find("# Out of bounds values : 2 FAILED\n"), std::string::npos);
  EXPECT_NE(footer.find("# Avg bus bandwidth    : "), std::string::npos);
  run.rows.back().in_place.wrong = 0;
  run.out_of_bounds = 0;
  EXPECT_NE(nb::format_footer(run).find("# Out of bounds values : 0 OK\n"), std::string::npos);
}

TEST(TextFormat, text_output_parses_back_to_the_same_rows) {
  const auto run = sample_run();
  std::string text = nb::format_header(
      run, {"Rank  0 Group  0 Pid 1 on gpu-0 device -1 [host] CPU"}, 1024, 1 << 30, 16);
  for (const auto& r : run.rows) text += nb::format_row(r);
  text += nb::format_footer(run);
  auto parsed = nb::parse_nccl_tests_text(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
  EXPECT_EQ(parsed->tool, "vigil-allreduce");
  EXPECT_EQ(parsed->backend, "host");
  EXPECT_EQ(parsed->transport, "ib");
  EXPECT_EQ(parsed->collective, "all_reduce");
  EXPECT_EQ(parsed->outcome, nb::Outcome::kWrongResults);
  ASSERT_EQ(parsed->rows.size(), run.rows.size());
  for (std::size_t i = 0; i < run.rows.size(); ++i) {
    const auto& a = run.rows[i];
    const auto& b = parsed->rows[i];
    EXPECT_EQ(b.size_bytes, a.size_bytes);
    EXPECT_EQ(b.count, a.count);
    EXPECT_EQ(b.type, a.type);
    EXPECT_EQ(b.redop, a.redop);
    EXPECT_EQ(b.root, a.root);
    EXPECT_EQ(b.in_place.wrong, a.in_place.wrong);
    // The table prints 2 decimals (time: up to 7 significant digits).
    EXPECT_NEAR(b.out_of_place.busbw_gb_s, a.out_of_place.busbw_gb_s, 0.005 + 1e-9);
    EXPECT_NEAR(b.in_place.algbw_gb_s, a.in_place.algbw_gb_s, 0.005 + 1e-9);
    EXPECT_NEAR(b.out_of_place.time_us, a.out_of_place.time_us,
                a.out_of_place.time_us * 1e-4 + 0.005);
  }
  EXPECT_NEAR(parsed->summary_busbw(), run.summary_busbw(), run.summary_busbw() * 1e-5);
  EXPECT_EQ(parsed->out_of_bounds, 2);
}
