// The private sysfs reader: parsers and the port scan.
#include "ib/ib_sysfs.h"

#include <gtest/gtest.h>

#include "ib_test_util.h"

namespace vigil::ib {
namespace {

using ib_test::TempDir;

TEST(ib_sysfs, parses_state_lines_as_written_by_the_kernel) {
  auto st = parse_numbered_state("4: ACTIVE\n");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->code, 4);
  EXPECT_EQ(st->text, "ACTIVE");
  auto phys = parse_numbered_state("5: LinkUp\n");
  ASSERT_TRUE(phys);
  EXPECT_EQ(phys->code, 5);
  EXPECT_EQ(phys->text, "LinkUp");
}

TEST(ib_sysfs, rejects_malformed_state_lines) {
  EXPECT_FALSE(parse_numbered_state(""));
  EXPECT_FALSE(parse_numbered_state("ACTIVE"));
  EXPECT_FALSE(parse_numbered_state("4"));
  EXPECT_FALSE(parse_numbered_state("4:"));
  EXPECT_FALSE(parse_numbered_state("x4: ACTIVE"));
}

TEST(ib_sysfs, parses_rates_in_gbit_per_second) {
  EXPECT_EQ(parse_rate_gbps("400 Gb/sec (4X NDR)\n"), 400.0);
  EXPECT_EQ(parse_rate_gbps("200 Gb/sec (2X NDR)"), 200.0);
  EXPECT_EQ(parse_rate_gbps("2.5 Gb/sec (1X SDR)"), 2.5);
  EXPECT_FALSE(parse_rate_gbps("400"));
  EXPECT_FALSE(parse_rate_gbps("fast"));
  EXPECT_FALSE(parse_rate_gbps("-1 Gb/sec"));
}

TEST(ib_sysfs, parses_decimal_counters_and_rejects_anything_else) {
  EXPECT_EQ(parse_counter("0\n"), 0u);
  EXPECT_EQ(parse_counter("65535"), 65535u);
  EXPECT_EQ(parse_counter("18446744073709551615\n"), 18446744073709551615ull);
  EXPECT_FALSE(parse_counter(""));
  EXPECT_FALSE(parse_counter("-1"));
  EXPECT_FALSE(parse_counter("12abc"));
  EXPECT_FALSE(parse_counter("N/A (no PMA)"));
}

TEST(ib_sysfs, orders_hca_names_by_their_number) {
  EXPECT_TRUE(natural_less("mlx5_2", "mlx5_10"));
  EXPECT_FALSE(natural_less("mlx5_10", "mlx5_2"));
  EXPECT_TRUE(natural_less("mlx5_1", "mlx5_1a"));
  EXPECT_FALSE(natural_less("mlx5_1", "mlx5_1"));
}

TEST(ib_sysfs, counter_widths_saturate_where_the_kernel_says) {
  auto saturated = [](std::string_view name) -> std::uint64_t {
    for (const auto& c : kErrorCounters.specs) {
      if (c.name == name) return c.saturated();
    }
    return 0;
  };
  EXPECT_EQ(saturated("symbol_error"), 65535u);
  EXPECT_EQ(saturated("link_downed"), 255u);
  EXPECT_EQ(saturated("local_link_integrity_errors"), 15u);
  EXPECT_EQ(saturated("port_xmit_discards"), 65535u);
}

TEST(ib_sysfs, scan_lists_infiniband_ports_and_ignores_ethernet) {
  auto scan = scan_ports(ib_test::fixture("healthy_8x_ndr"));
  ASSERT_TRUE(scan) << scan.error().to_string();
  EXPECT_TRUE(scan->class_dir_present);
  ASSERT_EQ(scan->ports.size(), 8u);
  EXPECT_EQ(scan->ports.front().id(), "mlx5_0/1");
  EXPECT_EQ(scan->ports.back().id(), "mlx5_7/1");
  ASSERT_EQ(scan->ignored.size(), 1u);
  EXPECT_EQ(scan->ignored.front(), "mlx5_8/1 (Ethernet)");
  EXPECT_TRUE(scan->errors.empty());
}

TEST(ib_sysfs, scan_orders_ten_hcas_numerically) {
  TempDir tmp;
  for (int i = 0; i < 11; ++i) {
    ib_test::write_file(
        ib_test::port_dir(tmp.path(), "mlx5_" + std::to_string(i), "1") / "link_layer",
        "InfiniBand\n");
  }
  auto scan = scan_ports(tmp.path());
  ASSERT_TRUE(scan) << scan.error().to_string();
  ASSERT_EQ(scan->ports.size(), 11u);
  EXPECT_EQ(scan->ports[2].id(), "mlx5_2/1");
  EXPECT_EQ(scan->ports[10].id(), "mlx5_10/1");
}

TEST(ib_sysfs, scan_of_a_missing_root_is_an_error_naming_it) {
  auto scan = scan_ports("/nonexistent/vigil-sysfs-root");
  ASSERT_FALSE(scan);
  EXPECT_NE(scan.error().to_string().find("/nonexistent/vigil-sysfs-root"), std::string::npos);
}

TEST(ib_sysfs, read_port_status_names_the_malformed_file) {
  TempDir tmp;
  auto root = ib_test::copy_fixture("healthy_8x_ndr", tmp);
  ib_test::write_file(ib_test::port_dir(root, "mlx5_4", "1") / "phys_state", "garbage\n");
  auto scan = scan_ports(root);
  ASSERT_TRUE(scan);
  auto st = read_port_status(scan->ports[4]);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().where.find("mlx5_4/ports/1/phys_state"), std::string::npos);
  EXPECT_NE(st.error().message.find("garbage"), std::string::npos);
}

}  // namespace
}  // namespace vigil::ib
