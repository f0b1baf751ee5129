#pragma once
// The Slurm sink: re-reads Slurm's node table right before acting, re-judges ownership on it
// (never drains a node that is unknown, DOWN/FAIL/MAINT or drained by another owner; never
// lifts a drain that is not vigil's, never reboots a node that is not idle and Vigil's), and
// issues one drain RPC per reason plus one UNDRAIN and one reboot per reason.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sink.h"
#include "slurm_view_cache.h"
#include "vigil/slurm/slurm_api.h"

namespace vigil::drainer {

class SlurmSink final : public Sink {
 public:
  // Everything but `slurm` must outlive the sink.
  SlurmSink(std::shared_ptr<slurm::SlurmApi> slurm, SlurmViewCache& views);

  SinkResult apply(const std::vector<Intent>& batch) override;

 private:
  // The RPCs a batch needs: drains grouped by reason, resumes in one call.
  struct Rpcs {
    std::map<std::string, std::vector<const Intent*>> drains;
    std::vector<const Intent*> resumes;
    std::map<std::string, std::vector<const Intent*>> reboots;
  };
  SinkResult load_failed(const std::vector<Intent>& batch, const Error& e);
  // The intent's outcome judged on Slurm's fresh table, or nullopt when it needs an RPC (then
  // added to `rpcs`).
  std::optional<IntentOutcome> judge(const Intent& i, const SlurmView& view, Rpcs& rpcs);
  std::optional<IntentOutcome> judge_drain(const Intent& i, const slurm::SlurmNodeInfo* n,
                                           Rpcs& rpcs);
  std::optional<IntentOutcome> judge_resume(const Intent& i, const slurm::SlurmNodeInfo* n,
                                            Rpcs& rpcs);
  std::optional<IntentOutcome> judge_reboot(const Intent& i, const slurm::SlurmNodeInfo* n,
                                            Rpcs& rpcs);
  std::optional<IntentOutcome> judge_relabel(const Intent& i, const slurm::SlurmNodeInfo* n,
                                             Rpcs& rpcs);
  std::optional<IntentOutcome> judge_redrain(const Intent& i, const slurm::SlurmNodeInfo* n,
                                             Rpcs& rpcs);
  bool reboot(const std::vector<const Intent*>& batch, const std::string& reason, SinkResult& out);
  // One RPC for `batch`; appends its outcomes. Returns whether it went through.
  bool call(IntentAction action, const std::vector<const Intent*>& batch, const std::string& reason,
            SinkResult& out);

  std::shared_ptr<slurm::SlurmApi> slurm_;
  SlurmViewCache& views_;
};

}  // namespace vigil::drainer
