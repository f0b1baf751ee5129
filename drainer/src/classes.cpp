// Hardware classes learned from Slurm and the fleet (classes.h).
#include "vigil/drainer/classes.h"

#include <algorithm>
#include <limits>

#include "vigil/base/strings.h"

namespace vigil::drainer {

namespace {

std::string figure_key(const InventoryFigure& f) {
  return std::string(f.check) + "/" + std::string(f.measurement);
}

// "gpu:h100:8(S:0-1),gpu:a100:2(S:1)" -> "gpu:h100:8,gpu:a100:2": the socket binding says where
// the GPUs sit, not what the node is.
std::string gres_without_sockets(const std::string& gres) {
  std::string out;
  int depth = 0;
  for (char c : gres) {
    if (c == '(') ++depth;
    if (depth == 0) out += c;
    if (c == ')' && depth > 0) --depth;
  }
  return out == "(null)" ? "" : out;
}

}  // namespace

std::string declaration(const slurm::SlurmNodeInfo& info) {
  std::vector<std::string> features = info.features;
  std::sort(features.begin(), features.end());
  const std::string gres = gres_without_sockets(info.gres);  // "(null)" -> ""
  std::string out = (gres.empty() ? "no-gres" : gres) + " [";
  for (std::size_t i = 0; i < features.size(); ++i) out += (i ? "," : "") + features[i];
  return out + "]";
}

std::string class_name(const std::string& sku, const slurm::SlurmNodeInfo* info) {
  return info == nullptr ? "" : sku + " " + declaration(*info);
}

std::map<std::string, double> inventory_of(const NodeReport& report) {
  std::map<std::string, double> out;
  for (const auto& f : kInventoryFigures) {
    for (const auto& c : report.checks) {
      if (c.check != f.check || c.status == Status::kError || c.status == Status::kSkipped)
        continue;
      double lowest = std::numeric_limits<double>::infinity();
      for (const auto& m : c.measurements) {
        if (m.name != f.measurement || (f.per_unit && f.skip_zero && m.value == 0)) continue;
        lowest = std::min(lowest, m.value);
      }
      if (lowest != std::numeric_limits<double>::infinity()) out[figure_key(f)] = lowest;
    }
  }
  return out;
}

std::optional<ClassInventory::Consensus> ClassInventory::consensus(const std::string& cls,
                                                                   const std::string& figure,
                                                                   const double* own) const {
  const auto it = tallies_.find({cls, figure});
  if (it == tallies_.end()) return std::nullopt;
  Consensus best;
  for (const auto& [value, count] : it->second) {
    const int others = count - (own != nullptr && *own == value ? 1 : 0);
    best.nodes += others;
    if (others > best.agree) {
      best.agree = others;
      best.value = value;
    }
  }
  if (best.nodes < settings_.min_nodes ||
      best.agree < settings_.min_share * static_cast<double>(best.nodes))
    return std::nullopt;
  return best;
}

void ClassInventory::forget(const std::string& node) {
  const auto it = nodes_.find(node);
  if (it == nodes_.end()) return;
  for (const auto& [figure, value] : it->second.figures) {
    auto t = tallies_.find({it->second.cls, figure});
    if (t == tallies_.end()) continue;
    if (--t->second[value] <= 0) t->second.erase(value);
    if (t->second.empty()) tallies_.erase(t);
  }
  nodes_.erase(it);
}

void ClassInventory::forget_old(std::int64_t now) {
  // One sweep an hour at most: a week-old node gone an hour longer changes nothing.
  if (now - last_sweep_ < 3600) return;
  last_sweep_ = now;
  std::vector<std::string> old;
  for (const auto& [node, e] : nodes_)
    if (now - e.at > settings_.forget_after_s) old.push_back(node);
  for (const auto& n : old) forget(n);
}

bool ClassInventory::covers(const Consensus& c, int declared) const {
  return c.nodes + 1 >= settings_.min_share * static_cast<double>(declared);
}

std::vector<ClassVerdict> ClassInventory::judge(const NodeReport& report, const std::string& cls,
                                                int declared, std::int64_t now, bool learn) {
  std::vector<ClassVerdict> out;
  forget_old(now);
  if (cls.empty()) return out;
  const auto figures = inventory_of(report);
  // The node's own earlier figures are not its peers: leave them out of its consensus.
  const auto prev = nodes_.find(report.node);
  const Entry* own = prev != nodes_.end() && prev->second.cls == cls ? &prev->second : nullptr;
  for (const auto& [figure, value] : figures) {
    const double* own_value = nullptr;
    if (own != nullptr)
      if (auto o = own->figures.find(figure); o != own->figures.end()) own_value = &o->second;
    const auto c = consensus(cls, figure, own_value);
    if (!c || value >= c->value || !covers(*c, declared)) continue;
    ClassVerdict v;
    v.check = figure.substr(0, figure.find('/'));
    v.measurement = figure.substr(figure.find('/') + 1);
    v.value = value;
    v.consensus = c->value;
    v.agree = c->agree;
    v.nodes = c->nodes;
    v.message = v.measurement + " " + format_figure(value, FigureStyle::kThreeSignificant) +
                ", its class has " + format_figure(c->value, FigureStyle::kThreeSignificant) +
                " on " + std::to_string(c->agree) + " of " + std::to_string(c->nodes) + " nodes";
    out.push_back(std::move(v));
  }
  if (learn) {
    // A node whose Slurm declaration changed leaves its old class. Figures this report does not
    // have (a hook's report runs fewer checks than a node job's) keep their last value.
    if (own == nullptr) forget(report.node);
    Entry& e = nodes_[report.node];
    e.cls = cls;
    e.at = now;
    for (const auto& [figure, value] : figures) {
      if (auto o = e.figures.find(figure); o != e.figures.end()) {
        auto& tally = tallies_[{cls, figure}];
        if (--tally[o->second] <= 0) tally.erase(o->second);
      }
      e.figures[figure] = value;
      tallies_[{cls, figure}][value]++;
    }
  }
  return out;
}

std::vector<ClassSummary> ClassInventory::summary() const {
  std::map<std::string, ClassSummary> by_name;
  for (const auto& [node, e] : nodes_) {
    auto& s = by_name[e.cls];
    s.name = e.cls;
    s.nodes++;
  }
  for (const auto& [key, tally] : tallies_)
    if (auto c = consensus(key.first, key.second, nullptr))
      by_name[key.first].consensus[key.second] = c->value;
  std::vector<ClassSummary> out;
  for (auto& [name, s] : by_name) out.push_back(std::move(s));
  return out;
}

void fold_class_verdicts(NodeReport& report, const std::vector<ClassVerdict>& verdicts,
                         const PolicyConfig& policy) {
  const std::string code(kClassBelowFaultCode);
  for (const auto& v : verdicts) {
    for (auto& c : report.checks) {
      if (c.check != v.check || c.status == Status::kError || c.status == Status::kSkipped)
        continue;
      if (c.status == Status::kFail && c.fault_code != code &&
          policy.for_check(c.check, c.fault_code).drain_after <=
              policy.for_check(c.check, code).drain_after)
        continue;  // the check's own finding drains as soon or sooner: it stands as reported
      if (c.status == Status::kFail && c.fault_code == code) {
        c.message += "; " + v.message;
        continue;
      }
      c.status = Status::kFail;
      c.fault_code = code;
      c.message = v.message;
    }
  }
}

}  // namespace vigil::drainer
