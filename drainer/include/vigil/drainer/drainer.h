#pragma once
// vigil-drainer's core, as the program, the HTTP API, the one-shot commands and the tests use
// it: ingest (durable, idempotent) -> decisions (the policy engine) -> the sinks of the sink
// table (Slurm, Kubernetes, webhook), metrics and the audit log observing every decision and
// outcome. Used by `vigil-drainer serve` (background threads) and by the one-shot commands
// (`apply`, `resume`, `breaker reset`), which drive the same steps by hand.
//
// Durability: every accepted report is journaled (fsync) before ingest() returns. Each decision
// is journaled as the node's new state plus the sink *intents* it creates; when a sink reports
// an intent completed, the drainer journals a *done* record. On restart, state = snapshot +
// replay; reports without a decision are decided again; intents without done are re-checked
// (Slurm: already applied -> marked done, not repeated) and then applied.
//
// The state, locks and threads live in drainer/src/drainer_core.h; this class forwards to it.
#include <cstddef>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "vigil/base/clock.h"
#include "vigil/base/result.h"
#include "vigil/detect/detect.h"
#include "vigil/drainer/classes.h"
#include "vigil/drainer/config.h"
#include "vigil/drainer/intent.h"
#include "vigil/drainer/metrics.h"
#include "vigil/drainer/policy.h"
#include "vigil/drainer/requalify.h"
#include "vigil/drainer/webhook.h"
#include "vigil/kube/kube_api.h"
#include "vigil/report/drain_decision.h"
#include "vigil/report/report.h"
#include "vigil/slurm/slurm_api.h"

namespace vigil::drainer {

struct IngestOutcome {
  int accepted = 0;
  int duplicates = 0;
};

class DrainerCore;

class Drainer {
 public:
  // slurm / kube may be null (sink disabled); webhook is the transport webhook.enabled needs
  // (make_http_webhook in the program). clock must outlive the Drainer.
  Drainer(DrainerConfig cfg, std::shared_ptr<slurm::SlurmApi> slurm,
          std::shared_ptr<kube::KubeApi> kube, const Clock& clock,
          std::shared_ptr<WebhookPoster> webhook = nullptr);
  ~Drainer();  // stops the threads
  Drainer(const Drainer&) = delete;
  Drainer& operator=(const Drainer&) = delete;

  // Opens the journal in cfg.state_dir, rebuilds state (snapshot + replay). After this the
  // drainer is ready: ingest() works.
  VoidResult open();
  bool ready() const;
  // A journal append or sync failed: the drainer decides and sends nothing more; restart it so
  // it replays its journal (docs/drainer.md "When the journal fails").
  bool journal_failed() const;

  // Background threads: decisions, one worker per enabled sink (batching window, retry with
  // backoff), staleness + spool scan. stop() joins them (also done by the destructor).
  void start();
  void stop();

  // Durable + idempotent on (node, run_id). Returns after the journal fsync. `received`, when
  // given (parse_node_reports' `validated`, one per report), is journaled as each report's JSON
  // and left moved-from.
  Result<IngestOutcome> ingest(const std::vector<NodeReport>& reports,
                               std::vector<nlohmann::json>* received = nullptr);
  // Reads every *.json in dir (one report or an array per file), ingests, deletes the file
  // once durable; unparsable files move to dir/rejected/. Returns the number of files taken.
  Result<int> ingest_dir(const std::string& dir);

  // Decides every accepted report now (process_pending) and returns the verdict on each of
  // `reports` (a Slurm hook waits for it: docs/hooks.md "Who drains"). kUnknown for a report
  // whose node has decided a newer one since.
  std::vector<ReportDecision> decide_now(const std::vector<NodeReport>& reports);
  // What a hook needs of this drainer's configuration to act alone when it cannot reach it.
  SharedDrainPolicy shared_policy() const;

  // ---- steps, driven by the threads or by hand (one-shot commands, tests) ----
  int process_pending();          // decides every accepted report not yet decided; returns count
  int run_sink_once(SinkKind k);  // applies the sink's pending intents; returns how many are left
  int run_slurm_sink_once();      // run_sink_once(kSlurm): one RPC per reason
  int run_kube_sink_once();       // run_sink_once(kKubernetes)
  int tick();                     // staleness sweep + report ages; returns nodes that became stale
  VoidResult snapshot_now();

  // ---- operator actions ----
  Result<std::string> resume(const std::string& node);  // returns what happened
  VoidResult reset_breaker();

  // ---- views ----
  std::vector<NodeRecord> nodes() const;
  // GET /v1/nodes and `vigil-drainer status --json`: nodes, breaker, pending actions per sink,
  // dry_run.
  nlohmann::json nodes_view() const;
  std::optional<NodeRecord> node(const std::string& name) const;
  BreakerState breaker() const;
  // The detection engine's healthy figures of `sku` (vigil-drainer calibrate); empty when
  // detection is off or nothing was learned.
  std::vector<detect::HealthyFigures> healthy_figures(const std::string& sku) const;
  // GET /v1/classes: each hardware class with its nodes and the consensus of each inventory
  // figure where one holds (classes.h); empty when classes are off or no class is known yet.
  std::vector<ClassSummary> hardware_classes() const;
  // GET /v1/rechecks: the drained nodes due for a held re-check now (requalify.h). Each node
  // listed counts as a try: it is listed again only after the backoff, or after a pass.
  std::vector<RecheckDue> rechecks_due();
  size_t pending(SinkKind sink) const;
  size_t undecided() const;  // accepted reports not yet decided
  std::vector<Intent> pending_intents() const;
  Metrics& metrics();
  const DrainerConfig& config() const;
  std::shared_ptr<slurm::SlurmApi> slurm_api() const;  // null: disabled
  const Clock& clock() const;
  std::string metrics_text();  // refreshes report ages, then serialises

 private:
  std::unique_ptr<DrainerCore> core_;
};

}  // namespace vigil::drainer
