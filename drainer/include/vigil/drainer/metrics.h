#pragma once
// The drainer's metrics: not a sink, an observer of decisions and sink outcomes (drainer.h).
// Every metric Vigil exports is declared once in kMetricTable (metrics.cpp)
// with exactly the names in docs/drainer.md; /metrics serialises the registry in the
// Prometheus text format (prometheus-cpp TextSerializer, served by the drainer's libmicrohttpd
// listener, http_server.cpp).
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/detect/detect.h"
#include "vigil/drainer/intent.h"
#include "vigil/drainer/policy.h"
#include "vigil/report/report.h"

namespace prometheus {
class Registry;
}

namespace vigil::drainer {

struct MetricDesc {
  std::string_view name;
  std::string_view type;  // "gauge" | "counter" | "histogram"
  std::string_view help;
  std::string_view labels;  // comma separated, documentation only
};
const std::vector<MetricDesc>& metric_table();

class Metrics {
 public:
  Metrics();
  ~Metrics();

  void on_ingest(std::string_view outcome, double n = 1);  // accepted|duplicate|invalid|...
  // auth mode munge: a request refused, by reason (forged_origin, replayed, ...).
  void on_rejected(std::string_view reason);
  // Declares the reason series up front so they read 0 before the first refusal.
  void declare_rejected(const std::vector<std::string>& reasons);
  // Replaces the node's per-check series with those of `report` (null: keep them).
  void on_node(const NodeRecord& s, const NodeReport* report);
  // vigil_actions_total{action, sink, outcome}: the labels are the journal's spellings.
  enum class Outcome { kOk, kError, kSkipped, kDryRun };
  static constexpr EnumName<Outcome> kOutcomeNames[] = {{Outcome::kOk, "ok"},
                                                        {Outcome::kError, "error"},
                                                        {Outcome::kSkipped, "skipped"},
                                                        {Outcome::kDryRun, "dry_run"}};
  static std::string_view outcome_name(Outcome o) { return name_of(kOutcomeNames, o, "error"); }
  void on_action(IntentAction action, SinkKind sink, Outcome outcome, double n = 1);
  void on_given_up(std::string_view sink, double n = 1);  // vigil_sink_given_up_total
  void set_pending(std::string_view sink, double n);
  void set_breaker_open(bool open);
  void set_report_age(const std::string& node, double age_s);
  // The repair ladder: a step taken (reboot, rebooted, repaired, replace), and nodes per stage.
  void on_repair_step(std::string_view step);
  void set_repair_nodes(const std::map<RepairStage, int>& stages);
  // The qualify gate: nodes it holds now, by cause (new, repaired).
  void set_qualifying(const std::map<std::string, int>& by_cause);
  // Reliability figures (NVSentinel design 044's histograms): a Vigil drain ended (resumed by
  // Vigil or an operator, or lifted by someone) after `held_s`, for `cause` (the first check that
  // drove it, "qualify" for the gate's hold); and a new drain `since_last_s` after the node's
  // previous one.
  void on_drain_ended(std::string_view cause, double held_s);
  void on_incident(double since_last_s);
  // vigil_measurement_deviation_ratio: the worst verdict of each judged check of the node.
  void on_verdicts(const detect::ReportVerdicts& v);

  std::string serialize() const;  // Prometheus text exposition format

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vigil::drainer
