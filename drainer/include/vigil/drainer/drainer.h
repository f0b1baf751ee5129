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
// Stages (docs/architecture.md "The drainer's stages"), each the one owner of its state, guarded by
// one lock or one thread: the ingest log (ingest_log.h, its own lock), the node table with the
// breaker and the outbox (mu_), the decision chunk with the detection engine's learning and the
// hardware classes (decide_mu_), one worker thread per sink lane (sink_worker.h), repair steps
// (decisions.cpp: repair_pass, under the decision locks), snapshots (snapshot_mu_). Every decision
// reaches the journal, memory and the sinks through one commit path (commit.h). The code is split
// by stage over drainer/src: ingest.cpp, replay.cpp, decisions.cpp, fabric_switches.cpp,
// sink_worker.cpp (the one worker loop and the outcomes it applies), sinks.cpp (the sink table) and
// one file per sink behind sink.h, drainer.cpp (construction, open, threads, views).
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "vigil/base/clock.h"
#include "vigil/base/result.h"
#include "vigil/detect/detect.h"
#include "vigil/drainer/classes.h"
#include "vigil/drainer/config.h"
#include "vigil/drainer/intent.h"
#include "vigil/drainer/journal.h"
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

class AuditLog;
class IngestLog;
class Outbox;
class SlurmViewCache;
struct BreakerReset;
struct Decided;
struct IngestState;
struct JournalRecord;
enum class DoneOutcome;
struct RepairStep;
struct SinkLane;
struct SinkResult;

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
  bool ready() const { return ready_.load() && !journal_failed_.load(); }
  // A journal append or sync failed: the drainer decides and sends nothing more; restart it so
  // it replays its journal (docs/drainer.md "When the journal fails").
  bool journal_failed() const { return journal_failed_.load(); }

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
  int run_slurm_sink_once() { return run_sink_once(SinkKind::kSlurm); }  // one RPC per reason
  int run_kube_sink_once() { return run_sink_once(SinkKind::kKubernetes); }
  int tick();  // staleness sweep + report ages; returns nodes that became stale
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
  Metrics& metrics() { return metrics_; }
  const DrainerConfig& config() const { return cfg_; }
  std::shared_ptr<slurm::SlurmApi> slurm_api() const { return slurm_; }  // null: disabled
  const Clock& clock() const { return clock_; }
  std::string metrics_text();  // refreshes report ages, then serialises

 private:
  struct PassView;
  // The one failure policy of the journal (docs/drainer.md "When the journal fails"). A failed
  // write may leave part of a record at the segment's end and has used up sequence numbers, and
  // after a failed fdatasync the kernel may have dropped the dirty pages while reporting them
  // clean on the next call: no later append or sync can be trusted. So the drainer stops: what
  // the failed commit decided is never sent (its intents are dropped), nothing more is decided,
  // sent or snapshotted, ingest answers an error (clients keep their reports), /readyz fails,
  // and `serve` exits non-zero. The restart replays the journal: every accepted report without
  // a durable decision is decided again. Journal, memory and Slurm then agree.
  void fail_journal(const Error& e, std::string_view during);
  // r.ok(), or false after fail_journal(r.error(), during).
  template <typename T>
  bool committed(const Result<T>& r, std::string_view during) {
    if (r.ok()) return true;
    fail_journal(r.error(), during);
    return false;
  }

  // The one commit path of every decision (commit.h).
  struct Commit;
  // Appends c.records. A failed append stops the drainer (fail_journal) and puts memory back as
  // the journal holds it: the nodes and breaker as they were before these records, no intents.
  VoidResult append_locked(Commit& c, std::string_view during);
  // After every append of the commit: syncs, then hands c.intents to the outbox and wakes the
  // sink workers. A failed sync stops the drainer and sends nothing.
  VoidResult publish(Commit& c, std::string_view during);
  // Moves the node's record into c.before, copies the breaker into c.breaker_before, once each.
  void remember_locked(Commit& c, const std::string& node);
  // decisions.cpp
  // A drain the Slurm sink did not issue (node unknown, DOWN/FAIL/MAINT or someone else's
  // drain by the time it acted): the node must not stay recorded as drained by vigil.
  struct NotDrained {
    Intent intent;
    std::string why;
    NodeState state;
  };

  // replay.cpp
  // Under the ingest log's lock and mu_, at open() before any thread starts.
  VoidResult replay(const Recovered& rec, IngestState& in);
  VoidResult replay_snapshot(const nlohmann::json& s, IngestState& in);
  void replay_record(const JournalRecord& rec, IngestState& in);
  // The one state transition of a decision, live and in replay: the node's new state, the
  // breaker (whole or the drain it counted), the detection engine's reset on a resume. The
  // intents are the caller's: live enqueues them once durable, replay at once.
  void apply_locked(const Decided& d);
  // The same for an operator's breaker reset: the breaker as the record holds it.
  void apply_locked(const BreakerReset& b);
  VoidResult maybe_snapshot();
  struct StateCopy;  // replay.cpp
  StateCopy copy_state_locked(const IngestState& in) const;
  static nlohmann::json snapshot_json(const StateCopy& c);

  // decisions.cpp
  // Decides up to 256 reports and appends the decisions (not yet synced); their intents join
  // c.intents for process_pending's publish: one sync, then the outbox.
  int process_chunk(PassView& pass, Commit& c);
  // The report the policy decides on: `r` with the fail-slow verdicts folded in (detection
  // enabled), after the detection engine judged it and learned from it (unless the node is
  // drained). Also used by replay to rebuild the engine's baselines.
  NodeReport judge_slow_locked(const NodeReport& r, const NodeRecord* prev);
  // `judged` with the verdicts of its hardware class folded in (classes.h): its inventory against
  // the consensus of the other nodes Slurm declares alike, learned unless the node is drained.
  // Live decisions only; replay does not rebuild the classes (they are learned again).
  NodeReport judge_class_locked(NodeReport judged,
                                const std::map<std::string, slurm::SlurmNodeInfo>& view,
                                const std::map<std::string, int>& declared, const NodeRecord* prev);
  // What a decision journals: the node's new record (with the drain's evidence), the intents
  // its event and a breaker change owe, the breaker whole or the drain it counted.
  Decided decided_locked(const Decision& d, const NodeReport* r, uint64_t report_seq,
                         std::optional<Action> event, const std::string& now);
  // The audit line and the metrics of a decision once it is applied: they observe, never decide.
  void observe_decision_locked(const Decision& d, const NodeRecord& s, const NodeReport* r,
                               std::optional<std::string_view> repair_step, bool breaker_changed,
                               const std::string& now);
  // A decision into the commit: decided_locked, applied, observed. `event` overrides the event's
  // type (default: the decision's action).
  void apply_decision_locked(const Decision& d, const NodeReport* r, uint64_t report_seq, Commit& c,
                             std::optional<Action> event = std::nullopt);
  // The intents `e` owes, one per enabled sink whose table row says so (sinks.h).
  void owe_intents_locked(const NodeEvent& e, const std::string& reason, bool by_operator,
                          std::vector<Intent>& out);
  void refresh_gauges_locked();
  std::optional<std::string_view> repair_step_of(const Decision& d, const NodeReport* r,
                                                 std::optional<Action> event) const;
  // The repair ladder (repair.h) over the nodes Vigil drained: one journaled decision per step.
  int repair_pass();
  // Evidence is written under mu_, as journal appends are: one small file per drain, no fsync.
  std::string save_evidence_locked(const NodeRecord& s, const NodeReport& r, uint64_t report_seq);

  // sink_worker.cpp
  SinkLane& lane(SinkKind k) { return *lanes_[static_cast<size_t>(k)]; }
  int run_lane_once(SinkLane& lane);
  // The batch for the lane's sink: the newest pending intent per node (the ones it supersedes
  // recorded as done), or for an ordered sink each node's oldest.
  std::vector<Intent> pick(SinkLane& lane);
  // Records what the sink reported; returns how many intents are left to retry.
  int apply_outcomes(SinkLane& lane, const std::vector<Intent>& batch, const SinkResult& r);
  // Metrics and audit lines of a batch's outcomes: the one place every sink's are recorded.
  void observe_outcomes(const SinkLane& lane, const std::vector<Intent>& batch, const SinkResult& r,
                        const std::vector<uint64_t>& gave_up);
  void record_done(const std::vector<uint64_t>& ids, DoneOutcome outcome);
  void correct_not_drained(const std::vector<NotDrained>& not_drained);
  bool has_work_locked(SinkKind k) const;
  void loop_sink(SinkLane& lane);

  // drainer.cpp
  void loop_processor();
  void loop_tick();

  // ---- What the drainer holds, by stage, each with the one lock or thread that guards it ----
  // Lock order: pass_mu_ or snapshot_mu_ (never both) -> decide_mu_ -> the ingest log's lock ->
  // mu_. Every journal append happens under the ingest log's lock or mu_, so holding the last
  // three gives a consistent snapshot.

  // Set by the constructor and open(), read-only after: the configuration, the APIs, the clock
  // and the pure policy engine. The journal, the audit log, the metrics and the Slurm view cache
  // each guard themselves (their headers).
  DrainerConfig cfg_;
  std::shared_ptr<slurm::SlurmApi> slurm_;
  std::shared_ptr<kube::KubeApi> kube_;
  std::shared_ptr<WebhookPoster> webhook_;
  const Clock& clock_;
  PolicyEngine engine_;
  Metrics metrics_;
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<AuditLog> audit_;
  std::unique_ptr<SlurmViewCache> views_;  // Slurm's node table, shared with the Slurm sink

  // The ingest log (ingest_log.h), under its own lock: run ids seen, reports not yet decided.
  std::unique_ptr<IngestLog> ingest_;

  // Decisions: pass_mu_ lets one process_pending pass run at a time and is held until its
  // intents are handed over (a caller that has just ingested must not return while the processor
  // thread is still deciding those reports); repair passes and operator actions take it too, so
  // a node's events stay in order. decide_mu_ lets one decision chunk run at a time and guards
  // what decisions learn: the hardware classes, and with mu_ the detection engine (it learns in
  // chunks and forgets a resumed node under mu_).
  std::mutex pass_mu_;
  mutable std::mutex decide_mu_;
  std::unique_ptr<ClassInventory> classes_;  // null when classes.enabled is false
  std::unique_ptr<detect::Engine> slow_;     // null when detection.enabled is false

  // The node table, under mu_: each node's record, the breaker, the intents owed to the sinks
  // (applied, snapshotted and replayed with the decision that owes them), the re-check listing
  // and each lane's backoff.
  mutable std::mutex mu_;
  std::map<std::string, NodeRecord> nodes_;
  BreakerState breaker_;
  std::unique_ptr<Outbox> outbox_;  // outbox.h
  // When GET /v1/rechecks last listed a node (requalify.h); not journaled: after a restart a
  // node may be listed once more.
  std::map<std::string, int64_t> requalify_listed_;

  // The sink lanes (sink_worker.h), by SinkKind: one worker thread each, sinks created by open().
  std::vector<std::unique_ptr<SinkLane>> lanes_;

  std::mutex snapshot_mu_;  // one snapshot at a time (taken before the other locks)

  // The service: its threads (processor, one per enabled lane, tick) and flags.
  std::atomic<bool> ready_{false};
  std::atomic<bool> journal_failed_{false};  // set once by fail_journal, never cleared
  std::atomic<bool> stopping_{false};
  std::condition_variable cv_tick_;  // the tick thread waits under mu_
  std::vector<std::thread> threads_;
};

}  // namespace vigil::drainer
