#include "vigil/ncclbench/bench_result.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace nb = vigil::ncclbench;

TEST(Busbw, allreduce_factor_is_two_n_minus_one_over_n) {
  EXPECT_DOUBLE_EQ(nb::allreduce_busbw_factor(1), 0.0);
  EXPECT_DOUBLE_EQ(nb::allreduce_busbw_factor(2), 1.0);
  EXPECT_DOUBLE_EQ(nb::allreduce_busbw_factor(4), 1.5);
  EXPECT_DOUBLE_EQ(nb::allreduce_busbw_factor(8), 1.75);
  EXPECT_DOUBLE_EQ(nb::allreduce_busbw_factor(16), 1.875);
}

TEST(Busbw, algbw_is_bytes_over_1e9_over_seconds) {
  // 1 GiB in 10 ms: 1073741824 / 1e9 / 0.01 = 107.3741824 GB/s.
  EXPECT_NEAR(nb::algbw_gb_s(1073741824, 0.01), 107.3741824, 1e-9);
  // 8 ranks: busbw = 107.3741824 * 1.75 = 187.9048192 GB/s.
  EXPECT_NEAR(nb::algbw_gb_s(1073741824, 0.01) * nb::allreduce_busbw_factor(8), 187.9048192, 1e-9);
  EXPECT_DOUBLE_EQ(nb::algbw_gb_s(1000, 0), 0.0);
}

TEST(BenchRun, mean_busbw_averages_both_placements_of_every_row) {
  nb::BenchRun run;
  nb::BenchRow a, b;
  a.out_of_place.busbw_gb_s = 10;
  a.in_place.busbw_gb_s = 20;
  b.out_of_place.busbw_gb_s = 30;
  b.in_place.busbw_gb_s = 40;
  run.rows = {a, b};
  EXPECT_DOUBLE_EQ(run.mean_busbw(), 25.0);
  EXPECT_DOUBLE_EQ(run.summary_busbw(), 25.0);
  run.avg_busbw_gb_s = 24.5;  // a footer wins over the recomputed mean
  EXPECT_DOUBLE_EQ(run.summary_busbw(), 24.5);
  EXPECT_DOUBLE_EQ(nb::BenchRun{}.mean_busbw(), 0.0);
}

TEST(BenchRun, outcomes_map_to_documented_exit_codes) {
  EXPECT_EQ(nb::exit_code_for(nb::Outcome::kOk), 0);
  EXPECT_EQ(nb::exit_code_for(nb::Outcome::kWrongResults), 1);
  EXPECT_EQ(nb::exit_code_for(nb::Outcome::kBelowMinBusbw), 2);
  EXPECT_EQ(nb::exit_code_for(nb::Outcome::kSetupError), 3);
  EXPECT_EQ(nb::exit_code_for(nb::Outcome::kRuntimeError), 4);
  EXPECT_EQ(nb::exit_code_for(nb::Outcome::kTimeout), 5);
  for (auto o : {nb::Outcome::kOk, nb::Outcome::kWrongResults, nb::Outcome::kBelowMinBusbw,
                 nb::Outcome::kSetupError, nb::Outcome::kRuntimeError, nb::Outcome::kTimeout})
    EXPECT_EQ(value_of(nb::kOutcomeNames, nb::to_string(o)), o);
  EXPECT_FALSE(value_of(nb::kOutcomeNames, "hung"));
}

TEST(BenchJson, round_trips_every_field) {
  nb::BenchRun run;
  run.tool = "vigil-allreduce";
  run.tool_version = "0.1.0";
  run.collective = "all_reduce";
  run.outcome = nb::Outcome::kTimeout;
  run.message = "timeout after 30 s";
  run.backend = "nccl";
  run.transport = "ib";
  run.ranks = 8;
  run.nodes = 1;
  run.hostnames = std::vector<std::string>(8, "gpu-0");
  run.nccl_version = "2.28.9";
  run.nccl_env = {{"NCCL_ALGO", "Ring"}, {"NCCL_P2P_DISABLE", "1"}};
  run.nccl_env_removed = {"NCCL_PROTO=Simple"};
  run.nccl_conf_tuning = {"NCCL_ALGO=Ring (/etc/nccl.conf)"};
  run.nccl_algorithms = {{1ull << 30, "NVLS", "Simple"}, {1ull << 33, "Ring", "LL128"}};
  run.nccl_transport = nb::TransportUse{"IB", {"P2P/CUMEM", "NET/IB"}, 8, 6, true};
  run.warmup_iters = 5;
  run.iters = 20;
  run.check = true;
  run.min_busbw_gb_s = 180;
  run.timeout_s = 30;
  run.start_time = "2026-11-21T10:00:00Z";
  run.duration_s = 30.5;
  nb::BenchRow row;
  row.size_bytes = 1ull << 33;
  row.count = 1ull << 31;
  row.type = "float";
  row.redop = "sum";
  row.root = -1;
  row.out_of_place = {12345.6, 695.8, 1217.7, 0, std::nullopt, 12000.1, 12200.2};
  row.in_place = {12340.0, 696.1, 1218.2, std::nullopt, std::nullopt, std::nullopt, std::nullopt};
  run.rows = {row};
  run.out_of_bounds = 0;
  run.out_of_bounds_ok = true;
  run.avg_busbw_gb_s = 1217.95;

  const auto j = nb::to_json(run);
  EXPECT_EQ(j.at("result"), "timeout");
  EXPECT_EQ(j.at("rows").at(0).at("size_bytes"), 8589934592ull);
  EXPECT_TRUE(j.at("rows").at(0).at("in_place").at("wrong").is_null());
  auto back = nb::parse_bench_json(j.dump());
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->rows, run.rows);
  EXPECT_EQ(back->outcome, run.outcome);
  EXPECT_EQ(back->message, run.message);
  EXPECT_EQ(back->nccl_env, run.nccl_env);
  EXPECT_EQ(back->nccl_env_removed, run.nccl_env_removed);
  EXPECT_EQ(back->nccl_conf_tuning, run.nccl_conf_tuning);
  EXPECT_EQ(back->nccl_algorithms, run.nccl_algorithms);
  EXPECT_EQ(back->nccl_transport, run.nccl_transport);
  EXPECT_EQ(back->hostnames, run.hostnames);
  EXPECT_EQ(back->min_busbw_gb_s, run.min_busbw_gb_s);
  EXPECT_EQ(back->avg_busbw_gb_s, run.avg_busbw_gb_s);
  EXPECT_EQ(back->ranks, 8);
  EXPECT_EQ(back->transport, "ib");
}

TEST(BenchJson, errors_name_the_field) {
  auto r =
      nb::parse_bench_json(R"({"schema_version":1,"result":"ok","rows":[{"size_bytes":"x"}]})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("/rows/0/size_bytes"), std::string::npos) << r.error().message;
  auto v = nb::parse_bench_json(R"({"schema_version":9,"result":"ok","rows":[]})");
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("schema_version"), std::string::npos);
  auto o = nb::parse_bench_json(R"({"schema_version":1,"result":"great","rows":[]})");
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.error().message.find("/result"), std::string::npos);
  EXPECT_FALSE(nb::parse_bench_json("{not json").ok());
  auto a = nb::parse_bench_json(
      R"({"schema_version":1,"result":"ok","rows":[],"nccl_algorithms":[{"size_bytes":1}]})");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find("/nccl_algorithms/0/algorithm"), std::string::npos)
      << a.error().message;
  auto t = nb::parse_bench_json(
      R"({"schema_version":1,"result":"ok","rows":[],"nccl_transport":{"network":"IB"}})");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("/nccl_transport/paths: missing"), std::string::npos)
      << t.error().message;
}
