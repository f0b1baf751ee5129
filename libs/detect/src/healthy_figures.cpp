// Engine::healthy_figures and propose_floor: the data and the rule behind `vigil-drainer
// calibrate` (docs/thresholds.md, "Calibration").
#include <algorithm>
#include <map>

#include "state.h"
#include "stats.h"
#include "vigil/detect/detect.h"

namespace vigil::detect {

std::vector<HealthyFigures> Engine::healthy_figures(std::string_view sku) const {
  struct Pool {
    std::vector<double> values;
    std::size_t nodes = 0;
  };
  std::map<detail::KeyId, Pool> pools;
  for (const auto& [node, ns] : state_->nodes) {
    for (const auto& [key, rings] : ns.history) {
      if (key.sku != sku) continue;
      Pool& p = pools[key];
      bool any = false;
      for (const auto& [unit, ring] : rings) {
        // A per-GPU figure's rings also keep the node's level ("node"): the median of its
        // GPUs, not one more part, so it is left out of the pool.
        if (key.kind != UnitKind::kNode && unit == "node") continue;
        p.values.insert(p.values.end(), ring.begin(), ring.end());
        any = any || !ring.empty();
      }
      if (any) ++p.nodes;
    }
  }
  std::vector<HealthyFigures> out;
  for (auto& [key, p] : pools) {
    if (p.values.empty()) continue;
    HealthyFigures f;
    f.check = key.check;
    f.measurement = key.measurement;
    f.kind = key.kind;
    if (auto u = state_->units.find(key); u != state_->units.end()) f.unit = u->second;
    f.nodes = p.nodes;
    f.runs = p.values.size();
    f.lowest = *std::min_element(p.values.begin(), p.values.end());
    f.centre = stats::median(p.values);
    f.spread = stats::mad_sigma(std::move(p.values));
    out.push_back(std::move(f));
  }
  return out;
}

ProposedFloor propose_floor(const HealthyFigures& f, const Margins& margins, std::size_t min_nodes,
                            std::size_t min_runs) {
  ProposedFloor p;
  if (f.nodes < min_nodes || f.runs < min_runs || !(f.centre > 0)) {
    p.refused = "not enough healthy data: " + std::to_string(f.nodes) + " nodes, " +
                std::to_string(f.runs) + " figures (need " + std::to_string(min_nodes) +
                " nodes and " + std::to_string(min_runs) + " figures)";
    return p;
  }
  const double rel = f.spread / f.centre;
  const double fail_frac = std::min(0.9, std::max(2 * margins.fail, 5 * rel));
  const double warn_frac = std::min(fail_frac, std::max(2 * margins.warn, 3 * rel));
  p.fail = f.centre * (1 - fail_frac);
  p.warn = f.centre * (1 - warn_frac);
  return p;
}

}  // namespace vigil::detect
