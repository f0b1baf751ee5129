// Drainer core: ingest -> journal -> policy -> sinks. See drainer.h for the durability model.
#include "vigil/drainer/drainer.h"

#include "vigil/slurm/reason.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "audit_log.h"

namespace fs = std::filesystem;

namespace vigil::drainer {
namespace {

constexpr size_t kRunIdsPerNode = 256;  // idempotency window per node

nlohmann::json intent_json(const Intent& i) {
  return {{"id", i.id},     {"sink", i.sink},     {"action", i.action},
          {"node", i.node}, {"reason", i.reason}, {"by_operator", i.by_operator}};
}

Intent intent_from_json(const nlohmann::json& j) {
  Intent i;
  i.id = j.at("id").get<uint64_t>();
  i.sink = j.value("sink", "");
  i.action = j.value("action", "");
  i.node = j.value("node", "");
  i.reason = j.value("reason", "");
  i.by_operator = j.value("by_operator", false);
  return i;
}

std::string camel(std::string_view s) {
  std::string out;
  bool up = true;
  for (char c : s) {
    if (c == '_' || c == '-') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return out;
}

}  // namespace

Drainer::Drainer(DrainerConfig cfg, std::shared_ptr<slurm::SlurmApi> slurm, std::shared_ptr<kube::KubeApi> kube,
                 const Clock& clock)
    : cfg_(std::move(cfg)),
      slurm_(std::move(slurm)),
      kube_(std::move(kube)),
      clock_(clock),
      engine_(cfg_.policy, cfg_.breaker, cfg_.dry_run, clock) {}

Drainer::~Drainer() { stop(); }

VoidResult Drainer::open() {
  VIGIL_TRY(journal_, Journal::open(cfg_.state_dir));
  audit_ = std::make_unique<AuditLog>(cfg_.state_dir + "/audit.jsonl");
  VIGIL_TRY(auto rec, journal_->recover());
  VIGIL_TRY(auto r, replay(rec));
  (void)r;
  {
    std::lock_guard lk(mu_);
    for (const auto& [name, s] : nodes_) metrics_.on_node(s, nullptr);
    refresh_gauges_locked();
  }
  ready_ = true;
  return ok_result();
}

VoidResult Drainer::replay(const Recovered& rec) {
  std::scoped_lock lk(ingest_mu_, mu_);
  auto fold_report = [&](uint64_t seq, const nlohmann::json& rj) -> VoidResult {
    auto parsed = parse_node_report(rj);
    if (!parsed) return Error{parsed.error, "replay(report seq " + std::to_string(seq) + ")"};
    auto& runs = seen_runs_[parsed.value->node];
    runs.push_back(parsed.value->run_id);
    if (runs.size() > kRunIdsPerNode) runs.pop_front();
    undecided_.push_back({seq, std::move(*parsed.value)});
    return ok_result();
  };
  if (rec.snapshot) {
    const auto& s = *rec.snapshot;
    try {
      for (const auto& nj : s.at("nodes")) {
        VIGIL_TRY(auto ns, node_state_from_json(nj));
        nodes_[ns.node] = std::move(ns);
      }
      VIGIL_TRY(breaker_, breaker_state_from_json(s.at("breaker")));
      for (const auto& [node, runs] : s.at("seen_runs").items())
        for (const auto& r : runs) seen_runs_[node].push_back(r.get<std::string>());
      for (const auto& ij : s.at("pending")) {
        Intent i = intent_from_json(ij);
        pending_[i.id] = i;
      }
      next_intent_id_ = s.value("next_intent_id", uint64_t{1});
      for (const auto& u : s.at("undecided")) {
        auto parsed = parse_node_report(u.at("report"));
        if (!parsed) return Error{parsed.error, "replay(snapshot undecided)"};
        undecided_.push_back({u.at("seq").get<uint64_t>(), std::move(*parsed.value)});
      }
    } catch (const std::exception& e) {
      return Error{e.what(), "replay(snapshot)"};
    }
  }
  uint64_t at_seq = 0;
  try {
    for (const auto& j : rec.records) {
      const std::string t = j.value("t", "");
      const uint64_t seq = j.at("seq").get<uint64_t>();
      at_seq = seq;
      if (t == "report") {
        VIGIL_TRY(auto r, fold_report(seq, j.at("report")));
        (void)r;
      } else if (t == "decision") {
        const uint64_t rs = j.value("report_seq", uint64_t{0});
        if (rs) std::erase_if(undecided_, [&](const Accepted& a) { return a.seq == rs; });
        VIGIL_TRY(auto ns, node_state_from_json(j.at("state")));
        nodes_[ns.node] = std::move(ns);
        if (j.contains("breaker")) {
          VIGIL_TRY(breaker_, breaker_state_from_json(j.at("breaker")));
        } else if (j.contains("breaker_drain")) {
          const auto& bd = j.at("breaker_drain");
          const auto at = bd.at("at").get<int64_t>();
          breaker_window(breaker_, bd.at("group").get<std::string>(), at, cfg_.breaker.window_s)
              .push_back(at);
        }
        for (const auto& ij : j.value("intents", nlohmann::json::array())) {
          Intent i = intent_from_json(ij);
          pending_[i.id] = i;
          next_intent_id_ = std::max(next_intent_id_, i.id + 1);
        }
      } else if (t == "done") {
        for (const auto& id : j.at("ids")) pending_.erase(id.get<uint64_t>());
      } else if (t == "breaker_reset") {
        VIGIL_TRY(breaker_, breaker_state_from_json(j.at("breaker")));
      }
    }
  } catch (const std::exception& e) {
    return Error{e.what(), "replay(journal record seq " + std::to_string(at_seq) + ")"};
  }
  for (const auto& [id, i] : pending_) next_intent_id_ = std::max(next_intent_id_, id + 1);
  return ok_result();
}

nlohmann::json Drainer::snapshot_json_locked() const {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& [n, s] : nodes_) nodes.push_back(to_json(s));
  nlohmann::json seen = nlohmann::json::object();
  for (const auto& [n, runs] : seen_runs_)
    seen[n] = std::vector<std::string>(runs.begin(), runs.end());
  nlohmann::json pend = nlohmann::json::array();
  for (const auto& [id, i] : pending_) pend.push_back(intent_json(i));
  nlohmann::json und = nlohmann::json::array();
  for (const auto& a : undecided_) und.push_back({{"seq", a.seq}, {"report", to_json(a.report)}});
  return {{"version", 1},
          {"nodes", nodes},
          {"breaker", to_json(breaker_)},
          {"seen_runs", seen},
          {"pending", pend},
          {"undecided", und},
          {"next_intent_id", next_intent_id_}};
}

VoidResult Drainer::snapshot_now() {
  std::scoped_lock lk(decide_mu_, ingest_mu_, mu_);
  return journal_->write_snapshot(snapshot_json_locked());
}

VoidResult Drainer::maybe_snapshot() {
  if (journal_->records_since_snapshot() < static_cast<uint64_t>(cfg_.snapshot_every))
    return ok_result();
  return snapshot_now();
}

Result<IngestOutcome> Drainer::ingest(const std::vector<NodeReport>& reports) {
  if (!ready_) return Error{"drainer not ready", "Drainer::ingest"};
  IngestOutcome out;
  const int64_t now = clock_.now_unix();
  std::vector<nlohmann::json> all;  // serialised outside the lock
  all.reserve(reports.size());
  for (const auto& r : reports)
    all.push_back({{"t", "report"},
                   {"node", r.node},
                   {"run_id", r.run_id},
                   {"received_unix_s", now},
                   {"report", to_json(r)}});
  {
    std::lock_guard lk(ingest_mu_);
    std::vector<nlohmann::json> recs;
    std::vector<const NodeReport*> fresh;
    for (size_t k = 0; k < reports.size(); ++k) {
      const auto& r = reports[k];
      auto& runs = seen_runs_[r.node];
      if (std::find(runs.begin(), runs.end(), r.run_id) != runs.end()) {
        out.duplicates++;
        continue;
      }
      runs.push_back(r.run_id);
      if (runs.size() > kRunIdsPerNode) runs.pop_front();
      recs.push_back(std::move(all[k]));
      fresh.push_back(&r);
    }
    if (!recs.empty()) {
      auto seqs = journal_->append(std::move(recs));
      if (!seqs.ok()) {
        for (const auto* r : fresh) {
          auto& runs = seen_runs_[r->node];
          std::erase(runs, r->run_id);
        }
        return seqs.error();
      }
      for (size_t i = 0; i < fresh.size(); ++i) undecided_.push_back({seqs.value()[i], *fresh[i]});
    }
    out.accepted = static_cast<int>(fresh.size());
  }
  // Also for duplicates: the first copy may still be in flight; 202 means durable.
  VIGIL_TRY(auto s, journal_->sync());
  (void)s;
  metrics_.on_ingest("accepted", out.accepted);
  if (out.duplicates) metrics_.on_ingest("duplicate", out.duplicates);
  if (out.accepted) cv_work_.notify_one();
  return out;
}

Result<int> Drainer::ingest_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Error{"not a directory", "ingest_dir(" + dir + ")"};
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  int taken = 0;
  for (const auto& f : files) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    auto parsed = parse_node_reports(ss.str());
    if (!parsed) {
      metrics_.on_ingest("invalid");
      fs::create_directories(fs::path(dir) / "rejected", ec);
      fs::rename(f, fs::path(dir) / "rejected" / f.filename(), ec);
      audit_->write({{"time", rfc3339_utc(clock_.now_unix())},
                     {"event", "spool_rejected"},
                     {"file", f.string()},
                     {"error", parsed.error}});
      continue;
    }
    VIGIL_TRY(auto o, ingest(*parsed.value));
    (void)o;
    fs::remove(f, ec);  // durable in the journal now
    taken++;
  }
  return taken;
}

Result<std::shared_ptr<const Drainer::SlurmView>> Drainer::read_slurm_view(bool publish) {
  uint64_t gen = 0;
  int64_t started = 0;
  {
    std::lock_guard lk(view_mu_);
    gen = view_gen_;
    started = clock_.now_unix();
  }
  VIGIL_TRY(auto nodes, slurm_->load_nodes());
  auto view = std::make_shared<SlurmView>();
  for (auto& n : nodes) {
    std::string name = n.name;
    view->emplace(std::move(name), std::move(n));
  }
  std::lock_guard lk(view_mu_);
  // Not if the sink acted while this read was under way: the table may predate its RPCs.
  if (publish && gen == view_gen_) {
    view_ = view;
    view_at_ = started;
  }
  return std::shared_ptr<const SlurmView>(std::move(view));
}

void Drainer::invalidate_view() {
  std::lock_guard lk(view_mu_);
  ++view_gen_;
  view_.reset();
}

std::shared_ptr<const Drainer::SlurmView> Drainer::slurm_view(bool fresh) {
  if (!slurm_) return std::make_shared<const SlurmView>();
  if (!fresh && cfg_.slurm.view_max_age_s > 0) {
    std::lock_guard lk(view_mu_);
    if (view_ && clock_.now_unix() - view_at_ <= cfg_.slurm.view_max_age_s) return view_;
  }
  auto view = read_slurm_view(true);
  if (!view.ok()) return std::make_shared<const SlurmView>();  // unknown: the sink re-checks
  return view.value();
}

void Drainer::apply_decision_locked(const Decision& d, const NodeReport* r, uint64_t report_seq,
                                    std::vector<nlohmann::json>& records,
                                    std::vector<Intent>& intents) {
  const NodeState& s = d.state;
  std::vector<Intent> mine;
  if (slurm_ && (d.action == Action::kDrain || d.action == Action::kResume)) {
    Intent i;
    i.id = next_intent_id_++;
    i.sink = "slurm";
    i.action = d.action == Action::kDrain ? "drain" : "resume";
    i.node = s.node;
    i.reason = d.reason;
    i.by_operator = !r;
    mine.push_back(i);
  }
  if (d.action == Action::kWouldDrain || d.action == Action::kWouldResume) {
    metrics_.on_action(d.action == Action::kWouldDrain ? "drain" : "resume", "slurm", "dry_run");
  }
  if (kube_ && cfg_.kubernetes.enabled) {
    Intent i;
    i.id = next_intent_id_++;
    i.sink = "kubernetes";
    i.action = "annotate";
    i.node = s.node;
    mine.push_back(i);
  }
  nlohmann::json ij = nlohmann::json::array();
  for (const auto& i : mine) ij.push_back(intent_json(i));
  nlohmann::json rec{{"t", "decision"},
                     {"node", s.node},
                     {"action", std::string(to_string(d.action))},
                     {"state", to_json(s)},
                     {"intents", ij}};
  if (report_seq) rec["report_seq"] = report_seq;
  // The breaker goes into the journal whole only when it opens or its reason changes; a counted
  // drain is journaled as a delta. (The whole state holds every drain time in the window, so
  // writing it with each of 1,000 drains made the journal grow quadratically.)
  if (d.breaker.open != breaker_.open || d.breaker.why != breaker_.why ||
      d.breaker.opened_at != breaker_.opened_at) {
    rec["breaker"] = to_json(d.breaker);
  } else if (d.counted_drain) {
    rec["breaker_drain"] = {{"group", d.counted_drain->group}, {"at", d.counted_drain->at}};
  }
  records.push_back(std::move(rec));
  audit_->write({{"time", rfc3339_utc(clock_.now_unix())},
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
  const bool breaker_changed = d.breaker.open != breaker_.open;
  breaker_ = d.breaker;
  nodes_[s.node] = s;
  metrics_.on_node(s, r);
  if (breaker_changed) {
    metrics_.set_breaker_open(breaker_.open);
    audit_->write({{"time", rfc3339_utc(clock_.now_unix())},
                   {"event", breaker_.open ? "breaker_open" : "breaker_closed"},
                   {"why", breaker_.why}});
  }
  for (auto& i : mine) intents.push_back(std::move(i));
}

void Drainer::enqueue_intents_locked(const std::vector<Intent>& intents) {
  for (const auto& i : intents) pending_[i.id] = i;
  refresh_gauges_locked();
}

void Drainer::refresh_gauges_locked() {
  size_t s = 0, k = 0;
  for (const auto& [id, i] : pending_) (i.sink == "slurm" ? s : k)++;
  metrics_.set_pending("slurm", static_cast<double>(s));
  metrics_.set_pending("kubernetes", static_cast<double>(k));
  metrics_.set_breaker_open(breaker_.open);
}

int Drainer::process_pending() {
  // One Slurm view per pass, shared by its chunks: loading 10,000 nodes costs more than
  // deciding 256 reports. The sink re-reads the view right before acting anyway.
  PassView view;
  std::vector<Intent> intents;
  int total = 0;
  for (int n; (n = process_chunk(view, intents)) > 0;) total += n;
  if (intents.empty()) return total;
  // Intents become actionable only once their decisions are durable: one fdatasync for the
  // whole pass (a sync per chunk cost more than the decisions themselves).
  if (!journal_->sync().ok()) return total;
  {
    std::lock_guard lk(mu_);
    enqueue_intents_locked(intents);
  }
  cv_slurm_.notify_one();
  cv_kube_.notify_one();
  return total;
}

int Drainer::process_chunk(PassView& pass, std::vector<Intent>& intents) {
  std::lock_guard dl(decide_mu_);
  // Chunks keep mu_ (and with it ingest) free between a few hundred decisions.
  std::deque<Accepted> batch;
  {
    std::lock_guard lk(ingest_mu_);
    const size_t n = std::min<size_t>(undecided_.size(), 256);
    for (size_t i = 0; i < n; ++i) {
      batch.push_back(std::move(undecided_.front()));
      undecided_.pop_front();
    }
  }
  if (batch.empty()) return 0;
  if (!pass.view) {
    pass.view = slurm_view(false);
    for (const auto& [n, i] : *pass.view)
      for (const auto& p : i.partitions) pass.partition_counts[p]++;
  }
  const SlurmView& view = *pass.view;
  auto& partition_counts = pass.partition_counts;
  {
    std::lock_guard lk(mu_);
    std::vector<nlohmann::json> records;
    // Known nodes per breaker group, counted once per batch (not once per report).
    std::map<std::string, int> group_counts;
    for (const auto& [n, s] : nodes_) group_counts[PolicyEngine::group_key(s)]++;
    for (const auto& a : batch) {
      auto it = nodes_.find(a.report.node);
      const NodeState* prev = it == nodes_.end() ? nullptr : &it->second;
      auto sv = view.find(a.report.node);
      const slurm::SlurmNodeInfo* info = sv == view.end() ? nullptr : &sv->second;
      // Group size for the breaker: the node's partition per Slurm, else the known nodes of
      // its SKU (this node included).
      NodeState probe = prev ? *prev : NodeState{};
      probe.node = a.report.node;
      probe.sku = a.report.sku;
      if (info && !info->partitions.empty()) probe.partition = info->partitions.front();
      int gsize = 0;
      if (!probe.partition.empty() && !view.empty()) {
        gsize = partition_counts[probe.partition];
      } else {
        gsize = group_counts[PolicyEngine::group_key(probe)] + (prev ? 0 : 1);
      }
      if (!prev) group_counts[PolicyEngine::group_key(probe)]++;
      const bool unknown_to_slurm = !info && !view.empty();
      Decision d = engine_.on_report(prev, a.report, info, breaker_, gsize, unknown_to_slurm);
      apply_decision_locked(d, &a.report, a.seq, records, intents);
    }
    auto w = journal_->append(std::move(records));
    if (!w.ok()) {
      audit_->write({{"event", "journal_error"}, {"error", w.error().to_string()}});
      return 0;
    }
  }
  return static_cast<int>(batch.size());
}

void Drainer::record_done(const std::vector<uint64_t>& ids, const std::string& outcome) {
  if (ids.empty()) return;
  std::lock_guard lk(mu_);
  for (auto id : ids) {
    pending_.erase(id);
    in_flight_.erase(id);
  }
  auto w = journal_->append({{{"t", "done"}, {"ids", ids}, {"outcome", outcome}}});
  (void)w;
  refresh_gauges_locked();
}

void Drainer::forget_skipped_drains(const std::vector<SkippedDrain>& skipped) {
  if (skipped.empty()) return;
  std::vector<Intent> intents;
  {
    std::lock_guard lk(mu_);
    std::vector<nlohmann::json> records;
    for (const auto& k : skipped) {
      auto it = nodes_.find(k.intent.node);
      // Only the decision this intent came from is undone; a newer one stands.
      if (it == nodes_.end() || !it->second.drained_by_vigil ||
          it->second.reason != k.intent.reason)
        continue;
      bool newer = false;
      for (auto p = pending_.upper_bound(k.intent.id); p != pending_.end() && !newer; ++p)
        newer = p->second.sink == "slurm" && p->second.node == k.intent.node;
      if (newer) continue;
      Decision d;
      d.before = it->second.health;
      d.state = it->second;
      d.state.drained_by_vigil = false;
      d.state.reason.clear();
      d.state.health = d.after = k.health;
      d.state.last_action = "drain_skipped";
      d.state.note = "drain not applied: " + k.why;
      d.why = d.state.note;
      d.driving_checks = d.state.driving_checks;
      d.breaker = breaker_;
      apply_decision_locked(d, nullptr, 0, records, intents);
    }
    if (records.empty()) return;
    if (auto w = journal_->append(std::move(records)); !w.ok()) {
      audit_->write({{"event", "journal_error"}, {"error", w.error().to_string()}});
      return;
    }
  }
  if (intents.empty() || !journal_->sync().ok()) return;
  std::lock_guard lk(mu_);
  enqueue_intents_locked(intents);
  cv_kube_.notify_one();
}

int Drainer::run_slurm_sink_once() {
  if (!slurm_) return 0;
  std::vector<Intent> work;
  std::vector<uint64_t> superseded;
  {
    std::lock_guard lk(mu_);
    std::map<std::string, const Intent*> latest;  // only the newest intent per node matters
    for (const auto& [id, i] : pending_)
      if (i.sink == "slurm" && !in_flight_.count(id)) latest[i.node] = &i;
    for (const auto& [id, i] : pending_) {
      if (i.sink != "slurm" || in_flight_.count(id)) continue;
      if (latest[i.node] != &i) superseded.push_back(id);
    }
    for (const auto& [node, i] : latest) {
      work.push_back(*i);
      in_flight_.insert(i->id);
    }
  }
  record_done(superseded, "superseded");
  if (work.empty()) return 0;
  auto unlock_all = [&](const std::vector<Intent>& v) {
    std::lock_guard lk(mu_);
    for (const auto& i : v) {
      in_flight_.erase(i.id);
      if (auto it = pending_.find(i.id); it != pending_.end()) it->second.attempts++;
    }
  };
  auto now_s = [&] { return rfc3339_utc(clock_.now_unix()); };
  // Re-read right before acting. Published for the decisions only if no RPC follows.
  auto fresh = read_slurm_view(false);
  if (!fresh.ok()) {
    for (const auto& i : work) metrics_.on_action(i.action, "slurm", "error");
    audit_->write({{"time", now_s()},
                   {"event", "action"},
                   {"sink", "slurm"},
                   {"action", "load_nodes"},
                   {"outcome", "error"},
                   {"error", fresh.error().to_string()},
                   {"pending", work.size()}});
    unlock_all(work);
    slurm_backoff_ms_ =
        std::min<int64_t>(cfg_.slurm.retry_max_ms,
                          slurm_backoff_ms_ ? slurm_backoff_ms_ * 2 : cfg_.slurm.retry_initial_ms);
    return static_cast<int>(work.size());
  }
  const SlurmView& view = *fresh.value();
  std::map<std::string, std::vector<const Intent*>> drains;  // by reason
  std::vector<const Intent*> resumes;
  std::vector<uint64_t> ok_ids, skipped_ids;
  std::vector<SkippedDrain> not_drained;
  for (const auto& i : work) {
    auto it = view.find(i.node);
    std::string skip_why;
    if (it == view.end()) {
      skip_why = "node unknown to Slurm";
      if (i.action == "drain") not_drained.push_back({i, skip_why, NodeHealth::kError});
    } else if (i.action == "drain") {
      const auto& n = it->second;
      if (slurm::untouchable(n)) {
        skip_why = "node is DOWN/FAIL/MAINT";
        not_drained.push_back({i, skip_why, NodeHealth::kWarn});
      } else if (slurm::drained_by_other(n)) {
        skip_why = "drained by another owner: " + n.reason;
        not_drained.push_back({i, skip_why, NodeHealth::kDrained});
      } else if (n.drain && n.reason == i.reason) {
        ok_ids.push_back(i.id);  // already applied (e.g. before a crash): not repeated
        metrics_.on_action("drain", "slurm", "ok");
        continue;
      } else
        drains[i.reason].push_back(&i);
    } else {
      const auto& n = it->second;
      if (!n.drain) {
        ok_ids.push_back(i.id);  // already resumed
        metrics_.on_action("resume", "slurm", "ok");
        continue;
      }
      if (!slurm::drained_by_vigil(n))
        skip_why = "drain reason not owned by vigil: " + n.reason;
      else if (slurm::untouchable(n) && !i.by_operator)
        skip_why = "node is DOWN/FAIL/MAINT";
      else
        resumes.push_back(&i);
    }
    if (!skip_why.empty()) {
      skipped_ids.push_back(i.id);
      metrics_.on_action(i.action, "slurm", "skipped");
      audit_->write({{"time", now_s()},
                     {"event", "action"},
                     {"sink", "slurm"},
                     {"action", i.action},
                     {"nodes", {i.node}},
                     {"outcome", "skipped"},
                     {"why", skip_why}});
    }
  }
  std::vector<Intent> failed;
  bool any_error = false;
  auto run_batch = [&](const std::string& action, const std::vector<const Intent*>& batch,
                       const std::string& reason) {
    std::vector<std::string> names;
    for (const auto* i : batch) names.push_back(i->node);
    VoidResult res = action == "drain" ? slurm_->drain(names, reason) : slurm_->undrain(names);
    const std::string outcome = res.ok() ? "ok" : "error";
    metrics_.on_action(action, "slurm", outcome, static_cast<double>(batch.size()));
    nlohmann::json a{{"time", now_s()},   {"event", "action"}, {"sink", "slurm"},
                     {"action", action},  {"nodes", names},    {"reason", reason},
                     {"outcome", outcome}};
    if (!res.ok()) a["error"] = res.error().to_string();
    audit_->write(a);
    for (const auto* i : batch) {
      if (res.ok())
        ok_ids.push_back(i->id);
      else
        failed.push_back(*i);
    }
    any_error = any_error || !res.ok();
  };
  const bool acting = !drains.empty() || !resumes.empty();
  // Tables read before or during these RPCs must not be reused by decisions: drop the
  // remembered one now and refuse any read that started before the RPCs ended.
  if (acting) invalidate_view();
  for (const auto& [reason, batch] : drains) run_batch("drain", batch, reason);
  if (!resumes.empty()) run_batch("resume", resumes, "");
  if (acting) {
    invalidate_view();
  } else {
    std::lock_guard lk(view_mu_);
    view_ = fresh.value();
    view_at_ = clock_.now_unix();
    ++view_gen_;
  }
  record_done(ok_ids, "ok");
  record_done(skipped_ids, "skipped");
  forget_skipped_drains(not_drained);
  unlock_all(failed);
  slurm_backoff_ms_ = any_error ? std::min<int64_t>(cfg_.slurm.retry_max_ms,
                                                    slurm_backoff_ms_ ? slurm_backoff_ms_ * 2
                                                                      : cfg_.slurm.retry_initial_ms)
                                : 0;
  if (!any_error) (void)journal_->sync();
  return static_cast<int>(failed.size());
}

std::string Drainer::kube_node_name(const NodeState& s) {
  switch (cfg_.kubernetes.node_mapping) {
    case NodeMapping::kIdentity:
      return s.node;
    case NodeMapping::kReport:
      return s.k8s_node.value_or("");
    case NodeMapping::kPodLookup: {
      auto r = kube_->pod_node_name(cfg_.kubernetes.pod_namespace, s.node);
      return r.ok() ? r.value() : std::string();
    }
  }
  return s.node;
}

int Drainer::run_kube_sink_once() {
  if (!kube_ || !cfg_.kubernetes.enabled) return 0;
  std::vector<Intent> work;
  std::vector<uint64_t> superseded;
  std::map<std::string, NodeState> states;
  {
    std::lock_guard lk(mu_);
    std::map<std::string, const Intent*> latest;
    for (const auto& [id, i] : pending_)
      if (i.sink == "kubernetes" && !in_flight_.count(id)) latest[i.node] = &i;
    for (const auto& [id, i] : pending_)
      if (i.sink == "kubernetes" && !in_flight_.count(id) && latest[i.node] != &i)
        superseded.push_back(id);
    for (const auto& [node, i] : latest) {
      work.push_back(*i);
      in_flight_.insert(i->id);
      if (auto it = nodes_.find(node); it != nodes_.end()) states[node] = it->second;
    }
  }
  record_done(superseded, "superseded");
  std::vector<uint64_t> ok_ids, gave_up;
  std::vector<Intent> failed;
  const auto& pre = cfg_.kubernetes.annotation_prefix;
  for (const auto& i : work) {
    auto st = states.find(i.node);
    if (st == states.end()) {
      gave_up.push_back(i.id);
      continue;
    }
    const NodeState& s = st->second;
    std::string k8s = kube_node_name(s);
    VoidResult res = ok_result();
    if (k8s.empty()) {
      res = Error{"no Kubernetes node for Slurm node " + s.node + " (mapping " +
                      std::string(to_string(cfg_.kubernetes.node_mapping)) + ")",
                  "kube_node_name"};
    } else {
      std::map<std::string, std::optional<std::string>> a;
      a[pre + "state"] = std::string(annotation_value(s.health));
      a[pre + "reason"] = s.reason.empty() ? std::optional<std::string>() : s.reason;
      a[pre + "last-check"] = s.last_check_time.empty()
                                  ? std::optional<std::string>()
                                  : std::optional<std::string>(s.last_check_time);
      a[pre + "failing"] = s.failing.empty() ? std::optional<std::string>() : s.failing;
      res = kube_->annotate_node(k8s, a);
      if (res.ok() && cfg_.kubernetes.condition) {
        kube::NodeCondition c;
        c.type = cfg_.kubernetes.condition_type;
        c.status = s.health == NodeHealth::kDrained ? "False"
                   : (s.health == NodeHealth::kStale || s.health == NodeHealth::kUnknown)
                       ? "Unknown"
                       : "True";
        c.reason = "Vigil" + camel(to_string(s.health));
        c.message = s.reason.empty() ? s.note : s.reason;
        res = kube_->set_node_condition(k8s, c);
      }
      if (res.ok() && cfg_.kubernetes.taint) {
        // Keeps non-Slurm pods off a node Vigil drained; removed again once it is resumed.
        const std::string key = pre + "unhealthy";
        std::optional<kube::NodeTaint> taint;
        if (s.health == NodeHealth::kDrained) taint = kube::NodeTaint{key, "true", "NoSchedule"};
        res = kube_->set_node_taint(k8s, key, taint);
      }
    }
    const std::string outcome = res.ok() ? "ok" : "error";
    metrics_.on_action("annotate", "kubernetes", outcome);
    nlohmann::json a{{"time", rfc3339_utc(clock_.now_unix())},
                     {"event", "action"},
                     {"sink", "kubernetes"},
                     {"action", "annotate"},
                     {"nodes", {s.node}},
                     {"k8s_node", k8s},
                     {"state", std::string(annotation_value(s.health))},
                     {"outcome", outcome}};
    if (!res.ok()) a["error"] = res.error().to_string();
    audit_->write(a);
    if (res.ok())
      ok_ids.push_back(i.id);
    else if (i.attempts + 1 >= 8)
      gave_up.push_back(i.id);  // reported; the next report retries
    else
      failed.push_back(i);
  }
  record_done(ok_ids, "ok");
  record_done(gave_up, "error");
  {
    std::lock_guard lk(mu_);
    for (const auto& i : failed) {
      in_flight_.erase(i.id);
      if (auto it = pending_.find(i.id); it != pending_.end()) it->second.attempts++;
    }
  }
  kube_backoff_ms_ =
      failed.empty() ? 0 : std::min<int64_t>(30000, kube_backoff_ms_ ? kube_backoff_ms_ * 2 : 500);
  return static_cast<int>(failed.size());
}

int Drainer::tick() {
  const int64_t now = clock_.now_unix();
  std::vector<nlohmann::json> records;
  std::vector<Intent> intents;
  int became_stale = 0;
  {
    std::lock_guard lk(mu_);
    for (auto& [name, s] : nodes_) {
      if (s.last_report_unix)
        metrics_.set_report_age(name, static_cast<double>(now - s.last_report_unix));
      auto st = engine_.on_tick(s);
      if (!st) continue;
      Decision d;
      d.before = s.health;
      d.after = st->health;
      d.why = st->note;
      d.state = *st;
      d.breaker = breaker_;
      apply_decision_locked(d, nullptr, 0, records, intents);
      became_stale++;
    }
    if (!records.empty()) (void)journal_->append(std::move(records));
  }
  if (became_stale) {
    (void)journal_->sync();
    std::lock_guard lk(mu_);
    enqueue_intents_locked(intents);
    cv_kube_.notify_one();
  }
  return became_stale;
}

Result<std::string> Drainer::resume(const std::string& node) {
  std::lock_guard dl(decide_mu_);
  auto view_ptr = slurm_view(true);  // an operator command reads Slurm now
  const SlurmView& view = *view_ptr;
  std::vector<Intent> intents;
  std::string why;
  {
    std::lock_guard lk(mu_);
    auto it = nodes_.find(node);
    auto vi = view.find(node);
    const slurm::SlurmNodeInfo* info = vi == view.end() ? nullptr : &vi->second;
    NodeState s;
    if (it != nodes_.end())
      s = it->second;
    else if (info)
      s.node = node;  // vigil drain we have no record of
    else
      return Error{"unknown node '" + node + "' (no report and not in Slurm)", "resume"};
    Decision d = engine_.on_operator_resume(s, info);
    if (d.action == Action::kNone) return Error{d.why, "resume(" + node + ")"};
    d.breaker = breaker_;
    std::vector<nlohmann::json> records;
    apply_decision_locked(d, nullptr, 0, records, intents);
    auto w = journal_->append(std::move(records));
    if (!w.ok()) return w.error();
    why = d.action == Action::kWouldResume ? "dry-run: would resume " + node
                                           : "resume of " + node + " queued for Slurm (UNDRAIN)";
  }
  VIGIL_TRY(auto s, journal_->sync());
  (void)s;
  {
    std::lock_guard lk(mu_);
    enqueue_intents_locked(intents);
  }
  cv_slurm_.notify_one();
  cv_kube_.notify_one();
  return why;
}

VoidResult Drainer::reset_breaker() {
  {
    std::lock_guard lk(mu_);
    const std::string was = breaker_.why;
    breaker_ = BreakerState{};
    auto w = journal_->append({{{"t", "breaker_reset"}, {"breaker", to_json(breaker_)}}});
    if (!w.ok()) return w.error();
    metrics_.set_breaker_open(false);
    audit_->write(
        {{"time", rfc3339_utc(clock_.now_unix())}, {"event", "breaker_reset"}, {"was", was}});
  }
  return journal_->sync();
}

std::vector<NodeState> Drainer::nodes() const {
  std::lock_guard lk(mu_);
  std::vector<NodeState> v;
  for (const auto& [n, s] : nodes_) v.push_back(s);
  return v;
}

std::optional<NodeState> Drainer::node(const std::string& name) const {
  std::lock_guard lk(mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return std::nullopt;
  return it->second;
}

BreakerState Drainer::breaker() const {
  std::lock_guard lk(mu_);
  return breaker_;
}

size_t Drainer::pending(const std::string& sink) const {
  std::lock_guard lk(mu_);
  size_t n = 0;
  for (const auto& [id, i] : pending_) n += i.sink == sink;
  return n;
}

size_t Drainer::undecided() const {
  std::lock_guard lk(ingest_mu_);
  return undecided_.size();
}

std::vector<Intent> Drainer::pending_intents() const {
  std::lock_guard lk(mu_);
  std::vector<Intent> v;
  for (const auto& [id, i] : pending_) v.push_back(i);
  return v;
}

std::string Drainer::metrics_text() {
  const int64_t now = clock_.now_unix();
  {
    std::lock_guard lk(mu_);
    for (const auto& [name, s] : nodes_)
      if (s.last_report_unix)
        metrics_.set_report_age(name, static_cast<double>(now - s.last_report_unix));
  }
  return metrics_.serialize();
}

// ---- background threads ----

void Drainer::start() {
  if (!threads_.empty()) return;
  stopping_ = false;
  threads_.emplace_back([this] { loop_processor(); });
  threads_.emplace_back([this] { loop_slurm(); });
  threads_.emplace_back([this] { loop_kube(); });
  threads_.emplace_back([this] { loop_tick(); });
}

void Drainer::stop() {
  if (threads_.empty()) return;
  {
    std::scoped_lock lk(ingest_mu_, mu_);
    stopping_ = true;
  }
  cv_work_.notify_all();
  cv_slurm_.notify_all();
  cv_kube_.notify_all();
  cv_tick_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
  if (journal_) (void)snapshot_now();
}

void Drainer::loop_processor() {
  while (!stopping_) {
    {
      std::unique_lock lk(ingest_mu_);
      cv_work_.wait_for(lk, std::chrono::seconds(1),
                        [&] { return stopping_ || !undecided_.empty(); });
      if (stopping_) break;
    }
    process_pending();
    (void)maybe_snapshot();
  }
}

bool Drainer::has_work_locked(const std::string& sink) const {
  for (const auto& [id, i] : pending_)
    if (i.sink == sink && !in_flight_.count(id)) return true;
  return false;
}

void Drainer::loop_slurm() {
  while (!stopping_) {
    {
      std::unique_lock lk(mu_);
      if (slurm_backoff_ms_) {
        cv_slurm_.wait_for(lk, std::chrono::milliseconds(slurm_backoff_ms_),
                           [&] { return stopping_.load(); });
      } else {
        cv_slurm_.wait_for(lk, std::chrono::seconds(1),
                           [&] { return stopping_ || has_work_locked("slurm"); });
      }
      if (stopping_) break;
      if (!has_work_locked("slurm")) continue;
    }
    // Let decisions arriving together pile up: one RPC per reason for all of them.
    if (!slurm_backoff_ms_ && cfg_.slurm.batch_window_ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(cfg_.slurm.batch_window_ms));
    run_slurm_sink_once();
  }
}

void Drainer::loop_kube() {
  while (!stopping_) {
    {
      std::unique_lock lk(mu_);
      if (kube_backoff_ms_) {
        cv_kube_.wait_for(lk, std::chrono::milliseconds(kube_backoff_ms_),
                          [&] { return stopping_.load(); });
      } else {
        cv_kube_.wait_for(lk, std::chrono::seconds(1),
                          [&] { return stopping_ || has_work_locked("kubernetes"); });
      }
      if (stopping_) break;
      if (!has_work_locked("kubernetes")) continue;
    }
    run_kube_sink_once();
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
