#include "vigil/slurm/reason.h"

#include <gtest/gtest.h>

namespace vigil::slurm {
namespace {

TEST(Reason, prefix_and_short_name_fit_in_what_sinfo_shows) {
  const std::string reason = make_reason("nccl-ib", "busbw 151.2<180GB/s");
  EXPECT_EQ(reason, "vigil: nccl-ib busbw 151.2<180GB/s");
  EXPECT_EQ(reason.substr(0, 20), "vigil: nccl-ib busbw");
  EXPECT_TRUE(reason_is_vigil(reason));
}

TEST(Reason, control_characters_are_folded_and_length_is_capped) {
  EXPECT_EQ(make_reason("remap", "gpu3 row remap\npending (1)"),
            "vigil: remap gpu3 row remap pending (1)");
  EXPECT_EQ(make_reason("remap", "gpu3\t\x01 x", 12), "vigil: remap");
  EXPECT_EQ(make_reason("remap", "   "), "vigil: remap");
}

TEST(Ownership, only_vigil_drains_are_vigils_and_down_fail_maint_are_untouchable) {
  SlurmNodeInfo n;
  n.drain = true;
  n.reason = "vigil: ecc gpu1";
  EXPECT_TRUE(drained_by_vigil(n));
  EXPECT_FALSE(drained_by_other(n));
  n.reason = "admin: bad fan";
  EXPECT_FALSE(drained_by_vigil(n));
  EXPECT_TRUE(drained_by_other(n));
  n.drain = false;
  EXPECT_FALSE(drained_by_other(n));
  EXPECT_FALSE(untouchable(n));
  n.maint = true;
  EXPECT_TRUE(untouchable(n));
  n.maint = false;
  n.down = true;
  EXPECT_TRUE(untouchable(n));
}

// The reasons Slurm left when its ResumeTimeout ended a reboot Vigil asked for, as read on the
// local clusters (2026-12-02; docs/repair.md): 22.05 without the drain, 24.11 with it.
TEST(Ownership, a_reboot_slurm_timed_out_is_told_by_its_down_state_and_vigils_reason) {
  SlurmNodeInfo n;
  n.down = true;
  n.reason = "vigil: remap gpu3 test : reboot issued : reboot timed out";
  EXPECT_TRUE(reboot_timed_out(n));  // 22.05: DOWN, no drain
  n.drain = true;
  EXPECT_TRUE(reboot_timed_out(n));  // 24.11: DOWN+DRAIN
  n.down = false;                    // registered again
  EXPECT_FALSE(reboot_timed_out(n));
  n.down = true;
  n.reason = "admin: psu : reboot timed out";  // someone else's reboot
  EXPECT_FALSE(reboot_timed_out(n));
}

}  // namespace
}  // namespace vigil::slurm
