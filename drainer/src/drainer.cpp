// The public Drainer: every call goes to the core (drainer_core.h), which holds the state, the
// locks and the threads.
#include "vigil/drainer/drainer.h"

#include <nlohmann/json.hpp>

#include "drainer_core.h"

namespace vigil::drainer {

Drainer::Drainer(DrainerConfig cfg, std::shared_ptr<slurm::SlurmApi> slurm,
                 std::shared_ptr<kube::KubeApi> kube, const Clock& clock,
                 std::shared_ptr<WebhookPoster> webhook)
    : core_(std::make_unique<DrainerCore>(std::move(cfg), std::move(slurm), std::move(kube), clock,
                                          std::move(webhook))) {}
Drainer::~Drainer() = default;

VoidResult Drainer::open() { return core_->open(); }
bool Drainer::ready() const { return core_->ready(); }
void Drainer::start() { core_->start(); }
void Drainer::stop() { core_->stop(); }
Result<IngestOutcome> Drainer::ingest(const std::vector<NodeReport>& reports,
                                      std::vector<nlohmann::json>* received) {
  return core_->ingest(reports, received);
}
Result<int> Drainer::ingest_dir(const std::string& dir) { return core_->ingest_dir(dir); }
std::vector<ReportDecision> Drainer::decide_now(const std::vector<NodeReport>& reports) {
  return core_->decide_now(reports);
}
SharedDrainPolicy Drainer::shared_policy() const { return core_->shared_policy(); }
int Drainer::process_pending() { return core_->process_pending(); }
int Drainer::run_sink_once(SinkKind k) { return core_->run_sink_once(k); }
int Drainer::run_slurm_sink_once() { return core_->run_sink_once(SinkKind::kSlurm); }
int Drainer::run_kube_sink_once() { return core_->run_sink_once(SinkKind::kKubernetes); }
int Drainer::tick() { return core_->tick(); }
VoidResult Drainer::snapshot_now() { return core_->snapshot_now(); }
Result<std::string> Drainer::resume(const std::string& node) { return core_->resume(node); }
VoidResult Drainer::reset_breaker() { return core_->reset_breaker(); }
std::vector<NodeRecord> Drainer::nodes() const { return core_->nodes(); }
nlohmann::json Drainer::nodes_view() const { return core_->nodes_view(); }
std::optional<NodeRecord> Drainer::node(const std::string& name) const { return core_->node(name); }
BreakerState Drainer::breaker() const { return core_->breaker(); }
bool Drainer::journal_failed() const { return core_->journal_failed(); }

std::vector<ClassSummary> Drainer::hardware_classes() const { return core_->hardware_classes(); }
std::vector<RecheckDue> Drainer::rechecks_due() { return core_->rechecks_due(); }

std::vector<detect::HealthyFigures> Drainer::healthy_figures(const std::string& sku) const {
  return core_->healthy_figures(sku);
}
size_t Drainer::pending(SinkKind sink) const { return core_->pending(sink); }
size_t Drainer::undecided() const { return core_->undecided(); }
std::vector<Intent> Drainer::pending_intents() const { return core_->pending_intents(); }
Metrics& Drainer::metrics() { return core_->metrics(); }
const DrainerConfig& Drainer::config() const { return core_->config(); }
std::shared_ptr<slurm::SlurmApi> Drainer::slurm_api() const { return core_->slurm_api(); }
const Clock& Drainer::clock() const { return core_->clock(); }
std::string Drainer::metrics_text() { return core_->metrics_text(); }

}  // namespace vigil::drainer
