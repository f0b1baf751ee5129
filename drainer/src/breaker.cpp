// The circuit breaker; see breaker.h.
#include "vigil/drainer/breaker.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "vigil/report/drain_decision.h"

namespace vigil::drainer {

std::vector<int64_t>& Breaker::window(BreakerState& s, const std::string& group,
                                      int64_t now) const {
  auto& times = s.recent_drains[group];
  std::erase_if(times, [&](int64_t t) { return t <= now - cfg_.window_s; });
  return times;
}

std::optional<BreakerDrain> Breaker::try_count(BreakerState& s, const std::string& group,
                                               int group_size, int64_t now) const {
  auto& times = window(s, group, now);
  const int next = static_cast<int>(times.size()) + 1;
  const int gsize = std::max(group_size, 1);
  const int cap = breaker_cap(cfg_.max_drains, cfg_.max_percent, gsize);
  if (next > cap) {
    s.open = true;
    s.opened_at = now;
    s.why = "drain #" + std::to_string(next) + " in " + group + " within " +
            std::to_string(cfg_.window_s) + "s exceeds cap (max_drains " +
            std::to_string(cfg_.max_drains) + ", max_percent " +
            std::to_string(static_cast<int>(cfg_.max_percent)) + "% of " + std::to_string(gsize) +
            " nodes: " + std::to_string(cap) + ")";
    return std::nullopt;
  }
  times.push_back(now);
  return BreakerDrain{group, now};
}

void Breaker::count(BreakerState& s, const BreakerDrain& d) const {
  window(s, d.group, d.at).push_back(d.at);
}

BreakerDelta Breaker::delta(const BreakerState& before, const BreakerState& after,
                            const std::optional<BreakerDrain>& counted) {
  BreakerDelta out;
  if (after.open != before.open || after.why != before.why || after.opened_at != before.opened_at)
    out.whole = after;
  else if (counted)
    out.drain = counted;
  return out;
}

std::string breaker_group(const std::string& partition, const std::string& sku) {
  if (!partition.empty()) return "partition:" + partition;
  return "sku:" + (sku.empty() ? std::string("unknown") : sku);
}

int BreakerGroups::size(const std::string& partition, const std::string& group, bool new_node) {
  int n = 0;
  if (!partition.empty() && have_view_) {
    auto it = partitions_.find(partition);
    n = it == partitions_.end() ? 0 : it->second;
  } else {
    n = known_[group] + (new_node ? 1 : 0);
  }
  if (new_node) known_[group]++;
  return n;
}

nlohmann::json to_json(const BreakerState& b) {
  return {{"open", b.open},
          {"why", b.why},
          {"opened_at_unix_s", b.opened_at},
          {"recent_drains", b.recent_drains}};
}

Result<BreakerState> breaker_state_from_json(const nlohmann::json& j) {
  try {
    BreakerState b;
    b.open = j.value("open", false);
    b.why = j.value("why", "");
    b.opened_at = j.value("opened_at_unix_s", int64_t{0});
    if (j.contains("recent_drains"))
      b.recent_drains = j.at("recent_drains").get<std::map<std::string, std::vector<int64_t>>>();
    return b;
  } catch (const std::exception& e) {
    return Error{e.what(), "breaker_state_from_json"};
  }
}

}  // namespace vigil::drainer
