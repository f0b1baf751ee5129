// Decisions: reports -> policy engine -> the node's next state plus the sink intents it owes,
// journaled; the staleness sweep and the operator actions decide the same way.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "audit_log.h"
#include "commit.h"
#include "decider.h"
#include "ingest_log.h"
#include "outbox.h"
#include "records.h"
#include "sink_worker.h"
#include "slurm_view_cache.h"
#include "vigil/base/files.h"
#include "vigil/base/time.h"
#include "vigil/drainer/drainer.h"
#include "vigil/drainer/qualify_gate.h"
#include "vigil/drainer/slow_verdicts.h"
#include "vigil/slurm/reason.h"

namespace vigil::drainer {

// Slurm's view for one decision pass, read (or reused) by its first chunk, and the node count
// per partition derived from it once.
struct Drainer::PassView {
  std::shared_ptr<const SlurmView> view;
  std::map<std::string, int> partition_counts;
  std::map<std::string, int> declared;  // nodes per Slurm declaration (classes.h)
};

void Drainer::apply_locked(const Decided& d) {
  // A resumed node was repaired: its old figures are no baseline for the new hardware.
  if (slow_ && cfg_.detection.reset_on_resume && d.action == Action::kResume)
    slow_->reset_node(d.record.node);
  nodes_[d.record.node] = d.record;
  if (d.breaker)
    breaker_ = *d.breaker;
  else if (d.breaker_drain)
    Breaker(cfg_.breaker).count(breaker_, *d.breaker_drain);
}

void Drainer::apply_locked(const BreakerReset& b) { breaker_ = b.breaker; }

void Drainer::owe_intents_locked(const NodeEvent& e, const std::string& reason, bool by_operator,
                                 std::vector<Intent>& out) {
  for (const auto& l : lanes_) {
    if (!l->sink) continue;
    auto action = l->spec.owed(e);
    if (!action) continue;
    Intent i;
    i.id = outbox_->take_id();
    i.sink = l->spec.kind;
    i.action = *action;
    i.node = e.node;
    // The journal has always held these for Slurm's drains and resumes (and reboots) only.
    const bool slurm_action = l->spec.kind == SinkKind::kSlurm;
    i.reason = slurm_action ? reason : "";
    i.by_operator = slurm_action && by_operator;
    if (*action == IntentAction::kReboot) i.decided_unix = clock_.now_unix();
    i.event = e;
    out.push_back(std::move(i));
  }
}

// The ladder step a decision is, for vigil_repair_steps_total (docs/repair.md).
std::optional<std::string_view> Drainer::repair_step_of(const Decision& d, const NodeReport* r,
                                                        std::optional<Action> event) const {
  if (event == Action::kRebooted || event == Action::kRedrain) return to_string(*event);
  if (d.action == Action::kReboot || d.action == Action::kReplace ||
      d.action == Action::kResetGpu || d.action == Action::kResetPassed ||
      d.action == Action::kResetFailed)
    return to_string(d.action);
  const auto it = nodes_.find(d.record.node);
  if (d.action == Action::kResume && r && it != nodes_.end() &&
      it->second.repair.stage == RepairStage::kRechecking)
    return "repaired";
  return std::nullopt;
}

// Evidence for the repair ladder (docs/repair.md): the report that drained the node, kept before
// anything reboots it. One small file per drain while reboots are on; a failed write is logged
// and the drain goes on without it.
std::string Drainer::save_evidence_locked(const NodeRecord& s, const NodeReport& r,
                                          uint64_t report_seq) {
  const std::string dir =
      cfg_.repair.evidence_dir.empty() ? cfg_.state_dir + "/evidence" : cfg_.repair.evidence_dir;
  const int64_t now = clock_.now_unix();
  // The report's journal sequence number makes the name unique (two drains in one second, a
  // clock stepped back); node names are [A-Za-z0-9._-] (the report's validation).
  const std::string path = dir + "/" + s.node + "-" + std::to_string(now) + "-" +
                           std::to_string(report_seq) + "-drain.json";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const nlohmann::json doc = {{"node", s.node},
                              {"decided", rfc3339_utc(now)},
                              {"reason", s.reason},
                              {"checks", s.driving_checks},
                              {"report", to_json(r)}};
  if (auto w = replace_file_atomically(path, doc.dump(2) + "\n", {0640, false}); !w.ok()) {
    std::fprintf(stderr, "vigil-drainer: evidence for %s not kept: %s\n", s.node.c_str(),
                 w.error().to_string().c_str());
    return "";
  }
  return path;
}

Decided Drainer::decided_locked(const Decision& d, const NodeReport* r, uint64_t report_seq,
                                std::optional<Action> event, const std::string& now) {
  Decided rec;
  rec.action = d.action;
  rec.record = d.record;
  rec.report_seq = report_seq;
  // Evidence only for a drain while the ladder may reboot the node (docs/repair.md).
  if (d.action == Action::kDrain && r && cfg_.repair.ladder_on())
    rec.record.repair.evidence = save_evidence_locked(d.record, *r, report_seq);
  NodeEvent e = state_event(rec.record, event.value_or(d.action));
  e.time = now;
  e.before = d.before;
  e.checks = d.driving_checks;
  e.run_id = r ? r->run_id : "";
  e.dry_run = cfg_.dry_run;
  owe_intents_locked(e, d.reason, d.by_operator, rec.intents);
  if (d.breaker.open != breaker_.open) {
    NodeEvent b;
    b.type = d.breaker.open ? Action::kBreakerOpened : Action::kBreakerClosed;
    b.time = now;
    b.why = d.breaker.why;
    b.dry_run = cfg_.dry_run;
    owe_intents_locked(b, "", false, rec.intents);
  }
  auto delta = Breaker::delta(breaker_, d.breaker, d.counted_drain);
  rec.breaker = std::move(delta.whole);
  rec.breaker_drain = std::move(delta.drain);
  return rec;
}

namespace {

// The drain a decision ends or begins, from the node's record before it.
struct DrainBefore {
  bool drained = false;
  int64_t drained_unix = 0;
  int64_t last_drain_unix = 0;
  std::string cause;  // the first driving check, the gate's word, or "other"
};

DrainBefore drain_before(const NodeRecord* was) {
  DrainBefore b;
  if (!was) return b;
  b.last_drain_unix = was->last_drain_unix;
  if (!was->drained_by_vigil) return b;
  b.drained = true;
  b.drained_unix = was->drained_unix;
  b.cause = !was->driving_checks.empty()  ? was->driving_checks.front()
            : is_gate_reason(was->reason) ? std::string(kGateWord)
                                          : "other";
  return b;
}

// The reliability figures (docs/qualify.md): how long a drain held its node, once it ends, and
// the time between a node's incidents, once a new one begins.
void observe_reliability(Metrics& m, const DrainBefore& b, const NodeRecord& after,
                         const Decision& d, int64_t now) {
  // A drain Slurm never applied (undone_drain) did not hold the node.
  if (b.drained && !after.drained_by_vigil && b.drained_unix > 0 &&
      after.last_action != Action::kDrainSkipped)
    m.on_drain_ended(b.cause, static_cast<double>(now - b.drained_unix));
  // A fault's drain (the gate's holds drive no check and are not incidents), the previous one's
  // time from the record before it: two drains within one second are 0 s apart.
  if (!b.drained && d.action == Action::kDrain && !after.driving_checks.empty() &&
      b.last_drain_unix > 0)
    m.on_incident(static_cast<double>(after.last_drain_unix - b.last_drain_unix));
}

}  // namespace

void Drainer::apply_decision_locked(const Decision& d, const NodeReport* r, uint64_t report_seq,
                                    Commit& c, std::optional<Action> event) {
  const std::string now = rfc3339_utc(clock_.now_unix());
  Decided rec = decided_locked(d, r, report_seq, event, now);
  c.records.push_back(to_json(rec));
  const bool breaker_changed = d.breaker.open != breaker_.open;
  const auto step = repair_step_of(d, r, event);  // reads the node's record before this one
  const auto was = nodes_.find(rec.record.node);
  const DrainBefore before = drain_before(was == nodes_.end() ? nullptr : &was->second);
  remember_locked(c, rec.record.node);
  apply_locked(rec);
  observe_decision_locked(d, rec.record, r, step, breaker_changed, now);
  observe_reliability(metrics_, before, rec.record, d, clock_.now_unix());
  for (auto& i : rec.intents) c.intents.push_back(std::move(i));
}

void Drainer::observe_decision_locked(const Decision& d, const NodeRecord& s, const NodeReport* r,
                                      std::optional<std::string_view> repair_step,
                                      bool breaker_changed, const std::string& now) {
  audit_->write({{"time", now},
                 {"event", "decision"},
                 {"node", s.node},
                 {"run_id", r ? r->run_id : ""},
                 {"checks", d.driving_checks},
                 {"state_before", std::string(to_string(d.before))},
                 {"state_after", std::string(to_string(d.after))},
                 {"action", std::string(to_string(d.action))},
                 {"reason", d.reason},
                 {"why", d.why},
                 {"dry_run", cfg_.dry_run}});
  if (d.action == Action::kWouldDrain || d.action == Action::kWouldResume) {
    metrics_.on_action(
        d.action == Action::kWouldDrain ? IntentAction::kDrain : IntentAction::kResume,
        SinkKind::kSlurm, Metrics::Outcome::kDryRun);
  }
  if (repair_step) metrics_.on_repair_step(*repair_step);
  metrics_.on_node(s, r);
  if (breaker_changed) {
    metrics_.set_breaker_open(breaker_.open);
    audit_->write({{"time", now},
                   {"event", breaker_.open ? "breaker_open" : "breaker_closed"},
                   {"why", breaker_.why}});
  }
}

void Drainer::remember_locked(Commit& c, const std::string& node) {
  if (!c.breaker_before) c.breaker_before = breaker_;
  if (c.before.contains(node)) return;
  auto it = nodes_.find(node);
  c.before.emplace(node, it == nodes_.end() ? std::nullopt : std::optional(std::move(it->second)));
}

VoidResult Drainer::append_locked(Commit& c, std::string_view during) {
  auto w = c.records.empty() ? Result<std::vector<uint64_t>>(std::vector<uint64_t>{})
                             : journal_->append(std::move(c.records));
  c.records.clear();
  if (committed(w, during)) {
    c.before.clear();
    c.breaker_before.reset();
    return ok_result();
  }
  for (auto& [node, was] : c.before) {
    if (was)
      nodes_[node] = std::move(*was);
    else
      nodes_.erase(node);
  }
  if (c.breaker_before) breaker_ = *c.breaker_before;
  c.before.clear();
  c.intents.clear();
  return w.error();
}

VoidResult Drainer::publish(Commit& c, std::string_view during) {
  if (journal_failed_)
    return Error{"the journal failed; restart vigil-drainer", std::string(during)};
  // Records nothing acts on yet become durable with the next sync (every ingest syncs).
  if (c.intents.empty() && !c.answered) return ok_result();
  if (auto s = journal_->sync(); !committed(s, during)) {
    c.intents.clear();
    return s.error();
  }
  {
    std::lock_guard lk(mu_);
    outbox_->add(c.intents);
    refresh_gauges_locked();
  }
  c.intents.clear();
  for (auto& l : lanes_) l->cv.notify_one();
  return ok_result();
}

void Drainer::refresh_gauges_locked() {
  for (const SinkSpec& k : sink_specs())
    metrics_.set_pending(k.name, static_cast<double>(outbox_->count(k.kind)));
  metrics_.set_breaker_open(breaker_.open);
  if (cfg_.repair.ladder_on()) {
    std::map<RepairStage, int> stages;
    for (const auto& [name, s] : nodes_)
      if (s.drained_by_vigil) stages[s.repair.stage]++;
    metrics_.set_repair_nodes(stages);
  }
  if (cfg_.policy.gate.on()) {
    std::map<std::string, int> held;
    for (const auto& [name, s] : nodes_)
      if (s.drained_by_vigil)
        if (const auto cause = gate_hold(s); !cause.empty()) held[std::string(cause)]++;
    metrics_.set_qualifying(held);
  }
}

int Drainer::process_pending() {
  // A pass already running (the processor thread) may hold reports this caller just ingested,
  // taken off the queue but not yet decided: wait for it, so that on return every report
  // accepted before the call is decided (found as a rare failure of the hook's spool tests).
  std::lock_guard pl(pass_mu_);
  if (journal_failed_) return 0;
  // One Slurm view per pass, shared by its chunks: loading 10,000 nodes costs more than
  // deciding 256 reports. The sink re-reads the view right before acting anyway.
  PassView view;
  Commit c;
  int total = 0;
  // A pass decides the reports that wait when it starts, not those that arrive meanwhile: a
  // pass that ran until the queue was empty never ended under a steady stream of reports, so
  // its intents never reached the sinks and no snapshot was taken (the journal grew without
  // bound and each restart replayed longer; found by the soak bench, docs/drainer.md "Soak").
  const size_t budget = undecided();
  for (int n; static_cast<size_t>(total) < budget && (n = process_chunk(view, c)) > 0;) total += n;
  // One fdatasync for the whole pass (a sync per chunk cost more than the decisions themselves).
  // A chunk whose append failed stopped the drainer: the pass's intents are never sent.
  (void)publish(c, "sync (decisions)");
  return total;
}

NodeReport Drainer::judge_slow_locked(const NodeReport& r, const NodeRecord* prev) {
  if (!slow_) return r;
  // The report's own end time, not the clock: replay re-judges the same reports in the same
  // order and must rebuild the same baselines.
  const int64_t at = parse_rfc3339(r.end_time).value_or(clock_.now_unix());
  // A drained node's figures (re-checks of a sick node) never become anyone's baseline.
  const bool drained = prev && prev->state == NodeState::kDrained;
  auto v = slow_->judge(r, at, drained ? detect::Learn::kNo : detect::Learn::kYes);
  if (!v.ok()) {
    // An invalid figure is the checker's bug, never a reason to drain: decided on as reported.
    audit_->write({{"time", rfc3339_utc(clock_.now_unix())},
                   {"event", "detection_error"},
                   {"node", r.node},
                   {"run_id", r.run_id},
                   {"error", v.error().to_string()}});
    return r;
  }
  metrics_.on_verdicts(*v);
  NodeReport judged = r;
  fold_verdicts(judged, *v, engine_.policy());
  return judged;
}

NodeReport Drainer::judge_class_locked(NodeReport judged, const SlurmView& view,
                                       const std::map<std::string, int>& declared,
                                       const NodeRecord* prev) {
  if (!classes_) return judged;
  const auto info = view.find(judged.node);
  if (info == view.end()) return judged;  // Slurm does not know the node: no class
  const std::string cls = class_name(judged.sku, &info->second);
  const auto size = declared.find(declaration(info->second));
  // The drainer's clock, not the report's: a node whose clock is years ahead must not make
  // every other node look a week old (classes are not replayed, so nothing needs report time).
  const bool drained = prev && prev->state == NodeState::kDrained;
  fold_class_verdicts(judged,
                      classes_->judge(judged, cls, size == declared.end() ? 1 : size->second,
                                      clock_.now_unix(), !drained),
                      engine_.policy());
  return judged;
}

int Drainer::process_chunk(PassView& pass, Commit& c) {
  std::lock_guard dl(decide_mu_);
  // Chunks keep mu_ (and with it ingest) free between a few hundred decisions.
  const auto batch = ingest_->take(256);
  if (batch.empty()) return 0;
  if (!pass.view) {
    pass.view = views_->get(false);
    for (const auto& [n, i] : *pass.view)
      for (const auto& p : i.partitions) pass.partition_counts[p]++;
    if (classes_)
      for (const auto& [n, i] : *pass.view) pass.declared[declaration(i)]++;
  }
  const SlurmView& view = *pass.view;
  auto& partition_counts = pass.partition_counts;
  {
    std::lock_guard lk(mu_);
    Decider decider(engine_, nodes_, view, partition_counts);
    for (const auto& a : batch) {
      auto it = nodes_.find(a.report.node);
      const NodeRecord* prev = it == nodes_.end() ? nullptr : &it->second;
      const NodeReport judged =
          judge_class_locked(judge_slow_locked(a.report, prev), view, pass.declared, prev);
      Decider::Outcome rd = decider.decide(a.report, judged, breaker_);
      apply_decision_locked(rd.decision, &a.report, a.seq, c);
      if (!rd.switch_evidence) continue;
      // Every other node under the switch takes its newest verdict (annotated again).
      for (const Decision& d : switch_spread(rd.decision.record, a.report.run_id, nodes_, breaker_))
        apply_decision_locked(d, nullptr, 0, c);
    }
    if (!append_locked(c, "append (decisions)").ok()) return 0;
  }
  return static_cast<int>(batch.size());
}

int Drainer::tick() {
  if (journal_failed_) return 0;
  const int64_t now = clock_.now_unix();
  Commit c;
  int became_stale = 0;
  {
    std::lock_guard lk(mu_);
    for (auto& [name, s] : nodes_) {
      if (s.last_report_unix)
        metrics_.set_report_age(name, static_cast<double>(now - s.last_report_unix));
      auto d = engine_.on_tick(s, breaker_);
      if (!d) continue;
      apply_decision_locked(*d, nullptr, 0, c);
      became_stale++;
    }
    if (!append_locked(c, "append (staleness)").ok()) return 0;
  }
  if (!publish(c, "sync (staleness)").ok()) return 0;
  return became_stale + repair_pass();
}

int Drainer::repair_pass() {
  {  // Nothing to do for most ticks: no Slurm read unless a node Vigil drained needs the ladder.
    std::lock_guard lk(mu_);
    const bool wanted = std::any_of(nodes_.begin(), nodes_.end(), [&](const auto& e) {
      const RepairState& r = e.second.repair;
      return e.second.drained_by_vigil &&
             (in_repair(r) || slurm::is_reset_gpu_reason(e.second.reason) ||
              (cfg_.repair.ladder_on() && r.stage == RepairStage::kNone &&
               (r.remedy || !r.offender.empty())));
    });
    if (!wanted || !slurm_ || journal_failed_) return 0;
  }
  // As an operator's resume: after any pass in flight, so a node's events stay in order.
  std::lock_guard pl(pass_mu_);
  std::lock_guard dl(decide_mu_);
  const auto view = views_->get(false);
  const int64_t now = clock_.now_unix();
  Commit c;
  int steps = 0;
  {
    std::lock_guard lk(mu_);
    RepairLoad load = repair_load(nodes_, cfg_.repair, now);  // kept current step by step
    for (auto& [name, s] : nodes_) {
      const auto vi = view->find(name);
      NodeRecord next = s;
      auto step = repair_tick(next, vi == view->end() ? nullptr : &vi->second, !view->empty(),
                              cfg_.repair, load, breaker_, cfg_.dry_run, now);
      if (!step) continue;
      if (step->move == Action::kRebooted) step->why += hold_repaired(next, cfg_.policy.gate, now);
      load.in_repair += in_repair(next.repair) - in_repair(s.repair);
      if (step->move == Action::kReboot || step->move == Action::kResetGpu)
        load.started_in_window++;
      apply_decision_locked(repair_decision(s, std::move(next), *step, breaker_), nullptr, 0, c,
                            step->move);
      ++steps;
    }
    if (!append_locked(c, "append (repair)").ok()) return 0;
  }
  if (!publish(c, "sync (repair)").ok()) return 0;
  return steps;
}

Result<std::string> Drainer::resume(const std::string& node) {
  // After any pass in flight has enqueued its intents: a node's events reach an ordered sink
  // (the webhook) in the order they were decided, and its drain never lands after this resume.
  std::lock_guard pl(pass_mu_);
  std::lock_guard dl(decide_mu_);
  if (journal_failed_) return Error{"the journal failed; restart vigil-drainer", "resume"};
  auto view_ptr = views_->get(true);  // an operator command reads Slurm now
  const SlurmView& view = *view_ptr;
  Commit c;
  c.answered = true;
  std::string why;
  {
    std::lock_guard lk(mu_);
    auto it = nodes_.find(node);
    auto vi = view.find(node);
    const slurm::SlurmNodeInfo* info = vi == view.end() ? nullptr : &vi->second;
    NodeRecord s;
    if (it != nodes_.end())
      s = it->second;
    else if (info)
      s.node = node;  // vigil drain we have no record of
    else
      return Error{"unknown node '" + node + "' (no report and not in Slurm)", "resume"};
    Decision d = engine_.on_operator_resume(s, info);
    if (d.action == Action::kNone) return Error{d.why, "resume(" + node + ")"};
    d.breaker = breaker_;
    apply_decision_locked(d, nullptr, 0, c);
    if (auto w = append_locked(c, "append (resume)"); !w.ok()) return w.error();
    why = d.action == Action::kWouldResume ? "dry-run: would resume " + node
                                           : "resume of " + node + " queued for Slurm (UNDRAIN)";
  }
  if (auto w = publish(c, "sync (resume)"); !w.ok()) return w.error();
  return why;
}

VoidResult Drainer::reset_breaker() {
  // As resume(): after a pass in flight, and no snapshot between journaling the reset and
  // enqueuing its intents (a snapshot then would drop them with the segment that holds them).
  std::lock_guard pl(pass_mu_);
  std::lock_guard dl(decide_mu_);
  if (journal_failed_) return Error{"the journal failed; restart vigil-drainer", "reset_breaker"};
  Commit c;
  c.answered = true;
  {
    std::lock_guard lk(mu_);
    const std::string was = breaker_.why;
    const std::string now = rfc3339_utc(clock_.now_unix());
    NodeEvent e;
    e.type = Action::kBreakerReset;
    e.time = now;
    e.why = "reset by an operator; it was: " + was;
    e.dry_run = cfg_.dry_run;
    owe_intents_locked(e, "", true, c.intents);
    const BreakerReset reset{BreakerState{}, c.intents};
    c.records.push_back(to_json(RecordBody{reset}));
    c.breaker_before = breaker_;
    apply_locked(reset);
    if (auto w = append_locked(c, "append (breaker reset)"); !w.ok()) return w;
    metrics_.set_breaker_open(false);
    audit_->write({{"time", now}, {"event", "breaker_reset"}, {"was", was}});
  }
  return publish(c, "sync (breaker reset)");
}

// The verdict a node's latest decision gives on the report it decided.
ReportDecision verdict_of(const NodeRecord& s, const NodeReport& r) {
  ReportDecision d{r.node, r.run_id, DrainVerdict::kUnknown, "", s.note};
  if (s.last_run_id != r.run_id) {
    d.why = "the node has decided a newer report since";
    return d;
  }
  if (s.last_action == Action::kDrain) {
    d.verdict = DrainVerdict::kDrain;
  } else if (s.last_action == Action::kWouldDrain) {
    d.verdict = DrainVerdict::kDryRun;
  } else if (s.last_action == Action::kBreakerBlocked) {
    d.verdict = DrainVerdict::kBreakerHeld;
  } else if (s.drained_by_vigil) {
    d.verdict = DrainVerdict::kAlreadyDrained;
  } else if (s.state == NodeState::kDrained) {
    d.verdict = DrainVerdict::kOtherOwner;
  } else {
    d.verdict = DrainVerdict::kNoDrain;
  }
  if (d.verdict != DrainVerdict::kNoDrain) d.reason = s.reason;
  return d;
}

std::vector<ReportDecision> Drainer::decide_now(const std::vector<NodeReport>& reports) {
  process_pending();
  std::vector<ReportDecision> out;
  std::lock_guard lk(mu_);
  for (const auto& r : reports) {
    auto it = nodes_.find(r.node);
    if (it == nodes_.end()) {
      out.push_back({r.node, r.run_id, DrainVerdict::kUnknown, "", "not decided"});
      continue;
    }
    out.push_back(verdict_of(it->second, r));
  }
  return out;
}

SharedDrainPolicy Drainer::shared_policy() const {
  SharedDrainPolicy p;
  shared_fatal_rule(cfg_.policy, p);
  p.dry_run = cfg_.dry_run;
  p.breaker_max_drains = cfg_.breaker.max_drains;
  p.breaker_max_percent = cfg_.breaker.max_percent;
  p.breaker_window_s = cfg_.breaker.window_s;
  p.source = "vigil-drainer";
  {
    std::lock_guard lk(mu_);
    p.breaker_open = breaker_.open;
  }
  return p;
}

}  // namespace vigil::drainer
