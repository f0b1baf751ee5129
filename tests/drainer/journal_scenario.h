#pragma once
// The scenario behind tests/fixtures/journal/pre-typed-records (SOURCES.md there): a drainer
// with 8 Slurm nodes, Kubernetes on, a breaker cap of 3 drains, and detection on, driven
// through drains (a fatal check and a confirmed slow GPU), a breaker that opens and is reset,
// an operator resume, a drain left pending and a report left undecided. `table_json` is the
// node table replay must rebuild.
#include <nlohmann/json.hpp>

#include "drainer_fixtures.h"
#include "fake_clock.h"
#include "fakes.h"
#include "vigil/drainer/drainer.h"

namespace vigil::testing {

inline drainer::DrainerConfig journal_fixture_config(const std::string& dir) {
  auto c = drainer_test_config(dir);
  c.breaker.max_drains = 3;
  c.breaker.max_percent = 100;
  c.breaker.window_s = 3600;
  c.snapshot_every = 1000000;  // the whole history stays in journal records
  return c;
}

// Everything a replay must rebuild: nodes, breaker, pending intents, undecided reports.
inline nlohmann::json table_json(const drainer::Drainer& dr) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& s : dr.nodes()) nodes.push_back(drainer::to_json(s));
  nlohmann::json pending = nlohmann::json::array();
  for (const auto& i : dr.pending_intents()) pending.push_back(drainer::to_json(i));
  return {{"nodes", nodes},
          {"breaker", drainer::to_json(dr.breaker())},
          {"pending", pending},
          {"undecided", dr.undecided()}};
}

inline NodeReport journal_scenario_report(const std::string& node, const std::string& run,
                                          double gpu3, int repeats, bool ecc_fails) {
  auto r =
      make_report(node, run,
                  {gemm_result(gpu3, repeats),
                   make_check("nvml_ecc", ecc_fails ? Status::kFail : Status::kPass,
                              ecc_fails ? 2 : 0, 0, "count", ecc_fails ? "VIGIL-NVML-DBE" : "")});
  r.k8s_node = node;
  return r;
}

// Runs the scenario on a drainer whose state lives in `state_dir` and returns its table at the
// end (the drainer is closed on return). The fixture's journal was written by this function at
// commit 9d98bbf, before the journal records were typed.
inline nlohmann::json run_journal_scenario(const std::string& state_dir, FakeClock& clock,
                                           std::shared_ptr<FakeSlurm> slurm,
                                           std::shared_ptr<FakeKube> kube) {
  drainer::Drainer dr(journal_fixture_config(state_dir), slurm, kube, clock);
  if (!dr.open().ok()) return nullptr;
  auto sinks = [&] {
    dr.run_slurm_sink_once();
    dr.run_kube_sink_once();
  };
  auto rep = journal_scenario_report;
  std::vector<NodeReport> all;
  for (int i = 0; i < 8; ++i) all.push_back(rep("gpu-" + std::to_string(i), "r1", 800, 0, false));
  (void)dr.ingest(all);
  dr.process_pending();
  sinks();
  clock.advance(60);
  (void)dr.ingest({rep("gpu-0", "r2", 800, 0, true)});  // a fatal check: drain
  dr.process_pending();
  sinks();
  clock.advance(60);
  // A confirmed slow GPU and two fatal checks: the third drain within the hour opens the breaker.
  (void)dr.ingest({rep("gpu-1", "r2", 705, 2, false), rep("gpu-2", "r2", 800, 0, true),
                   rep("gpu-3", "r2", 800, 0, true)});
  dr.process_pending();
  sinks();
  clock.advance(60);
  (void)dr.reset_breaker();
  clock.advance(60);
  (void)dr.resume("gpu-0");
  sinks();
  clock.advance(60);
  (void)dr.ingest({rep("gpu-5", "r3", 800, 0, true)});  // decided, its drain left pending
  dr.process_pending();
  clock.advance(60);
  (void)dr.ingest({rep("gpu-6", "r4", 800, 0, false)});  // left undecided
  return table_json(dr);
}

}  // namespace vigil::testing
