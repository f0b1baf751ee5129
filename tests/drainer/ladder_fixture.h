#pragma once
// The repair ladder's tests through the drainer core and the Slurm sink (repair_test.cpp,
// repair_reset_test.cpp): a fake cluster of 4 nodes, a clock, reports of checks that ran now, and
// one step of decisions (ingest, decide, apply to Slurm). Each test sets cfg_.repair in SetUp.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "drainer_fixtures.h"
#include "vigil/base/time.h"
#include "vigil/drainer/drainer.h"

namespace vigil::testing {

class LadderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cfg_ = drainer_test_config(dir_.str());
    slurm_ = fake_cluster(4);
  }
  // A report of checks that ran now (after any reboot or reset so far).
  NodeReport at_now(NodeReport r) {
    r.start_time = r.end_time = rfc3339_utc(clock_.now_unix());
    return r;
  }
  // A fatal fail whose remedy is a GPU reset (as a pending row remap's).
  NodeReport remap_fail(const std::string& node, const std::string& run) {
    NodeReport r = ecc_fail_report(node, run);
    r.checks[0].remedy = Remedy::kResetGpu;
    return at_now(r);
  }
  NodeReport pass(const std::string& node, const std::string& run) {
    return at_now(ecc_pass_report(node, run));
  }
  void decide(drainer::Drainer& dr, const std::vector<NodeReport>& reports) {
    ASSERT_TRUE(dr.ingest(reports).ok());
    dr.process_pending();
    dr.run_slurm_sink_once();
  }

  TempDir dir_;
  FakeClock clock_;
  drainer::DrainerConfig cfg_;
  std::shared_ptr<FakeSlurm> slurm_;
};

}  // namespace vigil::testing
