// ib_counters: deltas between runs through a state dir, resets, saturation, errors.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ib_test_util.h"

namespace vigil {
namespace {

using namespace ib_test;

CheckResult run_counters(const CheckContext& ctx) { return make_ib_counters_check()->run(ctx); }

// An NDR SKU with the symbol error threshold of docs/checks-ib.md (fail above 9 per interval).
SkuConfig counters_sku() {
  SkuConfig sku = ib_sku(8, 400);
  sku.thresholds["ib_counters"]["symbol_error_delta"] = threshold(Op::kLe, 9, 0, "count");
  sku.thresholds["ib_counters"]["link_downed_delta"] = threshold(Op::kLe, 4, 0, "count");
  return sku;
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

TEST(ib_counters, without_state_dir_reports_absolute_values_under_their_own_names) {
  const SkuConfig sku = counters_sku();
  CheckResult r = run_counters(context(fixture("symbol_errors_after"), &sku));
  EXPECT_EQ(r.check, "ib_counters");
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_NE(r.message.find("no state dir"), std::string::npos) << r.message;
  const Measurement* m = find(r, "symbol_error", "mlx5_0/1");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->value, 125);
  EXPECT_EQ(m->unit, "count");
  EXPECT_FALSE(m->threshold);  // delta thresholds never judge lifetime totals
  EXPECT_EQ(find(r, "symbol_error_delta", "mlx5_0/1"), nullptr);
  EXPECT_EQ(r.measurements.size(), 8u * 8u);
}

TEST(ib_counters, first_run_records_a_baseline_with_zero_deltas) {
  TempDir state;
  const SkuConfig sku = counters_sku();
  CheckResult r = run_counters(context(fixture("symbol_errors_before"), &sku, state.path()));
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(r.message, "baseline recorded");
  EXPECT_EQ(r.measurements.size(), 8u * 8u);
  for (const auto& m : r.measurements) {
    EXPECT_EQ(m.value, 0) << m.name << " " << *m.port;
    EXPECT_EQ(m.name.substr(m.name.size() - 6), "_delta");
  }
  const fs::path file = fs::path(state.path()) / "ib_counters.gpu-0.json";
  ASSERT_TRUE(fs::exists(file));
  auto j = read_json(file);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["counters"]["mlx5_0/1 symbol_error"], 5);
  EXPECT_EQ(j["counters"]["mlx5_7/1 port_xmit_discards"], 0);
  EXPECT_FALSE(
      j["counters"].contains("mlx5_8/1 symbol_error"));  // the Ethernet port is not tracked
}

TEST(ib_counters, climbing_symbol_errors_fail_on_the_second_run) {
  TempDir state;
  const SkuConfig sku = counters_sku();
  CheckResult first = run_counters(context(fixture("symbol_errors_before"), &sku, state.path()));
  ASSERT_EQ(first.status, Status::kPass) << first.message;
  CheckResult r = run_counters(context(fixture("symbol_errors_after"), &sku, state.path()));
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "mlx5_0/1 symbol_error +120");
  EXPECT_EQ(r.fault_code, "VIGIL-IB-COUNTER-SYMBOL-ERROR");
  const Measurement* m = find(r, "symbol_error_delta", "mlx5_0/1");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->value, 120);
  ASSERT_TRUE(m->threshold);
  EXPECT_EQ(m->threshold->fail, 9);
  EXPECT_EQ(find(r, "symbol_error_delta", "mlx5_1/1")->value, 0);
}

// A RoCE fabric (SKU infiniband.link_layer: Ethernet): the Ethernet ports count, the mlx5
// hw_counters judge them, and an InfiniBand port beside them is not this fabric's.
TEST(ib_counters, a_roce_sku_judges_its_ethernet_ports_by_their_transport_counters) {
  TempDir state;
  SkuConfig sku = ib_sku(8, 400);
  sku.infiniband.link_layer = "Ethernet";
  sku.thresholds["ib_counters"]["local_ack_timeout_err_delta"] =
      threshold(Op::kLe, 0, std::nullopt, "count");
  CheckResult first = run_counters(context(fixture("roce_before"), &sku, state.path()));
  ASSERT_EQ(first.status, Status::kPass) << first.message;
  EXPECT_EQ(find(first, "out_of_sequence_delta", "mlx5_2/1")->value, 0);
  EXPECT_EQ(find(first, "symbol_error_delta", "mlx5_2/1"), nullptr);     // not an IB port's figure
  EXPECT_EQ(find(first, "out_of_sequence_delta", "mlx5_8/1"), nullptr);  // the IB port
  CheckResult r = run_counters(context(fixture("roce_after"), &sku, state.path()));
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_EQ(r.message, "mlx5_2/1 local_ack_timeout_err +3");
  EXPECT_EQ(r.fault_code, "VIGIL-IB-COUNTER-LOCAL-ACK-TIMEOUT-ERR");
  EXPECT_EQ(find(r, "out_of_sequence_delta", "mlx5_2/1")->value, 5000);  // no bound: reported
  // The same tree on an InfiniBand SKU: only mlx5_8 is a port, and it has no hw_counters.
  TempDir ib_state;
  const SkuConfig ib = ib_sku(8, 400);
  CheckResult as_ib = run_counters(context(fixture("roce_after"), &ib, ib_state.path()));
  EXPECT_EQ(find(as_ib, "out_of_sequence_delta", "mlx5_2/1"), nullptr);
  EXPECT_NE(find(as_ib, "symbol_error_delta", "mlx5_8/1"), nullptr);
}

// The mlx5 driver creates only the counters the HCA has (counters.c capabilities): a missing
// hw_counters file is a counter left out, never an error; an unreadable one is.
TEST(ib_counters, a_roce_counter_the_hca_does_not_have_is_left_out) {
  TempDir dir, state;
  const fs::path root = copy_fixture("roce_after", dir);
  fs::remove(port_dir(root, "mlx5_2", "1") / "hw_counters" / "local_ack_timeout_err");
  SkuConfig sku = ib_sku(8, 400);
  sku.infiniband.link_layer = "Ethernet";
  CheckResult r = run_counters(context(root, &sku, state.path()));
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(find(r, "local_ack_timeout_err_delta", "mlx5_2/1"), nullptr);
  EXPECT_NE(find(r, "local_ack_timeout_err_delta", "mlx5_3/1"), nullptr);
  make_unreadable(port_dir(root, "mlx5_3", "1") / "hw_counters" / "packet_seq_err");
  EXPECT_EQ(run_counters(context(root, &sku, state.path())).status, Status::kError);
}

TEST(ib_counters, an_unchanged_second_run_passes) {
  TempDir state;
  const SkuConfig sku = counters_sku();
  (void)run_counters(context(fixture("symbol_errors_after"), &sku, state.path()));
  CheckResult r = run_counters(context(fixture("symbol_errors_after"), &sku, state.path()));
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(r.message.rfind("no new errors on 8 ports", 0), 0u) << r.message;
}

TEST(ib_counters, increases_are_reported_but_pass_without_a_sku) {
  TempDir state;
  (void)run_counters(context(fixture("symbol_errors_before"), nullptr, state.path()));
  CheckResult r = run_counters(context(fixture("symbol_errors_after"), nullptr, state.path()));
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(find(r, "symbol_error_delta", "mlx5_0/1")->value, 120);
  EXPECT_NE(r.message.find("mlx5_0/1 symbol_error +120"), std::string::npos) << r.message;
}

TEST(ib_counters, an_increase_inside_the_warn_band_warns) {
  TempDir state;
  SkuConfig sku = ib_sku(8, 400);
  sku.thresholds["ib_counters"]["symbol_error_delta"] = threshold(Op::kLe, 1000, 9, "count");
  (void)run_counters(context(fixture("symbol_errors_before"), &sku, state.path()));
  CheckResult r = run_counters(context(fixture("symbol_errors_after"), &sku, state.path()));
  EXPECT_EQ(r.status, Status::kWarn);
  EXPECT_EQ(r.message, "mlx5_0/1 symbol_error +120");
}

TEST(ib_counters, a_counter_that_went_down_restarts_the_baseline_without_failing) {
  TempDir state;
  const SkuConfig sku = counters_sku();
  (void)run_counters(context(fixture("symbol_errors_after"), &sku, state.path()));
  // 125 -> 5: cleared (perfquery -x or driver reload) in between.
  CheckResult reset = run_counters(context(fixture("symbol_errors_before"), &sku, state.path()));
  EXPECT_EQ(reset.status, Status::kPass) << reset.message;
  EXPECT_EQ(find(reset, "symbol_error_delta", "mlx5_0/1")->value, 0);
  EXPECT_NE(reset.message.find("counter reset, baseline restarted: mlx5_0/1 symbol_error"),
            std::string::npos)
      << reset.message;
  // The new baseline is 5, so climbing back to 125 is +120 again.
  CheckResult again = run_counters(context(fixture("symbol_errors_after"), &sku, state.path()));
  EXPECT_EQ(again.status, Status::kFail);
  EXPECT_EQ(find(again, "symbol_error_delta", "mlx5_0/1")->value, 120);
}

TEST(ib_counters, each_node_keeps_its_own_baseline) {
  TempDir state;
  const SkuConfig sku = counters_sku();
  (void)run_counters(context(fixture("symbol_errors_before"), &sku, state.path(), "gpu-0"));
  CheckResult other =
      run_counters(context(fixture("symbol_errors_after"), &sku, state.path(), "gpu-1"));
  EXPECT_EQ(other.status, Status::kPass) << other.message;
  EXPECT_EQ(other.message, "baseline recorded");
  EXPECT_TRUE(fs::exists(fs::path(state.path()) / "ib_counters.gpu-0.json"));
  EXPECT_TRUE(fs::exists(fs::path(state.path()) / "ib_counters.gpu-1.json"));
}

TEST(ib_counters, a_new_port_starts_its_own_baseline) {
  TempDir state, tmp;
  auto root = copy_fixture("symbol_errors_before", tmp);
  fs::path hidden = fs::path(tmp.path()) / "mlx5_7";
  fs::rename(root / "sys/class/infiniband/mlx5_7", hidden);
  const SkuConfig sku = counters_sku();
  (void)run_counters(context(root, &sku, state.path()));
  fs::rename(hidden, root / "sys/class/infiniband/mlx5_7");
  CheckResult r = run_counters(context(root, &sku, state.path()));
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_NE(r.message.find("baseline recorded for mlx5_7/1"), std::string::npos) << r.message;
}

TEST(ib_counters, a_malformed_state_file_is_replaced_by_a_new_baseline) {
  TempDir state;
  write_file(fs::path(state.path()) / "ib_counters.gpu-0.json", "{not json");
  const SkuConfig sku = counters_sku();
  CheckResult r = run_counters(context(fixture("symbol_errors_after"), &sku, state.path()));
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(r.message, "baseline recorded (previous state malformed)");
  EXPECT_EQ(read_json(fs::path(state.path()) /
                      "ib_counters.gpu-0.json")["counters"]["mlx5_0/1 symbol_error"],
            125);
}

TEST(ib_counters, a_state_dir_that_cannot_be_written_is_an_error) {
  TempDir tmp;
  const fs::path not_a_dir = fs::path(tmp.path()) / "file";
  write_file(not_a_dir, "x");
  const SkuConfig sku = counters_sku();
  CheckResult r = run_counters(context(fixture("healthy_8x_ndr"), &sku, not_a_dir.string()));
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_EQ(r.fault_code, "VIGIL-IB-STATE-UNWRITABLE");
  EXPECT_NE(r.message.find(not_a_dir.string()), std::string::npos) << r.message;
}

TEST(ib_counters, an_unreadable_counter_is_an_error_naming_the_path) {
  TempDir tmp, state;
  auto root = copy_fixture("healthy_8x_ndr", tmp);
  const fs::path counter = port_dir(root, "mlx5_4", "1") / "counters" / "port_rcv_errors";
  make_unreadable(counter);
  const SkuConfig sku = counters_sku();
  CheckResult r = run_counters(context(root, &sku, state.path()));
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_EQ(r.fault_code, "VIGIL-IB-SYSFS-UNREADABLE");
  EXPECT_NE(r.message.find(counter.string()), std::string::npos) << r.message;
}

TEST(ib_counters, a_non_numeric_counter_is_an_error_naming_the_path) {
  TempDir tmp;
  auto root = copy_fixture("healthy_8x_ndr", tmp);
  write_file(port_dir(root, "mlx5_1", "1") / "counters" / "link_downed", "N/A (no PMA)\n");
  CheckResult r = run_counters(context(root));
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_NE(r.message.find("mlx5_1/ports/1/counters/link_downed"), std::string::npos) << r.message;
}

TEST(ib_counters, a_saturated_counter_is_called_out) {
  TempDir tmp, state;
  auto root = copy_fixture("healthy_8x_ndr", tmp);
  write_file(port_dir(root, "mlx5_2", "1") / "counters" / "symbol_error", "65535\n");
  CheckResult r = run_counters(context(root, nullptr, state.path()));
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_NE(r.message.find("saturated"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("mlx5_2/1 symbol_error"), std::string::npos) << r.message;
}

TEST(ib_counters, no_infiniband_is_skipped_and_a_missing_root_is_an_error) {
  TempDir tmp;
  fs::create_directories(fs::path(tmp.path()) / "sys" / "class" / "net");
  const SkuConfig sku = counters_sku();
  CheckResult none = run_counters(context(tmp.path(), &sku));
  EXPECT_EQ(none.status, Status::kSkipped);
  EXPECT_EQ(none.message, "no InfiniBand ports");
  CheckResult missing = run_counters(context("/nonexistent/vigil-sysfs-root", &sku));
  EXPECT_EQ(missing.status, Status::kError);
  EXPECT_NE(missing.message.find("/nonexistent/vigil-sysfs-root"), std::string::npos);
}

TEST(ib_counters, the_other_fixtures_report_without_failing_on_first_run) {
  const SkuConfig sku = counters_sku();
  for (const std::string name : {"healthy_8x_ndr", "one_port_down", "reduced_rate"}) {
    TempDir state;
    CheckResult r = run_counters(context(fixture(name), &sku, state.path()));
    EXPECT_EQ(r.status, Status::kPass) << name << ": " << r.message;
    EXPECT_EQ(r.measurements.size(), 8u * 8u) << name;
  }
  for (const std::string node : {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}) {
    TempDir state;
    CheckResult r = run_counters(context(node_fixture(node), &sku, state.path(), node));
    EXPECT_EQ(r.status, Status::kPass) << node << ": " << r.message;
  }
}

}  // namespace
}  // namespace vigil
