// The ingest log: accepted reports, journaled before they are acknowledged and queued in journal
// order; the run ids that make a report sent again a duplicate.
#include "ingest_log.h"

#include <algorithm>
#include <atomic>
#include <nlohmann/json.hpp>

namespace vigil::drainer {

void IngestState::accepted(uint64_t seq, const NodeReport& r) {
  seen_runs[r.node].add(RunIdWindow::digest(r.run_id));
  undecided.push_back({seq, r});
}

std::optional<NodeReport> IngestState::decided(uint64_t seq) {
  const auto it =
      std::find_if(undecided.begin(), undecided.end(), [&](const auto& a) { return a.seq == seq; });
  if (it == undecided.end()) return std::nullopt;
  NodeReport r = std::move(it->report);
  undecided.erase(it);
  return r;
}

void IngestState::write(nlohmann::json& snapshot) const {
  nlohmann::json seen = nlohmann::json::object();
  for (const auto& [n, runs] : seen_runs) seen[n] = runs.encode();
  nlohmann::json und = nlohmann::json::array();
  for (const auto& a : undecided) und.push_back({{"seq", a.seq}, {"report", to_json(a.report)}});
  snapshot["run_id_digests"] = std::move(seen);
  snapshot["undecided"] = std::move(und);
}

VoidResult IngestState::restore(const nlohmann::json& s) {
  try {
    if (s.contains("run_id_digests")) {
      for (const auto& [node, hex] : s.at("run_id_digests").items()) {
        auto w = RunIdWindow::decode(hex.get<std::string>());
        if (!w.ok()) return Error{w.error().to_string() + " of node " + node, "replay(snapshot)"};
        seen_runs[node] = *w;
      }
    } else {
      for (const auto& [node, runs] : s.at("seen_runs").items())
        for (const auto& r : runs) seen_runs[node].add(RunIdWindow::digest(r.get<std::string>()));
    }
    for (const auto& u : s.at("undecided")) {
      auto parsed = parse_node_report(u.at("report"));
      if (!parsed) return Error{parsed.error, "replay(snapshot undecided)"};
      undecided.push_back({u.at("seq").get<uint64_t>(), std::move(*parsed.value)});
    }
  } catch (const std::exception& e) {
    return Error{e.what(), "replay(snapshot)"};
  }
  return ok_result();
}

Result<IngestLog::Counts> IngestLog::accept(const std::vector<NodeReport>& reports,
                                            std::vector<nlohmann::json> records, Journal& journal) {
  Counts out;
  std::lock_guard lk(mu_);
  std::vector<nlohmann::json> fresh_records;
  std::vector<const NodeReport*> fresh;
  for (size_t k = 0; k < reports.size(); ++k) {
    const auto& r = reports[k];
    auto& runs = s_.seen_runs[r.node];
    const uint64_t id = RunIdWindow::digest(r.run_id);
    if (runs.contains(id)) {
      out.duplicates++;
      continue;
    }
    runs.add(id);
    fresh_records.push_back(std::move(records[k]));
    fresh.push_back(&r);
  }
  if (!fresh.empty()) {
    auto seqs = journal.append(std::move(fresh_records));
    if (!seqs.ok()) {
      for (const auto* r : fresh) s_.seen_runs[r->node].remove(RunIdWindow::digest(r->run_id));
      return seqs.error();
    }
    for (size_t i = 0; i < fresh.size(); ++i) s_.undecided.push_back({seqs.value()[i], *fresh[i]});
  }
  out.accepted = static_cast<int>(fresh.size());
  return out;
}

std::deque<IngestState::Accepted> IngestLog::take(size_t max) {
  std::lock_guard lk(mu_);
  std::deque<IngestState::Accepted> batch;
  const size_t n = std::min(s_.undecided.size(), max);
  for (size_t i = 0; i < n; ++i) {
    batch.push_back(std::move(s_.undecided.front()));
    s_.undecided.pop_front();
  }
  return batch;
}

size_t IngestLog::undecided() const {
  std::lock_guard lk(mu_);
  return s_.undecided.size();
}

void IngestLog::wait_for_work(std::chrono::milliseconds max, const std::atomic<bool>& stopping,
                              const std::atomic<bool>& halted) {
  std::unique_lock lk(mu_);
  cv_.wait_for(lk, max, [&] { return stopping || (!s_.undecided.empty() && !halted); });
}

void IngestLog::wake() {
  { std::lock_guard lk(mu_); }
  cv_.notify_all();
}

void IngestLog::notify() { cv_.notify_all(); }

}  // namespace vigil::drainer
