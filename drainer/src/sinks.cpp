// The sink table (sinks.h). One row per sink, in SinkKind order; a test holds the order.
#include "sinks.h"

#include <algorithm>

#include "kube_sink.h"
#include "slurm_sink.h"
#include "webhook_sink.h"

namespace vigil::drainer {
namespace {

// Slurm: the drains, resumes and reboots a decision asked for (a replace is a drain with the
// "vigil: replace" reason; the GPU reset rung's reasons are relabels of Vigil's own drain). Retried
// until slurmctld answers, never given up (the drain is owed); decisions arriving together go out
// in one RPC per reason.
std::optional<IntentAction> slurm_owed(const NodeEvent& e) {
  switch (e.type) {
    case Action::kDrain:
    case Action::kReplace:
      return IntentAction::kDrain;
    case Action::kResume:
      return IntentAction::kResume;
    case Action::kReboot:
      return IntentAction::kReboot;
    case Action::kRedrain:
      return IntentAction::kRedrain;
    case Action::kResetGpu:
    case Action::kResetPassed:
    case Action::kResetFailed:
      return IntentAction::kRelabel;
    case Action::kNone:
    case Action::kWouldDrain:
    case Action::kWouldResume:
    case Action::kBreakerBlocked:
    case Action::kDrainSkipped:
    case Action::kRebooted:
    case Action::kBreakerOpened:
    case Action::kBreakerClosed:
    case Action::kBreakerReset:
      return std::nullopt;  // nothing to do in Slurm (no default: a new Action must be placed)
  }
  return std::nullopt;
}
LaneSettings slurm_lane(const DrainerConfig& c) {
  return {{c.slurm.retry_initial_ms, c.slurm.retry_max_ms, 0}, c.slurm.batch_window_ms, true};
}
std::unique_ptr<Sink> make_slurm(const SinkDeps& d) {
  return d.slurm ? std::make_unique<SlurmSink>(d.slurm, d.views) : nullptr;
}

// Kubernetes: every decision about a node writes its state there. Given up after 8 attempts;
// the node's next decision annotates again.
std::optional<IntentAction> kube_owed(const NodeEvent& e) {
  if (e.node.empty()) return std::nullopt;  // breaker events
  return IntentAction::kAnnotate;
}
LaneSettings kube_lane(const DrainerConfig&) { return {{500, 30000, 8}, 0, false}; }
std::unique_ptr<Sink> make_kube(const SinkDeps& d) {
  if (!d.kube || !d.cfg.kubernetes.enabled) return nullptr;
  return std::make_unique<KubeSink>(d.kube, d.cfg.kubernetes);
}

// Webhook: every event that is news to a person (not "none": a decision that only refreshed
// the node's state). Given up after webhook.max_attempts.
std::optional<IntentAction> webhook_owed(const NodeEvent& e) {
  if (e.type == Action::kNone) return std::nullopt;
  return IntentAction::kNotify;
}
LaneSettings webhook_lane(const DrainerConfig& c) {
  return {{c.webhook.retry_initial_ms, c.webhook.retry_max_ms, c.webhook.max_attempts}, 0, false};
}
std::unique_ptr<Sink> make_webhook(const SinkDeps& d) {
  if (!d.cfg.webhook.enabled || !d.webhook) return nullptr;
  return std::make_unique<WebhookSink>(d.cfg.webhook, d.webhook);
}

template <IntentAction... A>
bool takes(IntentAction a) {
  return ((a == A) || ...);
}

constexpr SinkSpec kSinks[] = {
    {SinkKind::kSlurm, "slurm",
     takes<IntentAction::kDrain, IntentAction::kResume, IntentAction::kReboot,
           IntentAction::kRelabel, IntentAction::kRedrain>,
     slurm_owed, false, slurm_lane, make_slurm},
    {SinkKind::kKubernetes, "kubernetes", takes<IntentAction::kAnnotate>, kube_owed, false,
     kube_lane, make_kube},
    {SinkKind::kWebhook, "webhook", takes<IntentAction::kNotify>, webhook_owed, true, webhook_lane,
     make_webhook},
};

}  // namespace

std::span<const SinkSpec> sink_specs() { return kSinks; }

const SinkSpec& sink_spec(SinkKind k) { return kSinks[static_cast<size_t>(k)]; }

}  // namespace vigil::drainer
