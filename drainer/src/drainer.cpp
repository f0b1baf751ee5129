// The Drainer: construction, open, the background threads and the read-only views. The steps
// live in ingest.cpp, replay.cpp, decisions.cpp and sink_worker.cpp; see vigil/drainer/drainer.h
// for the durability model and the stages.
#include "vigil/drainer/drainer.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "audit_log.h"
#include "commit.h"
#include "ingest_log.h"
#include "outbox.h"
#include "sink_worker.h"
#include "slurm_view_cache.h"
#include "vigil/base/files.h"
#include "vigil/base/time.h"
#include "vigil/drainer/qualify_gate.h"
#include "vigil/report/check_catalog.h"

namespace vigil::drainer {

Drainer::Drainer(DrainerConfig cfg, std::shared_ptr<slurm::SlurmApi> slurm,
                 std::shared_ptr<kube::KubeApi> kube, const Clock& clock,
                 std::shared_ptr<WebhookPoster> webhook)
    : cfg_(std::move(cfg)),
      slurm_(std::move(slurm)),
      kube_(std::move(kube)),
      webhook_(std::move(webhook)),
      clock_(clock),
      engine_(cfg_.policy, cfg_.breaker, cfg_.dry_run, clock, cfg_.repair.ladder_on(),
              PartRule{cfg_.repair.part_drains, cfg_.repair.part_window_s}, cfg_.repair.reboot),
      views_(std::make_unique<SlurmViewCache>(slurm_.get(), clock_, cfg_.slurm.view_max_age_s)) {
  ingest_ = std::make_unique<IngestLog>();
  outbox_ = std::make_unique<Outbox>();
  // The configuration was validated when it was parsed (config.cpp), so this cannot throw.
  if (cfg_.detection.enabled) slow_ = std::make_unique<detect::Engine>(cfg_.detection.engine);
  if (cfg_.classes.enabled) classes_ = std::make_unique<ClassInventory>(cfg_.classes);
  for (const SinkSpec& spec : sink_specs()) {
    lanes_.push_back(std::make_unique<SinkLane>(spec, spec.lane(cfg_)));
    // Every sink's series from the start, so that increase() sees its first event.
    metrics_.on_given_up(spec.name, 0);
    metrics_.set_pending(spec.name, 0);
    for (const auto& [a, name] : kIntentActionNames)
      if (spec.takes(a))
        for (auto outcome :
             {Metrics::Outcome::kOk, Metrics::Outcome::kError, Metrics::Outcome::kSkipped})
          metrics_.on_action(a, spec.kind, outcome, 0);
  }
}

Drainer::~Drainer() { stop(); }

namespace {

// <state_dir>/gate-since: when the qualify gate began learning the fleet (one integer, unix
// seconds), written the first time the drainer opens its state with gate.new_nodes on, and again
// whenever it opens a state that knows no node (a lost or new journal: every node would look
// new). Nodes first heard from gate.learn_s after it are new (qualify_gate.h).
Result<int64_t> gate_since(const std::string& state_dir, int64_t now, bool known_nodes) {
  const std::string path = state_dir + "/gate-since";
  if (auto text = known_nodes ? read_whole_file(path) : std::nullopt) {
    char* end = nullptr;
    const long long v = std::strtoll(text->c_str(), &end, 10);
    if (end == text->c_str() || v <= 0 || (*end != '\n' && *end != '\0'))
      return Error{path +
                       ": not a unix time (one integer); delete it to start learning the "
                       "fleet again",
                   "Drainer::open"};
    return static_cast<int64_t>(v);
  }
  if (auto w = replace_file_atomically(path, std::to_string(now) + "\n"); !w.ok()) return w.error();
  return now;
}

}  // namespace

VoidResult Drainer::open() {
  VIGIL_TRY(journal_, Journal::open(cfg_.state_dir));
  VIGIL_TRY(audit_, AuditLog::open(cfg_.state_dir + "/audit.jsonl", cfg_.audit));
  const SinkDeps deps{cfg_, slurm_, kube_, webhook_, *views_, clock_};
  for (auto& l : lanes_) l->sink = l->spec.make(deps);
  if (cfg_.webhook.enabled && !lane(SinkKind::kWebhook).sink)
    return Error{"webhook.enabled, but this drainer was given no webhook transport",
                 "Drainer::open"};
  VIGIL_TRY(auto rec, journal_->recover());
  const VoidResult replayed = ingest_->locked([&](IngestState& in) {
    std::lock_guard lk(mu_);
    return replay(rec, in);
  });
  if (!replayed.ok()) return replayed;
  if (cfg_.policy.gate.new_nodes) {
    bool known = false;
    {
      std::lock_guard lk(mu_);
      known = !nodes_.empty();
    }
    VIGIL_TRY(const int64_t since, gate_since(cfg_.state_dir, clock_.now_unix(), known));
    engine_.set_state_began(since);
  }
  {
    std::lock_guard lk(mu_);
    for (const auto& [name, s] : nodes_) metrics_.on_node(s, nullptr);
    refresh_gauges_locked();
  }
  ready_ = true;
  return ok_result();
}

// ---- views ----

nlohmann::json Drainer::nodes_view() const {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& s : this->nodes()) nodes.push_back(to_json(s));
  nlohmann::json pending = nlohmann::json::object();
  for (const SinkSpec& k : sink_specs()) pending[std::string(k.name)] = this->pending(k.kind);
  return {{"nodes", nodes},
          {"breaker", to_json(breaker())},
          {"pending_actions", pending},
          {"dry_run", cfg_.dry_run}};
}

std::vector<NodeRecord> Drainer::nodes() const {
  std::lock_guard lk(mu_);
  std::vector<NodeRecord> v;
  for (const auto& [n, s] : nodes_) v.push_back(s);
  return v;
}

std::optional<NodeRecord> Drainer::node(const std::string& name) const {
  std::lock_guard lk(mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return std::nullopt;
  return it->second;
}

std::vector<detect::HealthyFigures> Drainer::healthy_figures(const std::string& sku) const {
  // The engine learns inside decision passes (decide_mu_) and forgets a resumed node's figures
  // under mu_: hold both, in the lock order.
  std::scoped_lock lk(decide_mu_, mu_);
  if (!slow_) return {};
  return slow_->healthy_figures(sku);
}

std::vector<ClassSummary> Drainer::hardware_classes() const {
  std::lock_guard lk(decide_mu_);  // classes_ learns inside decision passes
  if (!classes_) return {};
  return classes_->summary();
}

std::vector<RecheckDue> Drainer::rechecks_due() {
  std::lock_guard lk(mu_);
  std::vector<RecheckDue> out;
  const int64_t now = clock_.now_unix();
  for (const auto& [name, s] : nodes_) {
    auto listed = requalify_listed_.find(name);
    if (!s.drained_by_vigil && listed != requalify_listed_.end()) {
      requalify_listed_.erase(listed);
      continue;
    }
    const int64_t last = listed == requalify_listed_.end() ? 0 : listed->second;
    // A node the qualify gate holds runs the gate's suite (qualify_gate.h), whatever drove it.
    if (!gate_hold(s).empty()) {
      if (auto why = gate_due(s, cfg_.policy.gate, now, last)) {
        requalify_listed_[name] = now;
        out.push_back({name, std::move(*why), cfg_.policy.gate.suite});
      }
      continue;
    }
    auto why = requalify_due(s, cfg_.policy, now, last);
    if (!why) continue;
    requalify_listed_[name] = now;  // a try: backs off like a re-check that failed
    // A drain by gpu_soak (qualify suite only) is re-checked by a run that has it.
    out.push_back({name, std::move(*why), std::string(suite_to_run(s.driving_checks))});
  }
  return out;
}

BreakerState Drainer::breaker() const {
  std::lock_guard lk(mu_);
  return breaker_;
}

size_t Drainer::pending(SinkKind sink) const {
  std::lock_guard lk(mu_);
  return outbox_->count(sink);
}

size_t Drainer::undecided() const { return ingest_->undecided(); }

std::vector<Intent> Drainer::pending_intents() const {
  std::lock_guard lk(mu_);
  return outbox_->intents();
}

std::string Drainer::metrics_text() {
  const int64_t now = clock_.now_unix();
  {
    std::lock_guard lk(mu_);
    for (const auto& [name, s] : nodes_)
      if (s.last_report_unix)
        metrics_.set_report_age(name, static_cast<double>(now - s.last_report_unix));
    refresh_gauges_locked();  // a decision without intents (a pass, a ladder step) refreshes none
  }
  return metrics_.serialize();
}

void Drainer::fail_journal(const Error& e, std::string_view during) {
  if (journal_failed_.exchange(true)) return;
  std::fprintf(stderr,
               "vigil-drainer: journal %.*s failed: %s; nothing more is decided or sent until a "
               "restart replays the journal\n",
               static_cast<int>(during.size()), during.data(), e.to_string().c_str());
  audit_->write({{"time", rfc3339_utc(clock_.now_unix())},
                 {"event", "journal_error"},
                 {"during", during},
                 {"error", e.to_string()}});
  ingest_->notify();  // may hold mu_: no ingest lock
}

// ---- background threads ----

void Drainer::start() {
  if (!threads_.empty()) return;
  stopping_ = false;
  threads_.emplace_back([this] { loop_processor(); });
  // A disabled sink gets no worker: its pending intents (replayed from a run that had it)
  // stay journaled for a run that has it again.
  for (auto& l : lanes_)
    if (l->sink) threads_.emplace_back([this, &l] { loop_sink(*l); });
  threads_.emplace_back([this] { loop_tick(); });
}

void Drainer::stop() {
  if (threads_.empty()) return;
  {
    std::lock_guard lk(mu_);  // loop_tick waits under it
    stopping_ = true;
  }
  ingest_->wake();
  for (auto& l : lanes_) l->cv.notify_all();
  cv_tick_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
  if (journal_) (void)snapshot_now();
}

void Drainer::loop_processor() {
  while (!stopping_) {
    // A failed journal decides nothing more: waiting reports must not spin this loop.
    ingest_->wait_for_work(std::chrono::seconds(1), stopping_, journal_failed_);
    if (stopping_) break;
    process_pending();
    (void)maybe_snapshot();
  }
}

void Drainer::loop_tick() {
  int64_t last_spool = 0;
  while (!stopping_) {
    {
      std::unique_lock lk(mu_);
      cv_tick_.wait_for(lk, std::chrono::seconds(1), [&] { return stopping_.load(); });
      if (stopping_) break;
    }
    tick();
    const int64_t now = clock_.now_unix();
    if (!cfg_.spool_dir.empty() && now - last_spool >= cfg_.spool_scan_s) {
      last_spool = now;
      (void)ingest_dir(cfg_.spool_dir);
    }
  }
}

}  // namespace vigil::drainer
