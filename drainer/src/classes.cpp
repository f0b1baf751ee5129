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

std::map<std::string, std::vector<UnitVersion>> versions_of(const NodeReport& report) {
  std::map<std::string, std::vector<UnitVersion>> out;
  if (!report.driver.empty()) out["driver"].push_back({"node", report.driver});
  for (const auto& g : report.gpus)
    if (!g.vbios.empty()) out["vbios"].push_back({"gpu" + std::to_string(g.index), g.vbios});
  // A NIC without a board id cannot be told apart from another model: left out.
  for (const auto& n : report.nics)
    if (!n.firmware.empty() && !n.board_id.empty())
      out["nic_firmware " + n.board_id].push_back({n.device, n.firmware});
  return out;
}

std::string_view version_check(std::string_view) { return kClassVersionCheck; }

bool is_inventory_figure(std::string_view figure) {
  for (const auto& f : kInventoryFigures)
    if (figure == figure_key(f)) return true;
  return false;
}

bool is_version_figure(std::string_view figure) {
  constexpr std::string_view kNic = "nic_firmware ";
  return figure == "driver" || figure == "vbios" ||
         (figure.starts_with(kNic) && is_part_identifier(figure.substr(kNic.size())));
}

template <typename V>
std::optional<ClassInventory::Consensus<V>> ClassInventory::consensus(const Tallies<V>& tallies,
                                                                      const std::string& cls,
                                                                      const std::string& figure,
                                                                      const V* own) const {
  const auto it = tallies.find({cls, figure});
  if (it == tallies.end()) return std::nullopt;
  Consensus<V> best;
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

namespace {

template <typename V>
void untally(std::map<V, int>& tally, const V& value) {
  if (--tally[value] <= 0) tally.erase(value);
}

// Moves one node's figure in a tally from its last value (when it had one) to `value`.
template <typename V>
void retally(std::map<V, int>& tally, std::map<std::string, V>& figures, const std::string& figure,
             const V& value) {
  if (auto o = figures.find(figure); o != figures.end()) untally(tally, o->second);
  figures[figure] = value;
  tally[value]++;
}

template <typename V, typename T>
void untally_all(T& tallies, const std::string& cls, const std::map<std::string, V>& figures) {
  for (const auto& [figure, value] : figures) {
    auto t = tallies.find({cls, figure});
    if (t == tallies.end()) continue;
    untally(t->second, value);
    if (t->second.empty()) tallies.erase(t);
  }
}

// The most common version among a node's units (a tie: the smallest, so that every node's
// figure is chosen alike).
std::string most_common(const std::vector<UnitVersion>& units) {
  std::map<std::string, int> count;
  for (const auto& u : units) count[u.version]++;
  std::string best;
  int most = 0;
  for (const auto& [version, n] : count)
    if (n > most) best = version, most = n;
  return best;
}

// What a node teaches its class of a version figure: the one version its units run, or
// kMixedVersions when they differ (a class whose nodes all mix versions, by design, then has
// that as its consensus and fails nobody for it).
std::string node_version(const std::vector<UnitVersion>& units) {
  for (const auto& u : units)
    if (u.version != units.front().version) return std::string(kMixedVersions);
  return units.front().version;
}

// Where a reference comes from, for messages: " on 41 of 42 nodes", or " (declared)".
template <typename C>
std::string basis(const C& c) {
  return c.declared
             ? " (declared)"
             : " on " + std::to_string(c.agree) + " of " + std::to_string(c.nodes) + " nodes";
}

}  // namespace

void ClassInventory::forget(const std::string& node) {
  const auto it = nodes_.find(node);
  if (it == nodes_.end()) return;
  untally_all(tallies_, it->second.cls, it->second.figures);
  untally_all(version_tallies_, it->second.cls, it->second.versions);
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

template <typename V>
bool ClassInventory::covers(const Consensus<V>& c, int declared) const {
  return c.nodes + 1 >= settings_.min_share * static_cast<double>(declared);
}

const ClassSettings::Declared* ClassInventory::declared_for(const std::string& cls) const {
  const auto it = settings_.declared.find(cls);
  return it == settings_.declared.end() ? nullptr : &it->second;
}

template <typename V>
std::optional<ClassInventory::Consensus<V>> ClassInventory::reference(
    const Tallies<V>& tallies, const std::map<std::string, V>* site, const std::string& cls,
    const std::string& figure, const std::map<std::string, V>* own, int declared) const {
  if (site != nullptr)
    if (auto d = site->find(figure); d != site->end()) return Consensus<V>{d->second, 0, 0, true};
  const V* own_value = nullptr;
  if (own != nullptr)
    if (auto o = own->find(figure); o != own->end()) own_value = &o->second;
  auto c = consensus(tallies, cls, figure, own_value);
  if (!c || !covers(*c, declared)) return std::nullopt;
  return c;
}

// A node whose units disagree among themselves fails when its class runs one version (one GPU
// on other firmware than its neighbours: a board a firmware update missed, as
// facebookresearch/gcm's vbios_mismatch check fails it); a node whose units all run one other
// version warns: a node updated ahead of its class (or left behind) in a rolling update is the
// site's choice, not a fault, so it is shown and never drains on its own. Each figure compared
// without a finding gives a pass verdict: the report's class_version result passes.
void ClassInventory::judge_versions(const NodeReport& report, const std::string& cls, int declared,
                                    const Entry* own, std::vector<ClassVerdict>& out) const {
  const ClassSettings::Declared* site = declared_for(cls);
  for (const auto& [figure, units] : versions_of(report)) {
    const auto c = reference(version_tallies_, site ? &site->versions : nullptr, cls, figure,
                             own ? &own->versions : nullptr, declared);
    if (!c) continue;
    ClassVerdict v;
    v.check = std::string(kClassVersionCheck);
    v.measurement = figure;
    v.agree = c->agree;
    v.nodes = c->nodes;
    v.fault_code = kClassVersionFaultCode;
    v.status = Status::kPass;
    const std::string mine = node_version(units);
    if (c->value == kMixedVersions || mine == c->value) {
      out.push_back(std::move(v));  // the class mixes versions by design, or the node agrees
      continue;
    }
    const std::string runs = "its class runs " + c->value + basis(*c);
    if (mine != kMixedVersions) {
      v.status = Status::kWarn;
      v.message = figure + " " + mine + ", " + runs;
    } else {
      // Name the units off the node's own majority: with 7 GPUs updated and 1 missed, the 1.
      const std::string most = most_common(units);
      std::string odd;
      for (const auto& u : units)
        if (u.version != most) odd += (odd.empty() ? "" : ", ") + u.unit + " " + u.version;
      v.status = Status::kFail;
      v.message = figure + " " + odd + " unlike the node's others (" + most + "); " + runs;
    }
    out.push_back(std::move(v));
  }
}

std::vector<ClassVerdict> ClassInventory::judge(const NodeReport& report, const std::string& cls,
                                                int declared, std::int64_t now, bool learn_it) {
  std::vector<ClassVerdict> out;
  forget_old(now);
  if (cls.empty()) return out;
  // The node's own earlier figures are not its peers: leave them out of its consensus.
  const auto prev = nodes_.find(report.node);
  const Entry* own = prev != nodes_.end() && prev->second.cls == cls ? &prev->second : nullptr;
  const ClassSettings::Declared* site = declared_for(cls);
  for (const auto& [figure, value] : inventory_of(report)) {
    const auto c = reference(tallies_, site ? &site->figures : nullptr, cls, figure,
                             own ? &own->figures : nullptr, declared);
    if (!c || value >= c->value) continue;
    ClassVerdict v;
    v.check = figure.substr(0, figure.find('/'));
    v.measurement = figure.substr(figure.find('/') + 1);
    v.value = value;
    v.consensus = c->value;
    v.agree = c->agree;
    v.nodes = c->nodes;
    v.message = v.measurement + " " + format_figure(value, FigureStyle::kThreeSignificant) +
                ", its class has " + format_figure(c->value, FigureStyle::kThreeSignificant) +
                basis(*c);
    out.push_back(std::move(v));
  }
  judge_versions(report, cls, declared, own, out);
  if (learn_it) learn(report, cls, now, own != nullptr);
  return out;
}

// A node whose Slurm declaration changed leaves its old class. Figures this report does not
// have (a hook's report runs fewer checks than a node job's, and carries no versions) keep their
// last value.
void ClassInventory::learn(const NodeReport& report, const std::string& cls, std::int64_t now,
                           bool known) {
  if (!known) forget(report.node);
  Entry& e = nodes_[report.node];
  e.cls = cls;
  e.at = now;
  for (const auto& [figure, value] : inventory_of(report))
    retally(tallies_[{cls, figure}], e.figures, figure, value);
  const auto versions = versions_of(report);
  if (versions.empty()) return;  // a hook's report: the node keeps what its last run taught
  // A run's report says every version the node has: a figure it no longer has (a NIC of
  // another board, a driver that could not be read) leaves its tally.
  for (auto it = e.versions.begin(); it != e.versions.end();) {
    if (versions.count(it->first)) {
      ++it;
      continue;
    }
    auto& tally = version_tallies_[{cls, it->first}];
    untally(tally, it->second);
    if (tally.empty()) version_tallies_.erase({cls, it->first});
    it = e.versions.erase(it);
  }
  for (const auto& [figure, units] : versions)
    retally(version_tallies_[{cls, figure}], e.versions, figure, node_version(units));
}

std::vector<ClassSummary> ClassInventory::summary() const {
  std::map<std::string, ClassSummary> by_name;
  for (const auto& [node, e] : nodes_) {
    auto& s = by_name[e.cls];
    s.name = e.cls;
    s.nodes++;
  }
  for (const auto& [key, tally] : tallies_)
    if (auto c = consensus<double>(tallies_, key.first, key.second, nullptr))
      by_name[key.first].consensus[key.second] = c->value;
  for (const auto& [key, tally] : version_tallies_)
    if (auto c = consensus<std::string>(version_tallies_, key.first, key.second, nullptr))
      by_name[key.first].versions[key.second] = c->value;
  for (const auto& [name, d] : settings_.declared) {
    by_name[name].name = name;
    by_name[name].declared = d;
  }
  std::vector<ClassSummary> out;
  for (auto& [name, s] : by_name) out.push_back(std::move(s));
  return out;
}

namespace {

// The report's class_version result, added when the report has versions: pass when some figure
// was compared with its class, skipped when none could be (no consensus, nothing declared).
void add_class_version_result(NodeReport& report, const std::vector<ClassVerdict>& verdicts) {
  if (versions_of(report).empty()) return;
  // The drainer's own result: one a report brought under that name (a site tool's) gives way.
  std::erase_if(report.checks, [](const CheckResult& c) { return c.check == kClassVersionCheck; });
  CheckResult r;
  r.check = std::string(kClassVersionCheck);
  r.short_name = "class-version";
  const bool compared = std::any_of(verdicts.begin(), verdicts.end(), [](const ClassVerdict& v) {
    return v.check == kClassVersionCheck;
  });
  r.status = compared ? Status::kPass : Status::kSkipped;
  r.message = compared ? "driver, VBIOS and NIC firmware as its class"
                       : "no class consensus or declaration to compare its versions with";
  report.checks.push_back(std::move(r));
}

}  // namespace

void fold_class_verdicts(NodeReport& report, const std::vector<ClassVerdict>& verdicts,
                         const PolicyConfig& policy) {
  add_class_version_result(report, verdicts);
  for (const auto& v : verdicts) {
    if (v.status == Status::kPass) continue;
    const std::string code(v.fault_code);
    for (auto& c : report.checks) {
      if (c.check != v.check || c.status == Status::kError || c.status == Status::kSkipped)
        continue;
      if (c.status == v.status && c.fault_code == code) {
        c.message += "; " + v.message;
        continue;
      }
      if (v.status == Status::kWarn && c.status != Status::kPass) continue;
      if (c.status == Status::kFail && policy.for_check(c.check, c.fault_code).drain_after <=
                                           policy.for_check(c.check, code).drain_after)
        continue;  // the check's own finding drains as soon or sooner: it stands as reported
      c.status = v.status;
      c.fault_code = code;
      c.message = v.message;
    }
  }
}

}  // namespace vigil::drainer
