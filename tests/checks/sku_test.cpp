#include "vigil/checks/sku.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "temp_dir.h"
#include "vigil/checks/registry.h"

namespace vigil {

namespace fs = std::filesystem;

namespace {

using testing::TempDir;

constexpr const char* kH100 = R"(sku: H100-SXM5-80GB
match:
  gpu_names: ["NVIDIA H100 80GB HBM3"]
  pci_device_ids: [0x2330]
  gpu_count: 8
infiniband:
  ports: 8
  rate_gbps: 400
thresholds:
  gpu_count:
    gpu_count: {op: ">=", fail: 8, unit: count}
  nvml_ecc:
    volatile_uncorrected_ecc: {op: "<=", fail: 0, unit: count}
)";

std::string first_error(const std::string& yaml) {
  TempDir d;
  auto loaded = load_sku_file(d.write("x.yaml", yaml), known_check_names());
  EXPECT_FALSE(loaded);
  return loaded.errors.empty() ? "" : loaded.errors.front().to_string().substr(d.path().size() + 1);
}

}  // namespace

TEST(SkuFile, valid_file_loads_with_thresholds) {
  TempDir d;
  auto loaded = load_sku_file(d.write("h100.yaml", kH100), known_check_names());
  ASSERT_TRUE(loaded) << (loaded.errors.empty() ? "" : loaded.errors[0].to_string());
  const SkuConfig& s = *loaded.value;
  EXPECT_EQ(s.name, "H100-SXM5-80GB");
  EXPECT_EQ(s.match.pci_device_ids, std::vector<unsigned>{0x2330});
  EXPECT_EQ(s.infiniband.ports, 8);
  ASSERT_NE(s.find("nvml_ecc", "volatile_uncorrected_ecc"), nullptr);
  EXPECT_EQ(s.find("nvml_ecc", "volatile_uncorrected_ecc")->op, Op::kLe);
  EXPECT_EQ(s.find("nvml_ecc", "nope"), nullptr);
}

// Calibration flags (docs/thresholds.md): `unconfirmed` is a boolean; `calibrated` says when and
// from what data, and a bound cannot be both.
TEST(SkuFile, unconfirmed_and_calibrated_flags_load_and_contradictions_are_errors) {
  TempDir d;
  std::string yaml = kH100;
  yaml +=
      "  gpu_hbm:\n"
      "    hbm_bandwidth: {op: \">=\", fail: 1905, warn: 2400, unit: GB/s, unconfirmed: true}\n"
      "  gpu_gemm:\n"
      "    gemm_bf16_tflops: {op: \">=\", fail: 580, warn: 610, unit: TFLOP/s, calibrated: "
      "\"2026-11-26 from 40 nodes\"}\n";
  auto loaded = load_sku_file(d.write("h100.yaml", yaml), known_check_names());
  ASSERT_TRUE(loaded) << (loaded.errors.empty() ? "" : loaded.errors[0].to_string());
  EXPECT_TRUE(loaded.value->find("gpu_hbm", "hbm_bandwidth")->unconfirmed);
  EXPECT_FALSE(loaded.value->find("gpu_gemm", "gemm_bf16_tflops")->unconfirmed);
  EXPECT_EQ(loaded.value->find("gpu_gemm", "gemm_bf16_tflops")->calibrated,
            "2026-11-26 from 40 nodes");
  EXPECT_FALSE(loaded.value->find("nvml_ecc", "volatile_uncorrected_ecc")->unconfirmed);

  std::string both = kH100;
  both +=
      "  gpu_hbm:\n    hbm_bandwidth: {op: \">=\", fail: 1, unit: GB/s, unconfirmed: true, "
      "calibrated: \"x\"}\n";
  EXPECT_NE(first_error(both).find("hbm_bandwidth.calibrated: a calibrated bound is confirmed"),
            std::string::npos)
      << first_error(both);
  std::string not_bool = kH100;
  not_bool +=
      "  gpu_hbm:\n    hbm_bandwidth: {op: \">=\", fail: 1, unit: GB/s, unconfirmed: yes}\n";
  EXPECT_NE(first_error(not_bool).find("hbm_bandwidth.unconfirmed: must be true or false"),
            std::string::npos)
      << first_error(not_bool);
}

// The NCCL algorithm an all_reduce floor was measured with: one of NCCL's names, or an error.
TEST(SkuFile, an_allreduce_floor_names_the_nccl_algorithm_it_was_measured_with) {
  TempDir d;
  std::string yaml = kH100;
  yaml +=
      "  nccl_allreduce_nvlink:\n    busbw: {op: \">=\", fail: 420, unit: GB/s, "
      "nccl_algorithm: NVLS}\n";
  auto loaded = load_sku_file(d.write("h100.yaml", yaml), known_check_names());
  ASSERT_TRUE(loaded) << (loaded.errors.empty() ? "" : loaded.errors[0].to_string());
  EXPECT_EQ(loaded.value->find("nccl_allreduce_nvlink", "busbw")->nccl_algorithm, "NVLS");
  std::string bad = kH100;
  bad +=
      "  nccl_allreduce_nvlink:\n    busbw: {op: \">=\", fail: 420, unit: GB/s, "
      "nccl_algorithm: nvls}\n";
  EXPECT_NE(first_error(bad).find("busbw.nccl_algorithm: unknown NCCL algorithm 'nvls'"),
            std::string::npos)
      << first_error(bad);
  std::string elsewhere = kH100;
  elsewhere +=
      "  gpu_hbm:\n    hbm_bandwidth: {op: \">=\", fail: 1, unit: GB/s, "
      "nccl_algorithm: Ring}\n";
  EXPECT_NE(first_error(elsewhere).find("only an all_reduce check's busbw names an NCCL algorithm"),
            std::string::npos)
      << first_error(elsewhere);
}

TEST(SkuFile, errors_name_file_line_and_field) {
  std::string yaml = kH100;
  yaml += "    aggregate_corrected_ecc: {op: \"<=\", fail: 10, warn: 20, unit: count}\n";
  EXPECT_EQ(first_error(yaml),
            "x.yaml:14: thresholds.nvml_ecc.aggregate_corrected_ecc.warn: warn 20 must be <= fail "
            "10 for op <=");
}

TEST(SkuFile, unknown_keys_missing_unit_and_unknown_checks_are_errors) {
  EXPECT_EQ(
      first_error(std::string(kH100) + "colour: blue\n").rfind("x.yaml:14: colour: unknown key", 0),
      0u);
  std::string no_unit = kH100;
  no_unit.replace(no_unit.find(", unit: count}\n  nvml_ecc"), 14, "}");
  EXPECT_NE(first_error(no_unit).find("thresholds.gpu_count.gpu_count.unit: missing"),
            std::string::npos);
  EXPECT_NE(
      first_error(std::string(kH100) + "  nvml_ecco:\n    x: {op: \">=\", fail: 1, unit: count}\n")
          .find("thresholds.nvml_ecco: unknown check"),
      std::string::npos);
  EXPECT_NE(first_error("sku: [unclosed\n").find("YAML syntax error"), std::string::npos);
  // A value wider than its field is an error, not cut to fit: 0x100002330 is no H100 (0x2330).
  std::string wide = kH100;
  wide.replace(wide.find("[0x2330]"), 8, "[0x100002330]");
  EXPECT_NE(first_error(wide).find("match.pci_device_ids: must be <= 65535"), std::string::npos)
      << first_error(wide);
  std::string many = kH100;
  many.replace(many.find("gpu_count: 8"), 12, "gpu_count: 4294967304");
  EXPECT_NE(first_error(many).find("match.gpu_count: must be <= 1024"), std::string::npos);
}

// The compute fabric's link layer, as sysfs spells it: InfiniBand (the default) or Ethernet
// (RoCE); anything else is an error naming the field.
TEST(SkuFile, the_fabric_link_layer_is_infiniband_or_ethernet) {
  TempDir d;
  auto plain = load_sku_file(d.write("a.yaml", kH100), known_check_names());
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain.value->infiniband.link_layer, "InfiniBand");
  std::string roce = kH100;
  roce.replace(roce.find("  rate_gbps: 400\n"), 16, "  rate_gbps: 400\n  link_layer: Ethernet\n");
  auto loaded = load_sku_file(d.write("b.yaml", roce), known_check_names());
  ASSERT_TRUE(loaded) << loaded.errors.front().to_string();
  EXPECT_EQ(loaded.value->infiniband.link_layer, "Ethernet");
  std::string bad = kH100;
  bad.replace(bad.find("  rate_gbps: 400\n"), 16, "  rate_gbps: 400\n  link_layer: RoCE\n");
  EXPECT_EQ(first_error(bad).rfind("x.yaml:9: infiniband.link_layer: must be InfiniBand or "
                                   "Ethernet",
                                   0),
            0u)
      << first_error(bad);
}

// The fabric's HCAs (infiniband.devices): names or fnmatch patterns; anything that cannot be an
// HCA name is an error naming the entry.
TEST(SkuFile, the_fabric_devices_are_hca_names_or_patterns) {
  TempDir d;
  std::string listed = kH100;
  listed.replace(listed.find("  rate_gbps: 400\n"), 16,
                 "  rate_gbps: 400\n  devices: [mlx5_0, \"mlx5_1*\", \"rocep?s0\"]\n");
  auto loaded = load_sku_file(d.write("b.yaml", listed), known_check_names());
  ASSERT_TRUE(loaded) << loaded.errors.front().to_string();
  EXPECT_EQ(loaded.value->infiniband.devices,
            (std::vector<std::string>{"mlx5_0", "mlx5_1*", "rocep?s0"}));
  for (const char* bad_list : {"devices: [\"mlx5 0\"]", "devices: []", "devices: mlx5_0"}) {
    std::string bad = kH100;
    bad.replace(bad.find("  rate_gbps: 400\n"), 16,
                std::string("  rate_gbps: 400\n  ") + bad_list + "\n");
    EXPECT_NE(first_error(bad).find("infiniband.devices"), std::string::npos)
        << bad_list << ": " << first_error(bad);
  }
}

TEST(SkuFile, gpudirect_is_a_boolean_and_off_unless_said) {
  TempDir d;
  auto plain = load_sku_file(d.write("a.yaml", kH100), known_check_names());
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain.value->infiniband.gpudirect);
  std::string gdr = kH100;
  gdr.replace(gdr.find("  rate_gbps: 400\n"), 16, "  rate_gbps: 400\n  gpudirect: true\n");
  auto loaded = load_sku_file(d.write("b.yaml", gdr), known_check_names());
  ASSERT_TRUE(loaded) << loaded.errors.front().to_string();
  EXPECT_TRUE(loaded.value->infiniband.gpudirect);
  std::string bad = kH100;
  bad.replace(bad.find("  rate_gbps: 400\n"), 16, "  rate_gbps: 400\n  gpudirect: yes\n");
  EXPECT_EQ(first_error(bad).rfind("x.yaml:9: infiniband.gpudirect: must be true or false", 0), 0u)
      << first_error(bad);
}

// nvlink.imex: a multi-node NVLink domain (NVL72), where nvlink_imex judges the IMEX daemon.
TEST(SkuFile, nvlink_imex_is_a_boolean_and_off_unless_said) {
  TempDir d;
  auto plain = load_sku_file(d.write("a.yaml", kH100), known_check_names());
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain.value->nvlink.imex);
  auto loaded = load_sku_file(d.write("b.yaml", std::string(kH100) + "nvlink:\n  imex: true\n"),
                              known_check_names());
  ASSERT_TRUE(loaded) << loaded.errors.front().to_string();
  EXPECT_TRUE(loaded.value->nvlink.imex);
  EXPECT_NE(first_error(std::string(kH100) + "nvlink:\n  imex: \"true\"\n")
                .find("nvlink.imex: must be true or false"),
            std::string::npos);
  EXPECT_NE(first_error(std::string(kH100) + "nvlink:\n  domain: nvl72\n").find("nvlink"),
            std::string::npos);
}

// services.required: the units host_services requires, with systemd's default suffix added.
TEST(SkuFile, required_services_are_unit_names) {
  TempDir d;
  auto loaded = load_sku_file(
      d.write("a.yaml", std::string(kH100) +
                            "services:\n  required: [nvidia-fabricmanager, lustre-client.mount]\n"),
      known_check_names());
  ASSERT_TRUE(loaded) << loaded.errors.front().to_string();
  EXPECT_EQ(loaded.value->services.required,
            (std::vector<std::string>{"nvidia-fabricmanager.service", "lustre-client.mount"}));
  EXPECT_EQ(first_error(std::string(kH100) + "services:\n  required: [\"--now\"]\n")
                .rfind("x.yaml:15: services.required: '--now' is not a systemd unit name", 0),
            0u)
      << first_error(std::string(kH100) + "services:\n  required: [\"--now\"]\n");
  EXPECT_NE(first_error(std::string(kH100) + "services:\n  required: nvidia-imex\n")
                .find("services.required: must be a list"),
            std::string::npos);
  EXPECT_NE(first_error(std::string(kH100) + "services:\n  optional: [x]\n").find("services"),
            std::string::npos);
}

// mounts: the filesystems host_mounts requires.
TEST(SkuFile, mounts_are_absolute_paths_with_optional_type_rw_and_free_space) {
  TempDir d;
  auto loaded = load_sku_file(
      d.write("a.yaml", std::string(kH100) +
                            "mounts:\n  - {path: /lustre, fstype: lustre, min_free_percent: 5}\n"
                            "  - {path: /opt/ro, rw: false}\n"),
      known_check_names());
  ASSERT_TRUE(loaded) << loaded.errors.front().to_string();
  ASSERT_EQ(loaded.value->mounts.size(), 2u);
  EXPECT_EQ(loaded.value->mounts[0].fstype, "lustre");
  EXPECT_TRUE(loaded.value->mounts[0].rw);
  EXPECT_EQ(loaded.value->mounts[0].min_free_percent, 5.0);
  EXPECT_FALSE(loaded.value->mounts[1].rw);
  EXPECT_NE(first_error(std::string(kH100) + "mounts:\n  - {path: lustre}\n")
                .find("mounts.path: 'lustre' is not an absolute path"),
            std::string::npos);
  EXPECT_NE(first_error(std::string(kH100) + "mounts:\n  - {path: /x, min_free_percent: 120}\n")
                .find("mounts.min_free_percent: must be 0-100"),
            std::string::npos);
  EXPECT_NE(
      first_error(std::string(kH100) + "mounts:\n  - {path: /x, options: ro}\n").find("mounts"),
      std::string::npos);
}

TEST(SkuFile, keys_that_are_lists_or_mappings_are_errors_not_crashes) {
  // tests/fuzz/regressions/fuzz_thresholds/key-is-not-a-scalar, reduced: "? key: value" makes
  // the key a mapping.
  EXPECT_NE(first_error(std::string(kH100) + "    ? volatile: {op: \"<=\", fail: 0, unit: count}\n")
                .find("thresholds.nvml_ecc: keys must be measurement names"),
            std::string::npos);
  EXPECT_NE(first_error(std::string(kH100) + "  ? [a, b]: {}\n")
                .find("thresholds: keys must be check names"),
            std::string::npos);
  EXPECT_NE(first_error(std::string(kH100) + "? [a]: 1\n").find("keys must be plain names"),
            std::string::npos);
}

TEST(SkuFile, values_that_are_lists_or_mappings_are_errors_not_crashes) {
  // CI's fuzz run (tests/fuzz/regressions/fuzz_thresholds/op-is-a-list) found "op" read as a
  // string without a look at its type: yaml-cpp threw and vigil-check died.
  std::string op_list = kH100;
  const std::string op = "{op: \">=\"";
  op_list.replace(op_list.find(op), op.size(), "{op: [\">=\"]");
  EXPECT_EQ(first_error(op_list),
            "x.yaml:11: thresholds.gpu_count.gpu_count.op: must be a non-empty string");
  EXPECT_EQ(first_error(std::string(kH100) + "description: {a: b}\n"),
            "x.yaml:14: description: must be a string");
  TempDir d;
  auto plain = load_sku_file(d.write("x.yaml", std::string(kH100) + "description: 8x H100\n"),
                             known_check_names());
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain.value->description, "8x H100");
}

TEST(SkuDir, duplicate_sku_names_are_an_error) {
  TempDir d;
  d.write("a.yaml", kH100);
  d.write("b.yaml", kH100);
  auto set = load_sku_dir(d.path(), known_check_names());
  ASSERT_FALSE(set);
  EXPECT_NE(set.errors.back().message.find("duplicate SKU 'H100-SXM5-80GB'"), std::string::npos);
}

// detection.json beside the SKU files is the site's detection settings (the drainer's
// detection.engine_file names the same file): loaded with them, and an error among theirs.
TEST(SkuDir, detection_json_beside_the_thresholds_is_loaded_and_checked_with_them) {
  TempDir d;
  d.write("h100.yaml", kH100);
  auto plain = load_sku_dir(d.path(), known_check_names());
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain.value->detection, nullptr);  // none: the defaults
  d.write("detection.json", R"({"margins": {"gemm": {"warn": 0.10, "fail": 0.20}}})");
  auto with = load_sku_dir(d.path(), known_check_names());
  ASSERT_TRUE(with) << with.errors[0].to_string();
  ASSERT_NE(with.value->detection, nullptr);
  EXPECT_DOUBLE_EQ(with.value->detection->margins.at("gemm").fail, 0.20);
  d.write("detection.json", R"({"margins": {"gemm": {"warn": 0.10, "fial": 0.20}}})");
  auto bad = load_sku_dir(d.path(), known_check_names());
  ASSERT_FALSE(bad);
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_NE(bad.errors[0].file.find("detection.json"), std::string::npos);
  EXPECT_NE(bad.errors[0].message.find("fial"), std::string::npos) << bad.errors[0].to_string();
}

TEST(SkuDir, shipped_threshold_files_are_valid) {
  auto set =
      load_sku_dir(std::string(VIGIL_SOURCE_DIR) + "/checks/thresholds", known_check_names());
  ASSERT_TRUE(set) << (set.errors.empty() ? "" : set.errors[0].to_string());
  for (const char* name : {"A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM-141GB", "B200-SXM-180GB",
                           "B300-SXM6", "GB200-NVL72-TRAY", "GB300-NVL72-TRAY"}) {
    EXPECT_NE(set.value->by_name(name), nullptr) << name;
  }
}

// The Blackwell SKUs no Vigil run has measured (issue 27): every performance floor, the NIC
// bounds sites build differently and the NVLink count not yet read from their driver only warn
// until a fleet confirms them; the absolute hardware findings (ECC, remaps, links down) do not
// wait. The NVL72 trays need IMEX; the HGX board does not.
TEST(SkuDir, unmeasured_blackwell_skus_hold_back_every_unproven_bound) {
  auto set =
      load_sku_dir(std::string(VIGIL_SOURCE_DIR) + "/checks/thresholds", known_check_names());
  ASSERT_TRUE(set);
  const std::set<std::string> unproven_checks = {"gpu_gemm",          "gpu_hbm",
                                                 "gpu_pcie_bw",       "nccl_allreduce_nvlink",
                                                 "nccl_allreduce_ib", "fabric_allreduce_ib",
                                                 "nvml_temperature"};
  const std::set<std::string> unproven_measurements = {"port_rate", "active_ports",
                                                       "nvlink_link_count"};
  for (const char* name : {"B300-SXM6", "GB200-NVL72-TRAY", "GB300-NVL72-TRAY"}) {
    const SkuConfig* sku = set.value->by_name(name);
    ASSERT_NE(sku, nullptr) << name;
    EXPECT_EQ(sku->nvlink.imex, std::string(name) != "B300-SXM6") << name;
    for (const auto& [check, bounds] : sku->thresholds)
      for (const auto& [measurement, t] : bounds)
        if (unproven_checks.count(check) || unproven_measurements.count(measurement))
          EXPECT_TRUE(t.unconfirmed) << name << " " << check << "." << measurement;
    EXPECT_FALSE(sku->find("nvml_ecc", "volatile_uncorrected_ecc")->unconfirmed) << name;
    EXPECT_FALSE(sku->find("nvml_nvlink", "nvlink_links_down")->unconfirmed) << name;
    ASSERT_NE(sku->find("nvml_nvlink", "nvlink_link_count"), nullptr) << name;
  }
}

TEST(SkuDetect, matches_by_name_or_device_id_and_keeps_sku_when_a_gpu_is_missing) {
  TempDir d;
  d.write("h100.yaml", kH100);
  auto set = load_sku_dir(d.path(), known_check_names());
  ASSERT_TRUE(set);
  GpuInventory eight{std::vector<std::string>(8, "NVIDIA H100 80GB HBM3"),
                     std::vector<unsigned>(8, 0x2330)};
  EXPECT_NE(detect_sku(*set.value, eight), nullptr);
  GpuInventory by_id{std::vector<std::string>(8, "Renamed GPU"), std::vector<unsigned>(8, 0x2330)};
  EXPECT_NE(detect_sku(*set.value, by_id), nullptr);
  GpuInventory seven{std::vector<std::string>(7, "NVIDIA H100 80GB HBM3"),
                     std::vector<unsigned>(7, 0x2330)};
  EXPECT_NE(detect_sku(*set.value, seven), nullptr) << "a node that lost a GPU keeps its SKU";
  GpuInventory a100{std::vector<std::string>(8, "NVIDIA A100-SXM4-80GB"),
                    std::vector<unsigned>(8, 0x20B2)};
  EXPECT_EQ(detect_sku(*set.value, a100), nullptr);
  EXPECT_EQ(detect_sku(*set.value, GpuInventory{}), nullptr);
}

// The lookalikes of review F05, each with the NVML name and PCI device id NVIDIA ships (device
// ids: the PCI ID repository and DCGM's diag-skus.yaml): none may be judged as the SKU whose
// name its own contains.
GpuInventory gpus(int n, const char* name, unsigned id) {
  return GpuInventory{std::vector<std::string>(n, name), std::vector<unsigned>(n, id)};
}

TEST(SkuDetect, lookalike_products_never_match_by_a_substring_of_their_name) {
  auto set =
      load_sku_dir(std::string(VIGIL_SOURCE_DIR) + "/checks/thresholds", known_check_names());
  ASSERT_TRUE(set);
  // Grace Hopper superchip: one GPU, "H200" in its name.
  EXPECT_EQ(detect_sku(*set.value, gpus(1, "NVIDIA GH200 480GB", 0x2342)), nullptr);
  EXPECT_EQ(detect_sku(*set.value, gpus(1, "NVIDIA GH200 480GB", 0)), nullptr);
  // GB200 NVL72 compute tray: four GPUs, "B200" in their name: its own file, never B200's.
  EXPECT_EQ(detect_sku(*set.value, gpus(4, "NVIDIA GB200", 0x2941))->name, "GB200-NVL72-TRAY");
  EXPECT_EQ(detect_sku(*set.value, gpus(4, "NVIDIA GB200", 0))->name, "GB200-NVL72-TRAY");
  // Early drivers named it "NVIDIA Graphics Device" (coreweave/nccl-tests README): the id decides.
  EXPECT_EQ(detect_sku(*set.value, gpus(4, "NVIDIA Graphics Device", 0x2941))->name,
            "GB200-NVL72-TRAY");
  // GB300 tray and HGX B300 (device ids from NVIDIA's open-gpu-kernel-modules README).
  EXPECT_EQ(detect_sku(*set.value, gpus(4, "NVIDIA GB300", 0x31C2))->name, "GB300-NVL72-TRAY");
  EXPECT_EQ(detect_sku(*set.value, gpus(8, "NVIDIA B300 SXM6 AC", 0x3182))->name, "B300-SXM6");
  // H200 NVL: PCIe cards with NVLink bridges, no NVSwitch floor applies.
  EXPECT_EQ(detect_sku(*set.value, gpus(8, "NVIDIA H200 NVL", 0x233B)), nullptr);
  // H100 PCIe: the same die as H100 SXM, another board and power limit.
  EXPECT_EQ(detect_sku(*set.value, gpus(8, "NVIDIA H100 PCIe", 0x2331)), nullptr);
  // The real ones still match, by id and (without an id) by their full name.
  const SkuConfig* h200 = detect_sku(*set.value, gpus(8, "NVIDIA H200", 0x2335));
  ASSERT_NE(h200, nullptr);
  EXPECT_EQ(h200->name, "H200-SXM-141GB");
  ASSERT_NE(detect_sku(*set.value, gpus(8, "nvidia h200 ", 0)), nullptr) << "case and blanks";
  EXPECT_EQ(detect_sku(*set.value, gpus(8, "NVIDIA B200", 0x2901))->name, "B200-SXM-180GB");
}

TEST(SkuDetect, a_device_id_decides_over_the_name_when_both_are_known) {
  TempDir d;
  d.write("h100.yaml", kH100);
  auto set = load_sku_dir(d.path(), known_check_names());
  ASSERT_TRUE(set);
  // H100 PCIe id under an SXM name (a relabelled VM type, say): the id is the identity.
  EXPECT_EQ(detect_sku(*set.value, gpus(8, "NVIDIA H100 80GB HBM3", 0x2331)), nullptr);
}

TEST(SkuDetect, a_four_gpu_board_is_judged_by_the_file_that_says_four) {
  // NVML cannot tell a 4-GPU HGX board from an 8-GPU board that lost four GPUs: both show four
  // "NVIDIA H100 80GB HBM3" 0x2330. Without a file for the 4-GPU board the node is judged as the
  // 8-GPU SKU (so that a node that lost GPUs fails gpu_count); a site with such boards adds a
  // SKU file with gpu_count 4, and the exact count wins (docs/thresholds.md).
  TempDir d;
  d.write("h100.yaml", kH100);
  std::string four = kH100;
  four.replace(four.find("sku: H100-SXM5-80GB"), 19, "sku: H100-SXM5-80GB-x4");
  four.replace(four.find("gpu_count: 8"), 12, "gpu_count: 4");
  d.write("h100x4.yaml", four);
  auto set = load_sku_dir(d.path(), known_check_names());
  ASSERT_TRUE(set) << (set.errors.empty() ? "" : set.errors[0].to_string());
  EXPECT_EQ(detect_sku(*set.value, gpus(4, "NVIDIA H100 80GB HBM3", 0x2330))->name,
            "H100-SXM5-80GB-x4");
  EXPECT_EQ(detect_sku(*set.value, gpus(8, "NVIDIA H100 80GB HBM3", 0x2330))->name,
            "H100-SXM5-80GB");
  EXPECT_EQ(detect_sku(*set.value, gpus(7, "NVIDIA H100 80GB HBM3", 0x2330))->name,
            "H100-SXM5-80GB");
  EXPECT_EQ(detect_sku(*set.value, gpus(3, "NVIDIA H100 80GB HBM3", 0x2330))->name,
            "H100-SXM5-80GB-x4")
      << "the closest board above the count seen";
}

}  // namespace vigil
