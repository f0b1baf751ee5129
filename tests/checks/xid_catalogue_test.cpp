// The XID catalogue (checks/data/xid-catalogue.json, NVIDIA's Xid-Catalog.xlsx) and Vigil's
// policy over it (checks/data/xid-policy.json): what every XID gets, and a site's override.
#include "vigil/checks/xid_catalogue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "temp_dir.h"
#include "vigil/checks/registry.h"
#include "vigil/checks/sku.h"

namespace vigil {
namespace {

using testing::TempDir;

std::string source_file(const std::string& rel) {
  std::ifstream in(std::string(VIGIL_SOURCE_DIR) + "/" + rel);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(XidCatalogue, the_built_in_one_is_nvidias_2025_09_30_workbook) {
  const auto cat = XidCatalogue::builtin();
  EXPECT_EQ(cat->version(), "Xid-Catalog.xlsx 2025-09-30 (sha256 7f70ce96)");
  for (unsigned long long x = 1; x <= 172; ++x)
    EXPECT_FALSE(cat->judge(x).name.empty()) << "XID " << x << " missing";
  EXPECT_EQ(cat->judge(79).name, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS");
}

// What each kind of XID gets, with NVIDIA's immediate action in the comment.
TEST(XidCatalogue, each_xid_gets_the_action_its_catalogue_row_names) {
  const auto cat = XidCatalogue::builtin();
  auto act = [&](unsigned long long x) { return cat->judge(x).action; };
  EXPECT_EQ(act(79), XidAction::kReboot);    // RESTART_BM
  EXPECT_EQ(act(48), XidAction::kResetGpu);  // WORKFLOW_XID_48: solo, RESET_GPU
  EXPECT_EQ(act(74), XidAction::kResetGpu);  // WORKFLOW_NVLINK_ERR
  for (unsigned long long x : {46, 62, 64, 95, 109, 119, 120, 136, 140, 143, 155, 156, 158})
    EXPECT_EQ(act(x), XidAction::kResetGpu) << x;  // RESET_GPU
  for (unsigned long long x : {8, 13, 31, 32, 43, 45, 63, 68, 137})
    EXPECT_EQ(act(x), XidAction::kNone) << x;  // RESTART_APP, IGNORE, WORKFLOW_XID_45
  EXPECT_EQ(act(94), XidAction::kWatch);       // RESTART_APP, reset "when convenient"
  EXPECT_EQ(act(54), XidAction::kService);     // CHECK_MECHANICALS: aux power
  EXPECT_EQ(act(142), XidAction::kService);    // CONTACT_SUPPORT, on GB200
  EXPECT_EQ(act(1), XidAction::kWatch);        // CONTACT_SUPPORT but unused since A100
  EXPECT_EQ(act(168), XidAction::kWatch);      // no action in this edition
  EXPECT_EQ(act(167), XidAction::kResetGpu);   // no action either; Vigil's policy (review W13)
  EXPECT_EQ(act(171), XidAction::kNone);       // detail of XID 48, which carries the action
  EXPECT_EQ(act(185), XidAction::kWatch);      // newer than the catalogue
  EXPECT_EQ(act(154), XidAction::kWatch);      // no text: the action is unread
  EXPECT_EQ(act(149), XidAction::kWatch);      // no registers, no severity word
  EXPECT_EQ(cat->judge(149, "NETIR_LINK_EVT Fatal XC0 i0 Link 00 (garbled").action,
            XidAction::kResetGpu);  // no registers: the driver's own word
  // The decode wins over the driver's word: RLW_REMAP (V2 subcode 0000100) with errorStatus 0x40
  // is RESET_GPU in the decode sheet although the line says Nonfatal; 0x01 is XID_154_EVAL.
  EXPECT_EQ(cat->judge(145, "RLW_REMAP Nonfatal XC0 i0 Link 0 (0x00000004 0x00000040)").action,
            XidAction::kResetGpu);
  EXPECT_EQ(cat->judge(145, "RLW_REMAP Nonfatal XC0 i0 Link 0 (0x00000004 0x00000001)").action,
            XidAction::kNone);
}

TEST(XidCatalogue, the_recovery_action_is_read_one_way_for_xid_154_and_nvml) {
  EXPECT_EQ(recovery_action_verdict(0).action, XidAction::kNone);
  EXPECT_EQ(recovery_action_verdict(1).action, XidAction::kResetGpu);
  EXPECT_EQ(recovery_action_verdict(2).action, XidAction::kReboot);
  EXPECT_EQ(recovery_action_verdict(3).action, XidAction::kWatch);  // DCGM 4.6: WARN (W4)
  EXPECT_EQ(recovery_action_verdict(4).action, XidAction::kResetGpu);
  EXPECT_EQ(recovery_action_verdict(5).action, XidAction::kWatch);   // the domain's (W3)
  EXPECT_EQ(recovery_action_verdict(6).action, XidAction::kReboot);  // newer than nvml.h 13.3
  EXPECT_EQ(recovery_action_verdict(7).action, XidAction::kReboot);
  EXPECT_EQ(recovery_action_verdict(1ULL << 32 | 1).action, XidAction::kReboot);  // not 1
  EXPECT_EQ(XidCatalogue::builtin()
                ->judge(154, "GPU recovery action changed from 0x0 (None) to 0x5 (Recover IMEX)")
                .action,
            XidAction::kWatch);
  EXPECT_EQ(XidCatalogue::builtin()
                ->judge(154,
                        "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot "
                        "Required)")
                .action,
            XidAction::kReboot);
  EXPECT_EQ(remedy_of(XidAction::kReboot), Remedy::kReboot);
  EXPECT_FALSE(remedy_of(XidAction::kWatch));
}

// A new action token in a future workbook must be given a meaning, not judged by a default.
TEST(XidCatalogue, a_catalogue_token_without_a_policy_entry_is_an_error) {
  auto policy = nlohmann::json::parse(source_file("checks/data/xid-policy.json"));
  auto& buckets = policy["buckets"];
  const auto before = buckets.size();
  buckets.erase(std::remove_if(buckets.begin(), buckets.end(),
                               [](const auto& b) { return b["nvidia"] == "RESTART_BM"; }),
                buckets.end());
  ASSERT_EQ(buckets.size(), before - 1);
  auto c =
      XidCatalogue::parse(source_file("checks/data/xid-catalogue.json"), policy.dump(), "test");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().to_string(),
            "test xid-policy.json: buckets: no entry for NVIDIA's 'RESTART_BM' (XID 79)");
}

TEST(XidCatalogue, a_bad_site_policy_names_its_file_and_field_and_changes_nothing) {
  TempDir dir;
  const auto cat = XidCatalogue::builtin();
  const std::pair<const char*, const char*> cases[] = {
      {R"({"xids": [{"xid": 13, "action": "drain", "source": "site"}]})",
       "xids[0].action: 'drain' is not none, watch, reset_gpu, reboot or service"},
      {R"({"xids": [{"xid": 13, "action": "reboot"}]})", "xids[0].source: missing"},
      {R"({"xids": [{"xid": 13, "action": "reboot", "source": ""}]})",
       "xids[0].source: must say where the rule comes from"},
      {R"({"xid": []})", "xid: unknown field"},
      {R"({"xids": [{"xid": -1, "action": "none", "source": "s"}]})",
       "xids[0].xid: must be a whole number >= 0"},
      {R"({"sxid": {"fatal": {"action": "none"}}})", "sxid.fatal.source: missing"},
      {R"({"xids": )", "not valid JSON"},
      {R"({"buckets": [{"nvidia": "RESTART-APP", "action": "none", "source": "s"}]})",
       "buckets[0].nvidia: 'RESTART-APP' is not an action of Xid-Catalog.xlsx 2025-09-30"},
      {R"({"buckets": [{"nvidia": "RESTART_BM", "action": "recovery_action", "source": "s"}]})",
       "buckets[0].action: 'recovery_action' reads the message of another token"},
  };
  for (const auto& [text, why] : cases) {
    dir.write("xid-policy.json", text);
    auto c = cat->with_site_policy(dir.file("xid-policy.json"));
    ASSERT_FALSE(c) << text;
    EXPECT_NE(c.error().to_string().find(dir.file("xid-policy.json") + ": " + why),
              std::string::npos)
        << c.error().to_string();
  }
}

// Beside the threshold files, loaded (and checked) with them: vigil-check thresholds validate
// and every run see the same file.
TEST(XidCatalogue, a_site_policy_beside_the_thresholds_is_loaded_with_them) {
  TempDir dir;
  dir.write("h100.yaml", source_file("checks/thresholds/h100-sxm5-80gb.yaml"));
  auto plain = load_sku_dir(dir.path(), known_check_names());
  dir.write("xid-policy.json",
            R"({"xids": [{"xid": 13, "action": "reset_gpu", "source": "site RMA rule"}]})");
  auto with = load_sku_dir(dir.path(), known_check_names());
  dir.write("xid-policy.json", R"({"xids": [{"xid": 13}]})");
  auto bad = load_sku_dir(dir.path(), known_check_names());
  ASSERT_TRUE(plain) << plain.errors.front().to_string();
  EXPECT_EQ(plain.value->xid, nullptr);
  ASSERT_TRUE(with) << with.errors.front().to_string();
  ASSERT_NE(with.value->xid, nullptr);
  EXPECT_EQ(with.value->xid->judge(13).action, XidAction::kResetGpu);
  EXPECT_NE(with.value->xid->version().find("site policy"), std::string::npos);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.errors.front().file, dir.file("xid-policy.json"));
}

}  // namespace
}  // namespace vigil
