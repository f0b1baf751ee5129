#pragma once
// The circuit breaker (docs/drainer.md "Circuit breaker"), in one place: its state, the sliding
// window per group, the cap, the size of a node's group, and what a decision journals of it.
// The policy engine asks it whether a drain fits; live decisions and replay count a drain
// through it; the Slurm hooks use the same cap formula (vigil/report/drain_decision.h).
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "vigil/base/result.h"
#include "vigil/drainer/config.h"

namespace vigil::drainer {

struct BreakerState {
  bool open = false;
  std::string why;
  int64_t opened_at = 0;
  std::map<std::string, std::vector<int64_t>> recent_drains;  // group -> drain times
};

// One drain counted in the breaker's window (journaled instead of the whole BreakerState, which
// grows with every drain in the window).
struct BreakerDrain {
  std::string group;
  int64_t at = 0;
};

// What a decision journals of the breaker: the whole state when it opened, closed or its
// reason changed, else the one drain it counted, else nothing. (Writing the whole window with
// each of 1,000 drains made the journal grow quadratically.)
struct BreakerDelta {
  std::optional<BreakerState> whole;
  std::optional<BreakerDrain> drain;
};

class Breaker {
 public:
  explicit Breaker(BreakerConfig cfg) : cfg_(cfg) {}

  // One more drain of a node in `group` (of `group_size` nodes) at `now`: counted into `s` and
  // returned, or, over the cap, `s` opens (why says which drain broke which cap) and nullopt.
  std::optional<BreakerDrain> try_count(BreakerState& s, const std::string& group, int group_size,
                                        int64_t now) const;
  // A drain counted before (journal replay, or a live decision applied): into the window.
  void count(BreakerState& s, const BreakerDrain& d) const;
  // What a decision that took the breaker from `before` to `after` journals.
  static BreakerDelta delta(const BreakerState& before, const BreakerState& after,
                            const std::optional<BreakerDrain>& counted);

  const BreakerConfig& config() const { return cfg_; }

 private:
  // The drain times of `group` still inside the window at `now`.
  std::vector<int64_t>& window(BreakerState& s, const std::string& group, int64_t now) const;

  BreakerConfig cfg_;
};

// The breaker group of a node: its Slurm partition, else its SKU.
std::string breaker_group(const std::string& partition, const std::string& sku);

// Group sizes for one decision pass: nodes per partition in Slurm's view, and known nodes per
// group in the drainer's table for nodes Slurm shows no partition for.
class BreakerGroups {
 public:
  // partition_counts: nodes per partition in Slurm's view (empty when the view is unknown).
  BreakerGroups(const std::map<std::string, int>& partition_counts, bool have_view,
                std::map<std::string, int> known_per_group)
      : partitions_(partition_counts), have_view_(have_view), known_(std::move(known_per_group)) {}
  // Keeps a reference to the partition counts: a temporary would dangle.
  BreakerGroups(std::map<std::string, int>&&, bool, std::map<std::string, int>) = delete;
  // The size of `group` for a node in `partition` ("" when Slurm shows none); a node not known
  // before counts itself, once.
  int size(const std::string& partition, const std::string& group, bool new_node);

 private:
  const std::map<std::string, int>& partitions_;
  bool have_view_;
  std::map<std::string, int> known_;
};

nlohmann::json to_json(const BreakerState& b);
Result<BreakerState> breaker_state_from_json(const nlohmann::json& j);

}  // namespace vigil::drainer
