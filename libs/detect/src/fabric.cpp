#include "vigil/detect/fabric.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <set>

#include "vigil/base/strings.h"

namespace vigil::detect {

namespace {

// The 75th percentile (linear interpolation): still a healthy pair's figure while at least a
// quarter of the pairs are healthy. The median would break as soon as half the pairs cross a bad
// switch.
double upper_quartile(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const double pos = 0.75 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

struct Seen {
  std::string partner;
  double busbw = 0;
  bool slow = false;
};

// Every measured pair as seen from each of its two nodes, and the leaf switch of each node.
struct Observed {
  std::map<std::string, std::vector<Seen>> seen;
  const std::map<std::string, std::string>& leaf_of;

  const std::vector<Seen>& of(const std::string& node) const {
    static const std::vector<Seen> kNone;
    const auto it = seen.find(node);
    return it == seen.end() ? kNone : it->second;
  }
  std::string leaf(const std::string& n) const {
    auto it = leaf_of.find(n);
    return it == leaf_of.end() ? std::string() : it->second;
  }
  // A partner is fine "elsewhere" when it has a good pair with someone other than `node`.
  bool fine_without(const std::string& partner, const std::string& node) const {
    for (const Seen& s : of(partner))
      if (!s.slow && s.partner != node) return true;
    return false;
  }
};

// Sets the verdict's pair counts, reference figure and slow threshold, and files every pair with
// a finite figure under both of its nodes.
Observed observe(const std::vector<PairFigure>& pairs,
                 const std::map<std::string, std::string>& leaf_of, const FabricJudgeConfig& config,
                 FabricVerdict& v) {
  Observed o{{}, leaf_of};
  std::vector<double> figures;
  for (const auto& p : pairs)
    if (p.busbw && std::isfinite(*p.busbw)) figures.push_back(*p.busbw);
  v.pair_count = static_cast<int>(figures.size());
  if (figures.empty()) return o;
  v.reference_busbw = upper_quartile(figures);
  v.slow_below = v.reference_busbw * (1 - config.slow_margin);
  if (config.floor) v.slow_below = std::max(v.slow_below, *config.floor);
  for (const auto& p : pairs) {
    if (!p.busbw || !std::isfinite(*p.busbw)) continue;
    const bool slow = *p.busbw < v.slow_below;
    v.slow_pair_count += slow;
    o.seen[p.a].push_back({p.b, *p.busbw, slow});
    o.seen[p.b].push_back({p.a, *p.busbw, slow});
  }
  return o;
}

// A node's own call: it fails when it is slow with enough partners that are fine elsewhere.
NodeBlame blame_node(const Observed& o, const std::string& node, double slow_below,
                     const FabricJudgeConfig& config) {
  NodeBlame b;
  b.node = node;
  b.leaf = o.leaf(node);
  std::string figures_text;
  for (const Seen& s : o.of(node)) {
    (s.slow ? b.slow_pairs : b.good_pairs)++;
    if (s.slow && o.fine_without(s.partner, node)) {
      b.proven_partners.push_back(s.partner);
      figures_text += (figures_text.empty() ? "" : ", ") + s.partner + " " + significant(s.busbw);
    }
  }
  if (static_cast<int>(b.proven_partners.size()) >= config.min_slow_partners) {
    b.call = FabricCall::kFail;
    b.message = "slow with " + std::to_string(b.proven_partners.size()) +
                " partners that are fine elsewhere (" + figures_text + " GB/s < " +
                significant(slow_below) + ")";
  } else if (b.good_pairs > 0) {
    b.call = FabricCall::kPass;
    b.message = std::to_string(b.good_pairs) + " good pair" + (b.good_pairs > 1 ? "s" : "");
  } else {
    b.call = FabricCall::kUnknown;
    b.message = b.slow_pairs == 0 ? "no measured pair"
                                  : "slow only with partners that are slow elsewhere too";
  }
  return b;
}

// Switch faults: most of a leaf's nodes slow on every pair that leaves the leaf, while the
// pairs inside it are fine (or there are none). The leaf's nodes are then not blamed.
void suspect_switches(const Observed& o, const FabricJudgeConfig& config, FabricVerdict& v) {
  std::map<std::string, std::vector<NodeBlame*>> by_leaf;
  for (auto& b : v.nodes)
    if (!b.leaf.empty()) by_leaf[b.leaf].push_back(&b);
  for (auto& [name, members] : by_leaf) {
    int cross_slow = 0;
    bool inside_slow = false;
    std::set<std::string> slow_towards;  // the other leaves its slow crossing pairs went to
    for (const NodeBlame* b : members) {
      int cross = 0, cross_bad = 0;
      for (const Seen& s : o.of(b->node)) {
        if (o.leaf(s.partner) == name) {
          inside_slow = inside_slow || s.slow;
        } else {
          ++cross;
          cross_bad += s.slow;
          if (s.slow) slow_towards.insert(o.leaf(s.partner));
        }
      }
      cross_slow += cross > 0 && cross_bad == cross;
    }
    const int n = static_cast<int>(members.size());
    // With two leaves, a slow uplink of either looks the same; with three or more, the faulty
    // leaf is slow towards at least two others, a healthy one only towards the faulty leaf.
    const bool ambiguous_partner = by_leaf.size() >= 3 && slow_towards.size() < 2;
    if (inside_slow || ambiguous_partner || cross_slow < config.min_switch_nodes ||
        cross_slow <= config.switch_share * n)
      continue;
    SwitchBlame s;
    s.leaf = name;
    s.slow_nodes = cross_slow;
    s.nodes = n;
    s.message = "leaf " + name + ": " + std::to_string(cross_slow) + " of " + std::to_string(n) +
                " nodes slow on every pair that leaves it, pairs inside it fine";
    for (NodeBlame* b : members) {
      b->call = FabricCall::kUnknown;
      b->message = "switch " + name + " suspected (" + std::to_string(cross_slow) + " of " +
                   std::to_string(n) + " of its nodes slow across it); node not blamed";
    }
    v.switches.push_back(std::move(s));
  }
}

// A node elsewhere that is slow only with nodes under a suspected leaf is explained by it.
void excuse_by_switches(const Observed& o, const FabricJudgeConfig& config, FabricVerdict& v) {
  std::set<std::string> suspected;
  for (const auto& s : v.switches) suspected.insert(s.leaf);
  if (suspected.empty()) return;
  for (auto& b : v.nodes) {
    if (b.call != FabricCall::kFail) continue;
    std::vector<std::string> unexplained;
    for (const auto& p : b.proven_partners)
      if (!suspected.count(o.leaf(p))) unexplained.push_back(p);
    if (static_cast<int>(unexplained.size()) >= config.min_slow_partners) continue;
    b.call = b.good_pairs > 0 ? FabricCall::kPass : FabricCall::kUnknown;
    b.message = "slow only with nodes under a suspected switch; node not blamed";
  }
}

}  // namespace

std::vector<std::vector<std::pair<int, int>>> plan_rounds(int k, int rounds, std::uint64_t seed) {
  std::vector<std::vector<std::pair<int, int>>> out;
  if (k < 2 || rounds < 1) return out;
  std::vector<int> order(static_cast<std::size_t>(k));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  const int n = k % 2 == 0 ? k : k + 1;  // with an odd k, index k is "sits out"
  if (n > k) order.push_back(k);
  for (int t = 0; t < rounds; ++t) {
    const int shift = t % (n - 1);  // the circle method: seat 0 stays, the others rotate
    std::vector<int> seat(static_cast<std::size_t>(n));
    seat[0] = order[0];
    for (int i = 1; i < n; ++i)
      seat[static_cast<std::size_t>(i)] =
          order[static_cast<std::size_t>(1 + (i - 1 + shift) % (n - 1))];
    std::vector<std::pair<int, int>> pairs;
    for (int i = 0; i < n / 2; ++i) {
      const int a = seat[static_cast<std::size_t>(i)];
      const int b = seat[static_cast<std::size_t>(n - 1 - i)];
      if (a == k || b == k) continue;
      pairs.emplace_back(std::min(a, b), std::max(a, b));
    }
    out.push_back(std::move(pairs));
  }
  return out;
}

FabricVerdict localize(const std::vector<std::string>& nodes, const std::vector<PairFigure>& pairs,
                       const std::map<std::string, std::string>& leaf_of,
                       const FabricJudgeConfig& config) {
  FabricVerdict v;
  const Observed o = observe(pairs, leaf_of, config, v);
  for (const std::string& node : nodes)
    v.nodes.push_back(blame_node(o, node, v.slow_below, config));
  suspect_switches(o, config, v);
  excuse_by_switches(o, config, v);
  return v;
}

}  // namespace vigil::detect
