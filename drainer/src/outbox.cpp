// The outbox (outbox.h): the intents owed to the sinks, and how a sink's batch is picked.
#include "outbox.h"

#include <algorithm>

namespace vigil::drainer {

void Outbox::add(Intent i) {
  next_id_ = std::max(next_id_, i.id + 1);
  const uint64_t id = i.id;
  owed_[id] = std::move(i);
}

void Outbox::restore_next_id(uint64_t id) {
  next_id_ = id;
  if (!owed_.empty()) next_id_ = std::max(next_id_, owed_.rbegin()->first + 1);
}

void Outbox::add(const std::vector<Intent>& intents) {
  for (const Intent& i : intents) add(i);
}

void Outbox::done(const std::vector<uint64_t>& ids) {
  for (uint64_t id : ids) {
    owed_.erase(id);
    in_hand_.erase(id);
  }
}

void Outbox::retry(const std::vector<uint64_t>& ids) {
  for (uint64_t id : ids) {
    in_hand_.erase(id);
    if (auto it = owed_.find(id); it != owed_.end()) it->second.attempts++;
  }
}

std::vector<Intent> Outbox::pick(SinkKind kind, bool ordered, std::vector<uint64_t>& superseded) {
  std::vector<Intent> batch;
  if (ordered) {
    std::set<std::string> seen;
    for (const auto& [id, i] : owed_) {
      if (i.sink != kind || !seen.insert(i.node).second || in_hand_.count(id)) continue;
      batch.push_back(i);
      in_hand_.insert(id);
    }
    return batch;
  }
  std::map<std::string, const Intent*> latest;
  for (const auto& [id, i] : owed_)
    if (i.sink == kind && !in_hand_.count(id)) latest[i.node] = &i;
  for (const auto& [id, i] : owed_)
    if (i.sink == kind && !in_hand_.count(id) && latest[i.node] != &i) superseded.push_back(id);
  for (const auto& [node, i] : latest) {
    batch.push_back(*i);
    in_hand_.insert(i->id);
  }
  return batch;
}

bool Outbox::has_work(SinkKind kind) const {
  for (const auto& [id, i] : owed_)
    if (i.sink == kind && !in_hand_.count(id)) return true;
  return false;
}

size_t Outbox::count(SinkKind kind) const {
  size_t n = 0;
  for (const auto& [id, i] : owed_) n += i.sink == kind;
  return n;
}

bool Outbox::newer(SinkKind kind, const std::string& node, uint64_t id) const {
  for (auto p = owed_.upper_bound(id); p != owed_.end(); ++p)
    if (p->second.sink == kind && p->second.node == node) return true;
  return false;
}

std::vector<Intent> Outbox::intents() const {
  std::vector<Intent> v;
  for (const auto& [id, i] : owed_) v.push_back(i);
  return v;
}

}  // namespace vigil::drainer
