#pragma once
// The drainer core behind vigil/drainer/drainer.h (the Drainer forwards to it): its state, its
// locks and its threads. Only drainer/src includes this header.
//
// The drainer core: ingest (durable, idempotent) -> policy engine -> the sinks of the sink
// table (src/sinks.cpp: Slurm, Kubernetes, webhook), metrics and the audit log observing every
// decision and every outcome. Used by `vigil-drainer serve` (background threads) and by the
// one-shot commands (`apply`, `resume`, `breaker reset`), which drive the same steps by hand.
//
// Durability: every accepted report is journaled (fsync) before ingest() returns. Each policy
// decision is journaled as the node's new state plus the sink *intents* it creates; when a
// sink reports an intent completed, the drainer journals a *done* record. On restart, state =
// snapshot + replay; reports without a decision are decided again; intents without done are
// re-checked against Slurm (already applied -> marked done, not repeated) and then applied.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ingest_log.h"
#include "outbox.h"
#include "slurm_view_cache.h"
#include "vigil/base/result.h"
#include "vigil/detect/detect.h"
#include "vigil/drainer/classes.h"
#include "vigil/drainer/config.h"
#include "vigil/drainer/drainer.h"
#include "vigil/drainer/intent.h"
#include "vigil/drainer/journal.h"
#include "vigil/drainer/metrics.h"
#include "vigil/drainer/policy.h"
#include "vigil/drainer/run_ids.h"
#include "vigil/drainer/webhook.h"
#include "vigil/kube/kube_api.h"
#include "vigil/report/drain_decision.h"
#include "vigil/report/report.h"
#include "vigil/slurm/slurm_api.h"

namespace vigil::drainer {

class AuditLog;
struct BreakerReset;
struct Decided;
struct JournalRecord;
enum class DoneOutcome;
struct NodeEvent;
struct SinkLane;
struct SinkResult;

// Code layout (docs/drainer.md "Internal structure"): ingest.cpp, replay.cpp, decisions.cpp,
// sink_worker.cpp (the one worker loop and the outcomes it applies), sinks.cpp (the sink table)
// and one file per sink behind src/sink.h, slurm_view_cache.cpp, drainer_core.cpp (the rest).
class DrainerCore {
 public:
  // slurm / kube may be null (sink disabled); webhook is the transport webhook.enabled needs
  // (make_http_webhook in the program). clock must outlive the Drainer.
  DrainerCore(DrainerConfig cfg, std::shared_ptr<slurm::SlurmApi> slurm,
              std::shared_ptr<kube::KubeApi> kube, const Clock& clock,
              std::shared_ptr<WebhookPoster> webhook = nullptr);
  ~DrainerCore();
  DrainerCore(const DrainerCore&) = delete;
  DrainerCore& operator=(const DrainerCore&) = delete;

  // The public API; each call is documented in vigil/drainer/drainer.h, which forwards here.
  VoidResult open();
  bool ready() const { return ready_.load() && !journal_failed_.load(); }
  // A journal append or sync failed (fail_journal): nothing more is decided, sent or
  // snapshotted in this process; `vigil-drainer serve` exits so a restart replays the journal.
  bool journal_failed() const { return journal_failed_.load(); }
  void start();
  void stop();
  Result<IngestOutcome> ingest(const std::vector<NodeReport>& reports,
                               std::vector<nlohmann::json>* received = nullptr);
  Result<int> ingest_dir(const std::string& dir);
  std::vector<ReportDecision> decide_now(const std::vector<NodeReport>& reports);
  SharedDrainPolicy shared_policy() const;
  int process_pending();
  int run_sink_once(SinkKind k);
  int tick();
  VoidResult snapshot_now();
  Result<std::string> resume(const std::string& node);
  VoidResult reset_breaker();
  std::vector<NodeRecord> nodes() const;
  nlohmann::json nodes_view() const;
  std::optional<NodeRecord> node(const std::string& name) const;
  BreakerState breaker() const;
  std::vector<detect::HealthyFigures> healthy_figures(const std::string& sku) const;
  std::vector<ClassSummary> hardware_classes() const;
  std::vector<RecheckDue> rechecks_due();
  size_t pending(SinkKind sink) const;
  size_t undecided() const;
  std::vector<Intent> pending_intents() const;
  Metrics& metrics() { return metrics_; }
  const DrainerConfig& config() const { return cfg_; }
  std::shared_ptr<slurm::SlurmApi> slurm_api() const { return slurm_; }
  const Clock& clock() const { return clock_; }
  std::string metrics_text();

 private:
  using Accepted = IngestState::Accepted;
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

  // The one commit path of every decision (docs/drainer.md "One commit path"): a report's, the
  // staleness sweep's, a switch verdict's spread, a repair step, a drain Slurm did not apply, an
  // operator's resume and breaker reset. Each decision is applied to memory as it is made (a
  // later one in the same batch sees it: the breaker, a switch's nodes) and gathers here its
  // journal records, the intents it owes and what memory held before it. Then:
  //   append_locked (under mu_) -> publish: one fdatasync (outside mu_), the intents join the
  //   outbox (under mu_), the sink workers wake.
  // Replay applies the same records with apply_locked and owes the same intents.
  struct Commit {
    std::vector<nlohmann::json> records;  // not yet appended
    std::vector<Intent> intents;          // owed once the records are durable
    // Each node's record (nullopt: none) and the breaker before this commit's first decision on
    // them since the last append: a failed append puts them back.
    std::map<std::string, std::optional<NodeRecord>> before;
    std::optional<BreakerState> breaker_before;
    // An operator is told it happened: synced even when no sink is owed anything.
    bool answered = false;
  };
  // Appends c.records. A failed append stops the drainer (fail_journal) and puts memory back as
  // the journal holds it: the nodes and breaker as they were before these records, no intents.
  VoidResult append_locked(Commit& c, std::string_view during);
  // After every append of the commit: syncs, then hands c.intents to the outbox and wakes the
  // sink workers. A failed sync stops the drainer and sends nothing.
  VoidResult publish(Commit& c, std::string_view during);
  // Moves the node's record and the breaker into c.before once per append (then apply_locked).
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
  // Decides up to 256 reports and journals the decisions (not yet synced); their intents are
  // appended to `intents` for process_pending to enqueue after one sync.
  int process_chunk(PassView& pass, Commit& c);
  // The report the policy decides on: `r` with the fail-slow verdicts folded in (detection
  // enabled), after the detection engine judged it and learned from it (unless the node is
  // drained). Also used by replay to rebuild the engine's baselines.
  NodeReport judge_slow_locked(const NodeReport& r, const NodeRecord* prev);
  // `judged` with the verdicts of its hardware class folded in (classes.h): its inventory against
  // the consensus of the other nodes Slurm declares alike, learned unless the node is drained.
  // Live decisions only; replay does not rebuild the classes (they are learned again).
  NodeReport judge_class_locked(NodeReport judged, const SlurmView& view,
                                const std::map<std::string, int>& declared, const NodeRecord* prev);
  // `event` overrides the event's type (default: the decision's action).
  void apply_decision_locked(const Decision& d, const NodeReport* r, uint64_t report_seq, Commit& c,
                             std::optional<Action> event = std::nullopt);
  // The intents `e` owes, one per enabled sink whose table row says so (sinks.h).
  void owe_intents_locked(const NodeEvent& e, const std::string& reason, bool by_operator,
                          std::vector<Intent>& out);
  // fabric_switches.cpp: `from` carries its switch's newest verdict; every other node known
  // under that switch takes it too (a journaled decision with no action, annotated again).
  void spread_switch_verdict_locked(const NodeRecord& from, const NodeReport& r, Commit& c);
  void refresh_gauges_locked();
  std::optional<std::string_view> repair_step_of(const Decision& d, const NodeReport* r,
                                                 std::optional<Action> event) const;
  // The repair ladder (repair.h) over the nodes Vigil drained: one journaled decision per step.
  int repair_pass();
  // Evidence is written under mu_, as journal appends are: one small file per drain, no fsync.
  std::string save_evidence_locked(const NodeRecord& s, const NodeReport& r, uint64_t report_seq);
  void apply_repair_step_locked(const NodeRecord& prev, NodeRecord next, const RepairStep& step,
                                Commit& c);

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

  DrainerConfig cfg_;
  std::shared_ptr<slurm::SlurmApi> slurm_;
  std::shared_ptr<kube::KubeApi> kube_;
  std::shared_ptr<WebhookPoster> webhook_;
  const Clock& clock_;
  PolicyEngine engine_;
  Metrics metrics_;
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<AuditLog> audit_;
  std::unique_ptr<detect::Engine> slow_;          // null when detection.enabled is false
  std::unique_ptr<SlurmViewCache> views_;         // Slurm's node table, shared with the Slurm sink
  std::vector<std::unique_ptr<SinkLane>> lanes_;  // by SinkKind; sinks created by open()

  // Lock order: pass_mu_ or snapshot_mu_ (never both) -> decide_mu_ -> the ingest log's lock ->
  // mu_. Every journal append happens under the ingest log's lock or mu_, so holding the last
  // three gives a consistent snapshot.
  IngestLog ingest_;       // accepted reports not yet decided, the run ids seen (ingest_log.h)
  mutable std::mutex mu_;  // guards everything below, and each lane's backoff
  std::map<std::string, NodeRecord> nodes_;
  // When GET /v1/rechecks last listed a node (requalify.h); not journaled: after a restart a
  // node may be listed once more.
  std::map<std::string, int64_t> requalify_listed_;
  BreakerState breaker_;
  Outbox outbox_;  // the intents owed to the sinks (outbox.h)

  mutable std::mutex decide_mu_;             // one decision batch at a time; guards classes_
  std::unique_ptr<ClassInventory> classes_;  // null when classes.enabled is false
  std::mutex snapshot_mu_;  // one snapshot at a time (taken before the other locks)
  // One process_pending pass at a time, held until its intents are enqueued: a caller that has
  // just ingested must not return while the processor thread is still deciding those reports.
  std::mutex pass_mu_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> journal_failed_{false};  // set once by fail_journal, never cleared
  std::atomic<bool> stopping_{false};
  std::condition_variable cv_tick_;
  std::vector<std::thread> threads_;
};

}  // namespace vigil::drainer
