#pragma once
// The decision step for reports, pure (docs/architecture.md "Decisions"): a report (and the same
// report with the detection engine's slow verdicts folded in), the node table, Slurm's view of
// the pass and the breaker -> one Decision: the node's next record with the report's switch
// evidence, at most one action, the breaker's next state. No lock, no I/O, nothing written: the
// drainer core runs it under its lock and applies what it returns (apply_decision_locked), and
// a test can run it on plain values (decider_test.cpp).
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "slurm_view_cache.h"
#include "vigil/drainer/breaker.h"
#include "vigil/drainer/policy.h"

namespace vigil::drainer {

class Decider {
 public:
  struct Outcome {
    Decision decision;
    bool switch_evidence = false;  // the report carried switch evidence (fold_switch_evidence)
  };

  // table: the node table; the caller applies each decision before the next decide() and may
  // change records but not erase any (the part history of other nodes is gathered once, at
  // the first question, as pointers into it); view and partition_counts: Slurm's node table of the
  // pass and its nodes per partition (both empty when Slurm's view is unknown). Group sizes of
  // nodes Slurm shows no partition for are counted from the table once, here.
  Decider(const PolicyEngine& engine, const std::map<std::string, NodeRecord>& table,
          const SlurmView& view, const std::map<std::string, int>& partition_counts);
  // Everything is kept by reference: a temporary would dangle.
  Decider(const PolicyEngine&, const std::map<std::string, NodeRecord>&, const SlurmView&,
          std::map<std::string, int>&&) = delete;
  Decider(const PolicyEngine&, const std::map<std::string, NodeRecord>&, SlurmView&&,
          const std::map<std::string, int>&) = delete;
  Decider(const PolicyEngine&, std::map<std::string, NodeRecord>&&, const SlurmView&,
          const std::map<std::string, int>&) = delete;

  // report: as received (its switch evidence); judged: the report the policy judges (the slow
  // verdicts folded in, slow_verdicts.h), for the same node.
  Outcome decide(const NodeReport& report, const NodeReport& judged, const BreakerState& breaker);

 private:
  // The drains recorded against a part on the table's other nodes (parts.h: a part's history
  // follows it). The nodes with any are gathered on the first question only.
  std::vector<int64_t> drains_elsewhere(const std::string& node, const PartRecord& part);

  const PolicyEngine& engine_;
  const std::map<std::string, NodeRecord>& table_;
  const SlurmView& view_;
  BreakerGroups groups_;
  std::optional<std::vector<std::pair<std::string, const NodeRecord*>>> with_drains_;
};

}  // namespace vigil::drainer
