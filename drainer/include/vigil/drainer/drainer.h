#pragma once
// The drainer core: ingest (durable, idempotent) -> policy engine -> three equal sinks
// (Slurm, Kubernetes, metrics). Used by `vigil-drainer serve` (background threads) and by the
// one-shot commands (`apply`, `resume`, `breaker reset`), which drive the same steps by hand.
//
// Durability: every accepted report is journaled (fsync) before ingest() returns. Each policy
// decision is journaled as the node's new state plus the sink *intents* it creates; a sink
// journals a *done* record when an intent completed. On restart, state = snapshot + replay;
// reports without a decision are decided again; intents without done are re-checked against
// Slurm (already applied -> marked done, not repeated) and then applied.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "vigil/report/report.h"
#include "vigil/base/result.h"
#include "vigil/drainer/config.h"
#include "vigil/drainer/journal.h"
#include "vigil/kube/kube_api.h"
#include "vigil/drainer/metrics.h"
#include "vigil/drainer/policy.h"
#include "vigil/slurm/slurm_api.h"

namespace vigil::drainer {

struct IngestOutcome {
  int accepted = 0;
  int duplicates = 0;
};

// One action a sink owes. Drains with the same reason are applied in one Slurm RPC.
struct Intent {
  uint64_t id = 0;
  std::string sink;    // "slurm" | "kubernetes"
  std::string action;  // "drain" | "resume" | "annotate"
  std::string node;
  std::string reason;        // drain reason
  bool by_operator = false;  // resume requested by `vigil-drainer resume`
  int attempts = 0;
};

class AuditLog;

class Drainer {
 public:
  // slurm / kube may be null (sink disabled). clock must outlive the Drainer.
  Drainer(DrainerConfig cfg, std::shared_ptr<slurm::SlurmApi> slurm, std::shared_ptr<kube::KubeApi> kube,
          const Clock& clock);
  ~Drainer();
  Drainer(const Drainer&) = delete;
  Drainer& operator=(const Drainer&) = delete;

  // Opens the journal in cfg.state_dir, rebuilds state (snapshot + replay). After this the
  // drainer is ready: ingest() works.
  VoidResult open();
  bool ready() const { return ready_.load(); }

  // Background threads: decisions, Slurm sink (batching, retry/backoff), Kubernetes sink,
  // staleness + spool scan. stop() joins them (also done by the destructor).
  void start();
  void stop();

  // Durable + idempotent on (node, run_id). Returns after the journal fsync.
  Result<IngestOutcome> ingest(const std::vector<NodeReport>& reports);
  // Reads every *.json in dir (one report or an array per file), ingests, deletes the file
  // once durable; unparsable files move to dir/rejected/. Returns the number of files taken.
  Result<int> ingest_dir(const std::string& dir);

  // ---- steps, driven by the threads or by hand (one-shot commands, tests) ----
  int process_pending();      // decides every accepted report not yet decided; returns count
  int run_slurm_sink_once();  // applies pending Slurm intents (one RPC per reason); returns left
  int run_kube_sink_once();   // applies pending Kubernetes intents; returns left
  int tick();                 // staleness sweep + report ages; returns nodes that became stale
  VoidResult snapshot_now();

  // ---- operator actions ----
  Result<std::string> resume(const std::string& node);  // returns what happened
  VoidResult reset_breaker();

  // ---- views ----
  std::vector<NodeState> nodes() const;
  std::optional<NodeState> node(const std::string& name) const;
  BreakerState breaker() const;
  size_t pending(const std::string& sink) const;
  size_t undecided() const;  // accepted reports not yet decided
  std::vector<Intent> pending_intents() const;
  Metrics& metrics() { return metrics_; }
  const DrainerConfig& config() const { return cfg_; }
  std::string metrics_text();  // refreshes report ages, then serialises

 private:
  struct Accepted {
    uint64_t seq;
    NodeReport report;
  };
  using SlurmView = std::map<std::string, slurm::SlurmNodeInfo>;
  // Slurm's view for one decision pass, read (or reused) by its first chunk, and the node count
  // per partition derived from it once.
  struct PassView {
    std::shared_ptr<const SlurmView> view;
    std::map<std::string, int> partition_counts;
  };
  // Decides up to 256 reports and journals the decisions (not yet synced); their intents are
  // appended to `intents` for process_pending to enqueue after one sync.
  int process_chunk(PassView& pass, std::vector<Intent>& intents);
  void apply_decision_locked(const Decision& d, const NodeReport* r, uint64_t report_seq,
                             std::vector<nlohmann::json>& records, std::vector<Intent>& intents);
  void enqueue_intents_locked(const std::vector<Intent>& intents);
  void record_done(const std::vector<uint64_t>& ids, const std::string& outcome);
  // A drain the sink did not issue (node unknown, DOWN/FAIL/MAINT or someone else's drain by
  // the time it acted): the node must not stay recorded as drained by vigil.
  struct SkippedDrain {
    Intent intent;
    std::string why;
    NodeHealth health;
  };
  void forget_skipped_drains(const std::vector<SkippedDrain>& skipped);
  VoidResult maybe_snapshot();
  nlohmann::json snapshot_json_locked() const;
  VoidResult replay(const Recovered& rec);
  // Slurm's node table: the remembered one while it is younger than slurm.view_max_age_s
  // (unless `fresh`), else read now. Empty when Slurm is unreachable or disabled.
  std::shared_ptr<const SlurmView> slurm_view(bool fresh);
  // Reads Slurm's node table now; publish: remember it for later decision passes, unless the
  // sink acted while it was being read.
  Result<std::shared_ptr<const SlurmView>> read_slurm_view(bool publish);
  void invalidate_view();  // the sink is about to act, or just did
  std::string kube_node_name(const NodeState& s);
  void refresh_gauges_locked();
  bool has_work_locked(const std::string& sink) const;
  void loop_processor();
  void loop_slurm();
  void loop_kube();
  void loop_tick();

  DrainerConfig cfg_;
  std::shared_ptr<slurm::SlurmApi> slurm_;
  std::shared_ptr<kube::KubeApi> kube_;
  const Clock& clock_;
  PolicyEngine engine_;
  Metrics metrics_;
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<AuditLog> audit_;

  // Lock order: decide_mu_ -> ingest_mu_ -> mu_. Every journal append happens under
  // ingest_mu_ or mu_, so holding all three gives a consistent snapshot.
  mutable std::mutex ingest_mu_;                              // guards seen_runs_, undecided_
  std::map<std::string, std::deque<std::string>> seen_runs_;  // node -> recent run ids
  std::deque<Accepted> undecided_;
  mutable std::mutex mu_;  // guards everything below
  std::map<std::string, NodeState> nodes_;
  BreakerState breaker_;
  std::map<uint64_t, Intent> pending_;  // by id
  std::set<uint64_t> in_flight_;
  uint64_t next_intent_id_ = 1;
  std::map<std::string, int64_t> pod_lookup_cache_;

  std::mutex view_mu_;  // guards view_, view_at_, view_gen_
  std::shared_ptr<const SlurmView> view_;
  int64_t view_at_ = 0;    // when the remembered table's read started
  uint64_t view_gen_ = 0;  // bumped whenever the sink acts (or publishes its own read)

  std::mutex decide_mu_;  // one decision batch at a time
  std::atomic<bool> ready_{false};
  std::atomic<bool> stopping_{false};
  std::condition_variable cv_work_;
  std::condition_variable cv_slurm_;
  std::condition_variable cv_kube_;
  std::condition_variable cv_tick_;
  std::vector<std::thread> threads_;
  int64_t slurm_backoff_ms_ = 0;
  int64_t kube_backoff_ms_ = 0;
};

}  // namespace vigil::drainer
