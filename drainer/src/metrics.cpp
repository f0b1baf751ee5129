// Metrics sink: one table of metric declarations, prometheus-cpp registry, text exposition.
#include "vigil/drainer/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "vigil/report/check_catalog.h"

namespace vigil::drainer {

const std::vector<MetricDesc>& metric_table() {
  static const std::vector<MetricDesc> t = {
      {"vigil_check_status", "gauge", "Current status of a check on a node (one-hot over status)",
       "node,check,status"},
      {"vigil_check_measurement_value", "gauge", "Latest measurement reported by a check",
       "node,check,measurement,unit,gpu,port"},
      {"vigil_check_threshold_value", "gauge",
       "Threshold the latest measurement was judged against",
       "node,check,measurement,unit,gpu,port,bound"},
      {"vigil_node_state", "gauge", "Vigil state of a node (one-hot over state)",
       "node,sku,partition,state"},
      {"vigil_node_report_age_seconds", "gauge", "Seconds since the node's latest accepted report",
       "node"},
      {"vigil_actions_total", "counter", "Actions taken by the drainer sinks, by outcome",
       "action,sink,outcome"},
      {"vigil_pending_actions", "gauge", "Actions waiting for their sink (e.g. slurmctld down)",
       "sink"},
      {"vigil_sink_given_up_total", "counter",
       "Actions a sink gave up on after its attempts (the webhook's dead letters)", "sink"},
      {"vigil_circuit_breaker_open", "gauge", "1 while the drain circuit breaker is open", ""},
      {"vigil_reports_ingested_total", "counter", "Reports received, by outcome", "outcome"},
      {"vigil_reports_rejected_total", "counter",
       "Requests refused by auth mode munge, by reason (forged_origin: signed on a host that is "
       "not the report's node)",
       "reason"},
      {"vigil_measurement_deviation_ratio", "gauge",
       "How far a check's worst performance figure on a node lies below its baseline "
       "(fraction; > 0 is slower)",
       "node,sku,check,measurement,unit,baseline"},
      {"vigil_repair_steps_total", "counter",
       "Repair ladder steps taken: reboot (asked Slurm), rebooted (the node registered again), "
       "repaired (resumed after the reboot), replace (kept drained for a person)",
       "step"},
      {"vigil_repair_nodes", "gauge",
       "Nodes at each repair ladder stage (repair.reboot or repair.reset_gpu on)", "stage"},
      {"vigil_qualifying_nodes", "gauge",
       "Nodes the qualify gate holds drained until the qualify suite passes, by cause (new: "
       "first heard from; repaired: back from a reboot or GPU reset)",
       "cause"},
      {"vigil_drain_duration_seconds", "histogram",
       "Time from a Vigil drain to its end (resume, or lifted by someone), by cause: the first "
       "check that drove it, qualify for the gate's hold",
       "cause"},
      {"vigil_held_node_seconds_total", "counter",
       "Node-seconds Vigil held nodes drained, added when each drain ends, by cause", "cause"},
      {"vigil_incident_interval_seconds", "histogram",
       "Time between a node's Vigil drains (its previous drain to the new one)", ""},
      {"vigil_fabric_switch_suspect", "gauge",
       "1 while the newest fabric job with a topology suspects the leaf switch, 0 once a later "
       "job had a good pair leaving it",
       "switch"},
  };
  return t;
}

namespace {
const MetricDesc& desc(std::string_view name) {
  for (const auto& d : metric_table())
    if (d.name == name) return d;
  throw std::logic_error("metric not in table: " + std::string(name));
}

template <typename Builder>
auto& build(Builder b, prometheus::Registry& reg, std::string_view name) {
  const auto& d = desc(name);
  return b.Name(std::string(d.name)).Help(std::string(d.help)).Register(reg);
}

constexpr std::string_view kStatuses[] = {"pass", "warn", "fail", "error", "skipped"};
}  // namespace

struct Metrics::Impl {
  mutable std::mutex mu;
  std::shared_ptr<prometheus::Registry> reg = std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Gauge>& check_status =
      build(prometheus::BuildGauge(), *reg, "vigil_check_status");
  prometheus::Family<prometheus::Gauge>& measurement =
      build(prometheus::BuildGauge(), *reg, "vigil_check_measurement_value");
  prometheus::Family<prometheus::Gauge>& threshold =
      build(prometheus::BuildGauge(), *reg, "vigil_check_threshold_value");
  prometheus::Family<prometheus::Gauge>& node_state =
      build(prometheus::BuildGauge(), *reg, "vigil_node_state");
  prometheus::Family<prometheus::Gauge>& report_age =
      build(prometheus::BuildGauge(), *reg, "vigil_node_report_age_seconds");
  prometheus::Family<prometheus::Counter>& actions =
      build(prometheus::BuildCounter(), *reg, "vigil_actions_total");
  prometheus::Family<prometheus::Gauge>& pending =
      build(prometheus::BuildGauge(), *reg, "vigil_pending_actions");
  prometheus::Family<prometheus::Counter>& given_up =
      build(prometheus::BuildCounter(), *reg, "vigil_sink_given_up_total");
  prometheus::Family<prometheus::Gauge>& breaker =
      build(prometheus::BuildGauge(), *reg, "vigil_circuit_breaker_open");
  prometheus::Family<prometheus::Counter>& ingested =
      build(prometheus::BuildCounter(), *reg, "vigil_reports_ingested_total");
  prometheus::Family<prometheus::Counter>& rejected =
      build(prometheus::BuildCounter(), *reg, "vigil_reports_rejected_total");
  prometheus::Family<prometheus::Gauge>& deviation =
      build(prometheus::BuildGauge(), *reg, "vigil_measurement_deviation_ratio");
  prometheus::Family<prometheus::Gauge>& switch_suspect =
      build(prometheus::BuildGauge(), *reg, "vigil_fabric_switch_suspect");
  prometheus::Family<prometheus::Counter>& repair_steps =
      build(prometheus::BuildCounter(), *reg, "vigil_repair_steps_total");
  prometheus::Family<prometheus::Gauge>& repair_nodes =
      build(prometheus::BuildGauge(), *reg, "vigil_repair_nodes");
  prometheus::Family<prometheus::Gauge>& qualifying =
      build(prometheus::BuildGauge(), *reg, "vigil_qualifying_nodes");
  prometheus::Family<prometheus::Histogram>& drain_duration =
      build(prometheus::BuildHistogram(), *reg, "vigil_drain_duration_seconds");
  prometheus::Family<prometheus::Counter>& held_seconds =
      build(prometheus::BuildCounter(), *reg, "vigil_held_node_seconds_total");
  prometheus::Family<prometheus::Histogram>& incident_interval =
      build(prometheus::BuildHistogram(), *reg, "vigil_incident_interval_seconds");
  prometheus::Gauge& breaker_gauge = breaker.Add({});

  // Family::Remove is linear in the family's size, so series are reused while their labels
  // stay the same and only vanished ones are removed. Check series are kept per check: a
  // report replaces the series of the checks it carries and leaves the others (a fabric job's
  // report carries only fabric_allreduce_ib, the node job's report everything else).
  using SeriesByKey = std::map<std::string, prometheus::Gauge*>;
  struct NodeSeries {
    std::string state_key;
    std::vector<prometheus::Gauge*> state;
    std::map<std::string, SeriesByKey> status, meas, thr;  // by check
    std::map<std::string, prometheus::Gauge*> deviation;   // by check: its worst verdict
    prometheus::Gauge* age = nullptr;
  };
  std::map<std::string, NodeSeries> nodes;
};

Metrics::Metrics() : impl_(std::make_unique<Impl>()) {
  for (auto o : {"accepted", "duplicate", "invalid", "unauthorized", "too_large"})
    impl_->ingested.Add({{"outcome", o}});
  for (auto o : {"ok", "error", "dry_run", "skipped"}) {
    for (auto a : {"drain", "resume"})
      impl_->actions.Add({{"action", a}, {"sink", "slurm"}, {"outcome", o}});
    impl_->actions.Add({{"action", "annotate"}, {"sink", "kubernetes"}, {"outcome", o}});
  }
  // vigil_reports_rejected_total's reasons are declared by the HTTP API (declare_rejected),
  // which does the refusing.
  for (auto s : {"reset_gpu", "reset_passed", "reset_failed", "reboot", "redrain", "rebooted",
                 "repaired", "replace"})
    impl_->repair_steps.Add({{"step", s}});
  for (auto s : {"resetting", "rebooting", "rechecking", "replace"})
    impl_->repair_nodes.Add({{"stage", s}});
  impl_->pending.Add({{"sink", "slurm"}});
  impl_->pending.Add({{"sink", "kubernetes"}});
}

Metrics::~Metrics() = default;

void Metrics::on_ingest(std::string_view outcome, double n) {
  std::lock_guard lk(impl_->mu);
  impl_->ingested.Add({{"outcome", std::string(outcome)}}).Increment(n);
}

void Metrics::on_rejected(std::string_view reason) {
  std::lock_guard lk(impl_->mu);
  impl_->rejected.Add({{"reason", std::string(reason)}}).Increment();
}

void Metrics::declare_rejected(const std::vector<std::string>& reasons) {
  std::lock_guard lk(impl_->mu);
  for (const auto& r : reasons) impl_->rejected.Add({{"reason", r}});
}

void Metrics::on_action(IntentAction action, SinkKind sink, Outcome outcome, double n) {
  std::lock_guard lk(impl_->mu);
  impl_->actions
      .Add({{"action", std::string(to_string(action))},
            {"sink", std::string(to_string(sink))},
            {"outcome", std::string(outcome_name(outcome))}})
      .Increment(n);
}

void Metrics::on_given_up(std::string_view sink, double n) {
  std::lock_guard lk(impl_->mu);
  impl_->given_up.Add({{"sink", std::string(sink)}}).Increment(n);
}

void Metrics::set_pending(std::string_view sink, double n) {
  std::lock_guard lk(impl_->mu);
  impl_->pending.Add({{"sink", std::string(sink)}}).Set(n);
}

void Metrics::set_breaker_open(bool open) {
  std::lock_guard lk(impl_->mu);
  impl_->breaker_gauge.Set(open ? 1 : 0);
}

void Metrics::on_repair_step(std::string_view step) {
  std::lock_guard lk(impl_->mu);
  impl_->repair_steps.Add({{"step", std::string(step)}}).Increment();
}

void Metrics::set_repair_nodes(const std::map<RepairStage, int>& stages) {
  std::lock_guard lk(impl_->mu);
  for (RepairStage st : {RepairStage::kResetting, RepairStage::kRebooting, RepairStage::kRechecking,
                         RepairStage::kReplace}) {
    const auto it = stages.find(st);
    impl_->repair_nodes.Add({{"stage", std::string(to_string(st))}})
        .Set(it == stages.end() ? 0 : it->second);
  }
}

void Metrics::set_qualifying(const std::map<std::string, int>& by_cause) {
  std::lock_guard lk(impl_->mu);
  for (const char* cause : {"new", "repaired"}) {
    const auto it = by_cause.find(cause);
    impl_->qualifying.Add({{"cause", cause}}).Set(it == by_cause.end() ? 0 : it->second);
  }
}

namespace {
// From a re-qualified performance drain (minutes) to a part swap (days); the incident interval
// from a flapping node (an hour) to a quarter.
const prometheus::Histogram::BucketBoundaries kDrainBuckets = {
    300, 900, 1800, 3600, 7200, 21600, 86400, 3 * 86400, 7 * 86400, 30 * 86400};
const prometheus::Histogram::BucketBoundaries kIntervalBuckets = {
    3600, 6 * 3600, 86400, 7 * 86400, 30 * 86400, 90 * 86400};
}  // namespace

void Metrics::on_drain_ended(std::string_view cause, double held_s) {
  std::lock_guard lk(impl_->mu);
  const prometheus::Labels labels = {{"cause", std::string(cause)}};
  impl_->drain_duration.Add(labels, kDrainBuckets).Observe(held_s);
  impl_->held_seconds.Add(labels).Increment(held_s);
}

void Metrics::on_incident(double since_last_s) {
  std::lock_guard lk(impl_->mu);
  impl_->incident_interval.Add({}, kIntervalBuckets).Observe(since_last_s);
}

void Metrics::set_report_age(const std::string& node, double age_s) {
  std::lock_guard lk(impl_->mu);
  auto& ns = impl_->nodes[node];
  if (!ns.age) ns.age = &impl_->report_age.Add({{"node", node}});
  ns.age->Set(age_s);
}

namespace {
// Sets `value` on the series `key` names among one node's series of one check, reusing it from
// `old` when present (its map node moves over: no allocation), else from `fresh`, else adding
// it with the labels `labels()` builds: prometheus::Labels (a std::map of strings) and the
// family's label hash are built only for a series that is new. The steady state, the same
// figures report after report, then costs a key and a lookup per figure (perf over
// drainer_ingest_bench, 2026-11-27: Metrics::on_node was 8% of the bench's CPU samples with
// labels built per figure; docs/benchmarks.md).
template <class MakeLabels>
void put(prometheus::Family<prometheus::Gauge>& fam, std::map<std::string, prometheus::Gauge*>& old,
         std::map<std::string, prometheus::Gauge*>& fresh, const std::string& key,
         MakeLabels&& labels, double value) {
  if (auto it = old.find(key); it != old.end()) {
    it->second->Set(value);
    fresh.insert(old.extract(it));
    return;
  }
  auto [it, added] = fresh.try_emplace(key, nullptr);
  if (added) it->second = &fam.Add(labels());
  it->second->Set(value);
}

void drop(prometheus::Family<prometheus::Gauge>& fam,
          std::map<std::string, prometheus::Gauge*>& old) {
  for (auto& [k, g] : old) fam.Remove(g);
  old.clear();
}
}  // namespace

void Metrics::on_node(const NodeRecord& s, const NodeReport* r) {
  std::lock_guard lk(impl_->mu);
  auto& ns = impl_->nodes[s.node];
  const std::string skey = s.sku + '\x1f' + s.partition;
  if (ns.state.empty() || ns.state_key != skey) {
    for (auto* g : ns.state) impl_->node_state.Remove(g);
    ns.state.clear();
    for (const auto& st : kNodeStateNames) {
      ns.state.push_back(&impl_->node_state.Add({{"node", s.node},
                                                 {"sku", s.sku},
                                                 {"partition", s.partition},
                                                 {"state", std::string(st.name)}}));
    }
    ns.state_key = skey;
  }
  for (size_t i = 0; i < ns.state.size(); ++i)
    ns.state[i]->Set(kNodeStateNames[i].value == s.state ? 1 : 0);
  // Every node known under a switch carries the switch's verdict (Drainer keeps them equal).
  if (!s.fabric_switch.empty())
    impl_->switch_suspect.Add({{"switch", s.fabric_switch}}).Set(s.switch_suspect ? 1 : 0);
  if (!r) return;
  for (const auto& c : r->checks) {
    if (c.check == kGpuResetResult) continue;  // the reset rung's outcome, not a check (repair.h)
    Impl::SeriesByKey status, meas, thr;
    auto& old_status = ns.status[c.check];
    auto& old_meas = ns.meas[c.check];
    auto& old_thr = ns.thr[c.check];
    // The maps are per node and check: a series' key is what else tells it apart.
    for (auto st : kStatuses) {
      auto labels = [&] {
        return prometheus::Labels{
            {"node", s.node}, {"check", c.check}, {"status", std::string(st)}};
      };
      put(impl_->check_status, old_status, status, std::string(st), labels,
          to_string(c.status) == st ? 1 : 0);
    }
    for (const auto& m : c.measurements) {
      const std::string gpu = m.gpu ? std::to_string(*m.gpu) : "";
      const std::string port = m.port.value_or("");
      const std::string key = m.name + '\x1f' + m.unit + '\x1f' + gpu + '\x1f' + port;
      auto labels = [&](const char* bound) {
        prometheus::Labels l{{"node", s.node}, {"check", c.check}, {"measurement", m.name},
                             {"unit", m.unit}, {"gpu", gpu},       {"port", port}};
        if (bound) l["bound"] = bound;
        return l;
      };
      put(
          impl_->measurement, old_meas, meas, key, [&] { return labels(nullptr); }, m.value);
      if (m.threshold) {
        put(
            impl_->threshold, old_thr, thr, key + "\x1e" + "fail", [&] { return labels("fail"); },
            m.threshold->fail);
        if (m.threshold->warn)
          put(
              impl_->threshold, old_thr, thr, key + "\x1e" + "warn", [&] { return labels("warn"); },
              *m.threshold->warn);
      }
    }
    drop(impl_->check_status, old_status);
    drop(impl_->measurement, old_meas);
    drop(impl_->threshold, old_thr);
    old_status = std::move(status);
    old_meas = std::move(meas);
    old_thr = std::move(thr);
  }
}

std::string Metrics::serialize() const {
  std::lock_guard lk(impl_->mu);
  return prometheus::TextSerializer().Serialize(impl_->reg->Collect());
}

void Metrics::on_verdicts(const detect::ReportVerdicts& v) {
  std::lock_guard lk(impl_->mu);
  auto& series = impl_->nodes[v.node].deviation;
  for (const auto& w : v.worst_by_check) {
    if (auto it = series.find(w.check); it != series.end()) {
      impl_->deviation.Remove(it->second);
      series.erase(it);
    }
    if (w.baseline.empty()) continue;  // no baseline had data: nothing to plot
    auto& g = impl_->deviation.Add({{"node", v.node},
                                    {"sku", v.sku},
                                    {"check", w.check},
                                    {"measurement", w.measurement},
                                    {"unit", w.unit_id},
                                    {"baseline", w.baseline}});
    g.Set(w.deviation);
    series[w.check] = &g;
  }
}

}  // namespace vigil::drainer
