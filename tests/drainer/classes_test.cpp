// Hardware classes (classes.h): a node is judged against the nodes Slurm declares alike, never
// against a GPU model's catalogue. The fleets below are the ones issue 43 names: no InfiniBand,
// RoCE at another rate, many-port NICs, 4-GPU boards beside 8-GPU ones in one partition, a Gres
// count NVML disagrees with, one port down in a class of eight. Their figures are what ib_port,
// gpu_count, nvml_nvlink and nvml_pcie report (docs/checks-ib.md, docs/checks-nvml.md).
#include "vigil/drainer/classes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vigil::drainer {
namespace {

slurm::SlurmNodeInfo slurm_node(const std::string& gres, std::vector<std::string> features) {
  slurm::SlurmNodeInfo n;
  n.gres = gres;
  n.features = std::move(features);
  return n;
}

Measurement figure(const std::string& name, double value, const std::string& unit,
                   std::optional<int> gpu = {}, std::optional<std::string> port = {}) {
  Measurement m;
  m.name = name;
  m.value = value;
  m.unit = unit;
  m.gpu = gpu;
  m.port = std::move(port);
  return m;
}

// An ib_port result with `ports` ports at `rate` Gb/s, `down` of them not ACTIVE (rate 0), and
// the node-level active_ports; `st` as the check judged it against its SKU file.
CheckResult ib_port(int ports, double rate, int down = 0, Status st = Status::kPass) {
  CheckResult c;
  c.check = "ib_port";
  c.short_name = "ib";
  c.status = st;
  for (int p = 0; p < ports; ++p) {
    const std::string port = "mlx5_" + std::to_string(p) + "/1";
    c.measurements.push_back(figure("port_active", p < down ? 0 : 1, "bool", {}, port));
    c.measurements.push_back(figure("port_rate", p < down ? 0 : rate, "Gb/s", {}, port));
  }
  c.measurements.push_back(figure("active_ports", ports - down, "count"));
  return c;
}

CheckResult gpu_count(int visible, Status st = Status::kPass) {
  CheckResult c;
  c.check = "gpu_count";
  c.status = st;
  c.measurements.push_back(figure("gpu_count", visible, "count"));
  return c;
}

CheckResult nvlink(int gpus, int links, int short_gpu = -1, int short_links = 0) {
  CheckResult c;
  c.check = "nvml_nvlink";
  for (int g = 0; g < gpus; ++g)
    c.measurements.push_back(
        figure("nvlink_link_count", g == short_gpu ? short_links : links, "count", g));
  return c;
}

NodeReport report(const std::string& node, std::vector<CheckResult> checks,
                  const std::string& sku = "H100-SXM5-80GB") {
  NodeReport r;
  r.node = node;
  r.sku = sku;
  r.run_id = "run-" + node;
  r.checks = std::move(checks);
  return r;
}

ClassSettings settings() { return ClassSettings{}; }  // min_nodes 5, min_share 0.8

// Slurm declares one node alike: every learned node covers it (the coverage rule has its own
// test below).
constexpr int kAny = 1;

// Each of `n` nodes "<prefix>-<i>" reports `checks` in class `cls`.
void learn_fleet(ClassInventory& inv, const std::string& cls, const std::string& prefix, int n,
                 const std::vector<CheckResult>& checks) {
  for (int i = 0; i < n; ++i)
    EXPECT_TRUE(
        inv.judge(report(prefix + "-" + std::to_string(i), checks), cls, kAny, 1000, true).empty());
}

const slurm::SlurmNodeInfo kIb8Node = slurm_node("gpu:h100:8(S:0-1)", {"ndr", "ib"});
const std::string kIb8 = class_name("H100-SXM5-80GB", &kIb8Node);

TEST(ClassName, is_the_sku_gres_without_sockets_and_sorted_features) {
  const auto n = slurm_node("gpu:h100:4(S:0),gpu:a100:2(S:1)", {"roce", "cx7"});
  EXPECT_EQ(class_name("H100-SXM5-80GB", &n), "H100-SXM5-80GB gpu:h100:4,gpu:a100:2 [cx7,roce]");
  EXPECT_EQ(kIb8, "H100-SXM5-80GB gpu:h100:8 [ib,ndr]");
  const auto bare = slurm_node("(null)", {});  // scontrol's spelling of "none"
  EXPECT_EQ(class_name("A100-SXM4-80GB", &bare), "A100-SXM4-80GB no-gres []");
  EXPECT_EQ(declaration(slurm_node("", {})), "no-gres []");  // slurmrestd's
  EXPECT_EQ(class_name("H100-SXM5-80GB", nullptr), "");      // Slurm does not know the node
}

TEST(ClassInventory, one_port_down_in_a_class_of_eight_fails_the_node) {
  ClassInventory inv(settings());
  learn_fleet(inv, kIb8, "ib", 8, {ib_port(8, 400)});
  // An HCA gone from the bus: 7 ports, all ACTIVE. ib_port only warns (the shipped SKU's
  // active_ports is unconfirmed); the class says 8.
  auto v = inv.judge(report("ib-8", {ib_port(7, 400, 0, Status::kWarn)}), kIb8, kAny, 1000, true);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].check, "ib_port");
  EXPECT_EQ(v[0].measurement, "active_ports");
  EXPECT_EQ(v[0].value, 7);
  EXPECT_EQ(v[0].consensus, 8);
  EXPECT_EQ(v[0].message, "active_ports 7, its class has 8 on 8 of 8 nodes");
  NodeReport r = report("ib-8", {ib_port(7, 400, 0, Status::kWarn)});
  fold_class_verdicts(r, v, default_policy());
  EXPECT_EQ(r.checks[0].status, Status::kFail);
  EXPECT_EQ(r.checks[0].fault_code, kClassBelowFaultCode);
  EXPECT_EQ(r.checks[0].message, v[0].message);
}

TEST(ClassInventory, a_link_at_a_lower_rate_than_its_class_fails_but_a_down_port_is_ib_ports_own) {
  ClassInventory inv(settings());
  learn_fleet(inv, kIb8, "ib", 6, {ib_port(8, 400)});
  auto slow = inv.judge(report("ib-6", {ib_port(8, 200)}), kIb8, kAny, 1000, false);
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].measurement, "port_rate");
  EXPECT_EQ(slow[0].consensus, 400);
  // A port that is not ACTIVE reports rate 0: not a rate below the class (port_active fails it).
  auto down =
      inv.judge(report("ib-7", {ib_port(8, 400, 1, Status::kFail)}), kIb8, kAny, 1000, false);
  ASSERT_EQ(down.size(), 1u);
  EXPECT_EQ(down[0].measurement, "active_ports");
}

TEST(ClassInventory, a_class_without_infiniband_is_never_failed_for_it) {
  ClassInventory inv(settings());
  const auto eth = slurm_node("gpu:8", {"ethernet"});
  const std::string cls = class_name("H100-SXM5-80GB", &eth);
  // Against the shipped H100 file: 0/8 IB ports, a warn (unconfirmed), on every node.
  learn_fleet(inv, cls, "vm", 10, {ib_port(0, 0, 0, Status::kWarn), gpu_count(8)});
  EXPECT_TRUE(inv.judge(report("vm-10", {ib_port(0, 0, 0, Status::kWarn), gpu_count(8)}), cls, kAny,
                        1000, true)
                  .empty());
}

TEST(ClassInventory, roce_at_200_gbps_is_its_class_and_a_port_at_100_is_below_it) {
  ClassInventory inv(settings());
  const auto roce = slurm_node("gpu:h100:8", {"roce"});
  const std::string cls = class_name("H100-SXM5-80GB", &roce);
  // The RoCE SKU file counts Ethernet ports; the site's links run at 200 Gb/s, below the file's
  // unconfirmed 400: ib_port warns on every node, the class is 200.
  learn_fleet(inv, cls, "roce", 12, {ib_port(8, 200, 0, Status::kWarn)});
  EXPECT_TRUE(
      inv.judge(report("roce-12", {ib_port(8, 200, 0, Status::kWarn)}), cls, kAny, 1000, true)
          .empty());
  auto v = inv.judge(report("roce-13", {ib_port(8, 100, 0, Status::kWarn)}), cls, kAny, 1000, true);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].message, "port_rate 100, its class has 200 on 13 of 13 nodes");
}

TEST(ClassInventory, many_port_nics_are_judged_against_their_own_count) {
  ClassInventory inv(settings());
  const auto efa = slurm_node("gpu:8", {"efa16"});
  const std::string cls = class_name("H100-SXM5-80GB", &efa);
  learn_fleet(inv, cls, "efa", 6, {ib_port(16, 200, 0, Status::kWarn)});
  EXPECT_TRUE(
      inv.judge(report("efa-6", {ib_port(16, 200, 0, Status::kWarn)}), cls, kAny, 1000, false)
          .empty());
  auto v = inv.judge(report("efa-7", {ib_port(15, 200, 0, Status::kWarn)}), cls, kAny, 1000, false);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].consensus, 16);
}

TEST(ClassInventory, four_gpu_boards_beside_eight_gpu_nodes_in_one_partition) {
  ClassInventory inv(settings());
  const auto four = slurm_node("gpu:h100:4", {"ib"});
  const auto eight = slurm_node("gpu:h100:8", {"ib"});
  const std::string c4 = class_name("H100-SXM5-80GB", &four);
  const std::string c8 = class_name("H100-SXM5-80GB", &eight);
  // Same PCI id and NVML name: the checker matched the same SKU for both boards.
  learn_fleet(inv, c8, "big", 8, {gpu_count(8), ib_port(8, 400), nvlink(8, 18)});
  learn_fleet(inv, c4, "small", 6,
              {gpu_count(4), ib_port(4, 400, 0, Status::kWarn), nvlink(4, 18)});
  EXPECT_TRUE(inv.judge(report("small-6", {gpu_count(4), ib_port(4, 400, 0, Status::kWarn)}), c4,
                        kAny, 1000, true)
                  .empty());
  // A GPU gone from an 8-GPU node: Slurm's Gres says 8, NVML lists 7 (gpu_count fails on its
  // own against Slurm's count; the class agrees).
  auto v = inv.judge(report("big-8", {gpu_count(7, Status::kFail), nvlink(7, 18)}), c8, kAny, 1000,
                     true);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].check, "gpu_count");
  EXPECT_EQ(v[0].consensus, 8);
  // One GPU trained fewer NVLink links than its class's GPUs.
  auto links = inv.judge(report("big-0", {nvlink(8, 18, 5, 16)}), c8, kAny, 1000, true);
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].measurement, "nvlink_link_count");
  const auto summary = inv.summary();
  ASSERT_EQ(summary.size(), 2u);
  EXPECT_EQ(summary[0].name, c4);
  EXPECT_EQ(summary[0].consensus.at("gpu_count/gpu_count"), 4);
  EXPECT_EQ(summary[1].consensus.at("ib_port/active_ports"), 8);
}

TEST(ClassInventory, no_consensus_below_min_nodes_or_in_a_split_class) {
  ClassInventory inv(settings());
  learn_fleet(inv, kIb8, "ib", 4, {ib_port(8, 400)});
  EXPECT_TRUE(inv.judge(report("x", {ib_port(6, 400)}), kIb8, kAny, 1000, false).empty())
      << "4 other nodes are fewer than min_nodes 5";
  // Half the class has 4 ports, half 8: two configurations Slurm does not tell apart. Nobody is
  // judged (the summary shows no consensus) until the site declares a feature.
  for (int i = 0; i < 4; ++i)  // judged while the class fills up; what counts is the end
    inv.judge(report("half-" + std::to_string(i), {ib_port(4, 400)}), kIb8, kAny, 1000, true);
  EXPECT_TRUE(inv.judge(report("y", {ib_port(4, 400)}), kIb8, kAny, 1000, false).empty());
  EXPECT_EQ(inv.summary()[0].consensus.count("ib_port/active_ports"), 0u);
}

// 100 nodes Slurm declares alike (the drainer just restarted: the consensus is learned again).
// The first 50 reporters have 8 ports; until 80% of the class has reported nobody is judged, so a
// class whose other half has 4 ports (a configuration Slurm does not tell apart) never is.
TEST(ClassInventory, a_class_is_judged_only_once_most_of_its_declared_nodes_reported) {
  ClassInventory inv(settings());
  for (int i = 0; i < 50; ++i)
    inv.judge(report("a-" + std::to_string(i), {ib_port(8, 400)}), kIb8, 100, 1000, true);
  for (int i = 0; i < 50; ++i)
    EXPECT_TRUE(
        inv.judge(report("b-" + std::to_string(i), {ib_port(4, 400)}), kIb8, 100, 1000, true)
            .empty())
        << "b-" << i;
  ClassInventory whole(settings());
  for (int i = 0; i < 79; ++i)
    whole.judge(report("a-" + std::to_string(i), {ib_port(8, 400)}), kIb8, 100, 1000, true);
  EXPECT_EQ(whole.judge(report("x", {ib_port(7, 400)}), kIb8, 100, 1000, false).size(), 1u)
      << "79 others and the node itself are 80% of the class";
  ClassInventory young(settings());
  for (int i = 0; i < 78; ++i)
    young.judge(report("a-" + std::to_string(i), {ib_port(8, 400)}), kIb8, 100, 1000, true);
  EXPECT_TRUE(young.judge(report("x", {ib_port(7, 400)}), kIb8, 100, 1000, false).empty());
}

TEST(ClassInventory, a_node_is_not_its_own_peer_and_a_drained_node_teaches_nothing) {
  ClassInventory inv(settings());
  learn_fleet(inv, kIb8, "ib", 5, {ib_port(8, 400)});
  // ib-0 loses a port: its own earlier 8 is not one of the 5 others it needs.
  EXPECT_TRUE(inv.judge(report("ib-0", {ib_port(7, 400)}), kIb8, kAny, 1000, true).empty())
      << "only 4 OTHER nodes: no consensus yet";
  learn_fleet(inv, kIb8, "more", 3, {ib_port(8, 400)});
  // Drained re-checks (learn = false) never move the consensus.
  for (int i = 0; i < 20; ++i)
    inv.judge(report("sick-" + std::to_string(i), {ib_port(6, 400)}), kIb8, kAny, 1000, false);
  auto v = inv.judge(report("ib-0", {ib_port(7, 400)}), kIb8, kAny, 1000, true);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].message, "active_ports 7, its class has 8 on 7 of 7 nodes");
}

TEST(ClassInventory, a_hooks_report_keeps_the_figures_it_lacks_and_a_redeclared_node_moves) {
  ClassInventory inv(settings());
  learn_fleet(inv, kIb8, "ib", 6, {ib_port(8, 400), gpu_count(8)});
  // ib-0's Epilog report runs gpu_count only: its ports stay counted.
  inv.judge(report("ib-0", {gpu_count(8)}), kIb8, kAny, 2000, true);
  EXPECT_EQ(inv.judge(report("x", {ib_port(7, 400)}), kIb8, kAny, 2000, false).at(0).nodes, 6);
  // The site moves ib-1 to another class (new features): it leaves the old one.
  const auto moved = slurm_node("gpu:h100:8", {"ib", "ndr", "spare"});
  inv.judge(report("ib-1", {ib_port(8, 400)}), class_name("H100-SXM5-80GB", &moved), kAny, 2000,
            true);
  EXPECT_EQ(inv.judge(report("x", {ib_port(7, 400)}), kIb8, kAny, 2000, false).at(0).nodes, 5);
  // Without Slurm's word the node is neither judged nor learned from.
  EXPECT_TRUE(inv.judge(report("ib-2", {ib_port(1, 400)}), "", kAny, 2000, true).empty());
  EXPECT_EQ(inv.nodes(), 6u);
}

TEST(ClassInventory, nodes_not_heard_from_are_forgotten) {
  ClassSettings s = settings();
  s.forget_after_s = 7200;
  ClassInventory inv(s);
  learn_fleet(inv, kIb8, "ib", 6, {ib_port(8, 400)});
  EXPECT_FALSE(inv.judge(report("x", {ib_port(7, 400)}), kIb8, kAny, 5000, false).empty());
  EXPECT_TRUE(inv.judge(report("x", {ib_port(7, 400)}), kIb8, kAny, 10000, false).empty());
  EXPECT_EQ(inv.nodes(), 0u);
}

// Versions as genuine tools printed them: H100 VBIOS 96.00.89.00.01 (`nvidia-smi -q`, the
// capture in stas00/ml-engineering compute/accelerator/nvidia/debug.md) and 96.00.74.00.11
// (an H100 NVL's `nvidia-smi -q`); driver 550.54.15 (the DCGM diag capture of IBM/autopilot
// issue #68) and 550.54.14; ConnectX-7 firmware 28.41.1000 with board id MT_0000000838 (GPUd's
// InfiniBand class reader) and 28.39.1002 (GPUd's ibstat test capture, CA type MT4129).
constexpr const char* kVbios = "96.00.89.00.01";
constexpr const char* kOldVbios = "96.00.74.00.11";
constexpr const char* kCx7 = "MT_0000000838";

NodeReport versioned(const std::string& node, const std::string& driver,
                     std::vector<std::string> vbios, std::vector<std::string> nic_fw) {
  NodeReport r = report(node, {gpu_count(static_cast<int>(vbios.size())), ib_port(8, 400)});
  r.driver = driver;
  for (std::size_t g = 0; g < vbios.size(); ++g)
    r.gpus.push_back({static_cast<int>(g), "", "", vbios[g]});
  for (std::size_t n = 0; n < nic_fw.size(); ++n)
    r.nics.push_back({"mlx5_" + std::to_string(n), nic_fw[n], kCx7});
  return r;
}

void learn_versions(ClassInventory& inv, int n) {
  for (int i = 0; i < n; ++i)
    inv.judge(versioned("v-" + std::to_string(i), "550.54.15", std::vector<std::string>(8, kVbios),
                        std::vector<std::string>(8, "28.41.1000")),
              kIb8, kAny, 1000, true);
}

// The verdicts that say something (version figures compared without a finding give a pass).
std::vector<ClassVerdict> findings(std::vector<ClassVerdict> v) {
  std::erase_if(v, [](const ClassVerdict& c) { return c.status == Status::kPass; });
  return v;
}

const CheckResult* result(const NodeReport& r, std::string_view check) {
  for (const auto& c : r.checks)
    if (c.check == check) return &c;
  return nullptr;
}

TEST(ClassVersions, one_gpu_on_other_vbios_than_its_node_and_class_fails_the_node) {
  ClassInventory inv(settings());
  learn_versions(inv, 8);
  std::vector<std::string> vbios(8, kVbios);
  vbios[3] = kOldVbios;
  NodeReport r = versioned("v-8", "550.54.15", vbios, std::vector<std::string>(8, "28.41.1000"));
  const auto all = inv.judge(r, kIb8, kAny, 1000, false);
  EXPECT_EQ(all.size(), 3u);  // driver, vbios, one NIC board: all compared
  const auto v = findings(all);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].check, kClassVersionCheck);
  EXPECT_EQ(v[0].status, Status::kFail);
  EXPECT_EQ(v[0].fault_code, kClassVersionFaultCode);
  EXPECT_EQ(v[0].message,
            "vbios gpu3 96.00.74.00.11 unlike the node's others (96.00.89.00.01); its class runs "
            "96.00.89.00.01 on 8 of 8 nodes");
  fold_class_verdicts(r, all, default_policy());
  const CheckResult* c = result(r, kClassVersionCheck);
  ASSERT_NE(c, nullptr);  // its own check: the hooks' gpu_count passes never resume it
  EXPECT_EQ(c->status, Status::kFail);
  EXPECT_EQ(c->fault_code, kClassVersionFaultCode);
  EXPECT_EQ(r.checks[0].status, Status::kPass);  // gpu_count is untouched
  // Seven GPUs updated ahead of the class and one missed: the one is named.
  std::vector<std::string> seven(8, kOldVbios);
  seven[0] = kVbios;
  const auto missed =
      findings(inv.judge(versioned("v-9", "550.54.15", seven, {}), kIb8, kAny, 1000, false));
  ASSERT_EQ(missed.size(), 1u);
  EXPECT_EQ(missed[0].message.rfind("vbios gpu0 96.00.89.00.01 unlike the node's others "
                                    "(96.00.74.00.11)",
                                    0),
            0u)
      << missed[0].message;
}

TEST(ClassVersions, one_nic_on_other_firmware_fails_and_a_whole_node_upgraded_ahead_only_warns) {
  ClassInventory inv(settings());
  learn_versions(inv, 8);
  std::vector<std::string> fw(8, "28.41.1000");
  fw[5] = "28.39.1002";
  NodeReport one = versioned("v-8", "550.54.15", std::vector<std::string>(8, kVbios), fw);
  auto v = findings(inv.judge(one, kIb8, kAny, 1000, false));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].measurement, "nic_firmware MT_0000000838");
  EXPECT_EQ(v[0].status, Status::kFail);
  // A rolling update: the node's driver and every GPU's VBIOS differ from the class alike.
  NodeReport ahead = versioned("v-9", "550.54.14", std::vector<std::string>(8, kOldVbios),
                               std::vector<std::string>(8, "28.41.1000"));
  const auto all = inv.judge(ahead, kIb8, kAny, 1000, false);
  auto w = findings(all);
  ASSERT_EQ(w.size(), 2u);
  for (const auto& each : w) EXPECT_EQ(each.status, Status::kWarn);
  EXPECT_EQ(w[0].message, "driver 550.54.14, its class runs 550.54.15 on 8 of 8 nodes");
  fold_class_verdicts(ahead, all, default_policy());
  const CheckResult* c = result(ahead, kClassVersionCheck);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status, Status::kWarn);
  EXPECT_EQ(c->fault_code, kClassVersionFaultCode);
  EXPECT_EQ(c->message, w[0].message + "; " + w[1].message);
  // A warning never weakens a fail: one GPU off its node (fail) and another driver (warn).
  std::vector<std::string> vbios(8, kVbios);
  vbios[2] = kOldVbios;
  NodeReport both = versioned("v-10", "550.54.14", vbios, {});
  const auto verdicts = inv.judge(both, kIb8, kAny, 1000, false);
  ASSERT_EQ(findings(verdicts).size(), 2u);
  fold_class_verdicts(both, verdicts, default_policy());
  EXPECT_EQ(result(both, kClassVersionCheck)->status, Status::kFail);
  EXPECT_EQ(result(both, kClassVersionCheck)->message.rfind("vbios gpu2", 0), 0u);
  // A result a report brought under the drainer's name gives way to the drainer's own.
  NodeReport brought = ahead;
  for (auto& each : brought.checks)
    if (each.check == kClassVersionCheck) each.status = Status::kError, each.message = "tool";
  fold_class_verdicts(brought, all, default_policy());
  EXPECT_EQ(result(brought, kClassVersionCheck)->status, Status::kWarn);
}

TEST(ClassVersions, no_consensus_no_verdict_and_versions_show_in_the_summary) {
  ClassInventory inv(settings());
  // Half the class on each driver: a split class judges nobody.
  for (int i = 0; i < 10; ++i)
    inv.judge(versioned("s-" + std::to_string(i), i % 2 ? "550.54.14" : "550.54.15",
                        std::vector<std::string>(8, kVbios), {}),
              kIb8, kAny, 1000, true);
  std::vector<std::string> vbios(8, kVbios);
  vbios[0] = kOldVbios;
  auto v = findings(inv.judge(versioned("s-10", "550.54.14", vbios, {}), kIb8, kAny, 1000, false));
  ASSERT_EQ(v.size(), 1u);  // the VBIOS has a consensus, the driver none
  EXPECT_EQ(v[0].measurement, "vbios");
  const auto summary = inv.summary();
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(summary[0].versions.count("driver"), 0u);
  EXPECT_EQ(summary[0].versions.at("vbios"), kVbios);
  // Nothing to compare with at all: the report's class_version is skipped, not passed.
  ClassInventory empty(settings());
  NodeReport lone = versioned("l-0", "550.54.15", vbios, {});
  fold_class_verdicts(lone, empty.judge(lone, kIb8, kAny, 1000, false), default_policy());
  EXPECT_EQ(result(lone, kClassVersionCheck)->status, Status::kSkipped);
}

// A class whose every node mixes two VBIOS versions (board revisions, by design) has that as
// its consensus and fails nobody for it, nor a node of it that runs one version.
TEST(ClassVersions, a_class_that_mixes_versions_by_design_fails_nobody) {
  ClassInventory inv(settings());
  std::vector<std::string> mixed(8, kVbios);
  for (int g = 4; g < 8; ++g) mixed[g] = kOldVbios;
  for (int i = 0; i < 8; ++i)
    EXPECT_TRUE(findings(inv.judge(versioned("m-" + std::to_string(i), "550.54.15", mixed, {}),
                                   kIb8, kAny, 1000, true))
                    .empty());
  EXPECT_EQ(inv.summary()[0].versions.at("vbios"), kMixedVersions);
  auto v =
      findings(inv.judge(versioned("m-8", "550.54.15", std::vector<std::string>(8, kVbios), {}),
                         kIb8, kAny, 1000, false));
  EXPECT_TRUE(v.empty());  // the class mixes by design: one version is not judged against it
}

// A run's report says every version the node has: a figure it no longer reports leaves the
// class's tally (a NIC of another board pulled); a hook's report, with none, changes nothing.
TEST(ClassVersions, a_figure_a_node_no_longer_reports_leaves_the_tally) {
  ClassInventory inv(settings());
  learn_versions(inv, 6);
  EXPECT_EQ(inv.summary()[0].versions.count("nic_firmware MT_0000000838"), 1u);
  for (int i = 0; i < 6; ++i)
    inv.judge(
        versioned("v-" + std::to_string(i), "550.54.15", std::vector<std::string>(8, kVbios), {}),
        kIb8, kAny, 1000, true);
  EXPECT_EQ(inv.summary()[0].versions.count("nic_firmware MT_0000000838"), 0u);
  inv.judge(report("v-0", {gpu_count(8)}), kIb8, kAny, 1000, true);  // a hook's report
  EXPECT_EQ(inv.summary()[0].versions.at("vbios"), kVbios);
}

// classes.declared (the site confirms its class): judged from the first report, with no fleet
// behind it (a class of three nodes, or a drainer just restarted), and over the consensus.
TEST(ClassDeclared, a_declared_figure_is_judged_without_a_consensus_and_wins_over_one) {
  ClassSettings s = settings();
  s.declared[kIb8].figures["ib_port/active_ports"] = 8;
  s.declared[kIb8].versions["vbios"] = kVbios;
  ClassInventory inv(s);
  auto v = inv.judge(report("ib-0", {ib_port(7, 400)}), kIb8, 3, 1000, true);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].message, "active_ports 7, its class has 8 (declared)");
  // The fleet says 7 (every other node lost a port alike): the declaration still stands.
  for (int i = 0; i < 8; ++i)  // each of them fails the declaration as it reports
    EXPECT_EQ(
        inv.judge(report("seven-" + std::to_string(i), {ib_port(7, 400)}), kIb8, kAny, 1000, true)
            .size(),
        1u);
  EXPECT_EQ(inv.summary()[0].consensus.at("ib_port/active_ports"), 7);
  EXPECT_EQ(inv.judge(report("ib-9", {ib_port(7, 400)}), kIb8, kAny, 1000, false).size(), 1u);
  // A declared version: a node whose GPUs all run another VBIOS warns, as against a consensus.
  auto w =
      findings(inv.judge(versioned("v-0", "550.54.15", std::vector<std::string>(8, kOldVbios), {}),
                         kIb8, kAny, 1000, false));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].status, Status::kWarn);
  EXPECT_EQ(w[0].message, "vbios 96.00.74.00.11, its class runs 96.00.89.00.01 (declared)");
  // Another class declares nothing: nothing judged without its fleet.
  EXPECT_TRUE(inv.judge(report("x", {ib_port(7, 400)}), "other", kAny, 1000, false).empty());
  // The summary lists the declaration, with the nodes it matched.
  const auto summary = inv.summary();
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(summary[0].declared.figures.at("ib_port/active_ports"), 8);
  EXPECT_EQ(summary[0].declared.versions.at("vbios"), kVbios);
}

TEST(FoldClassVerdicts, a_fatal_finding_stands_and_error_results_are_left_alone) {
  ClassVerdict v;
  v.check = "gpu_count";
  v.measurement = "gpu_count";
  v.message = "gpu_count 7, its class has 8 on 8 of 8 nodes";
  NodeReport r = report("n", {gpu_count(7, Status::kFail), gpu_count(7, Status::kError)});
  r.checks[0].fault_code = "VIGIL-NVML-GPU-COUNT";  // gpu_count is fatal: drains on one report
  r.checks[0].message = "7 of 8 GPUs visible";
  fold_class_verdicts(r, {v}, default_policy());
  EXPECT_EQ(r.checks[0].fault_code, "VIGIL-NVML-GPU-COUNT");
  EXPECT_EQ(r.checks[0].message, "7 of 8 GPUs visible");
  EXPECT_EQ(r.checks[1].status, Status::kError);
}

}  // namespace
}  // namespace vigil::drainer
