#include "vigil/drainer/slow_verdicts.h"

#include "vigil/drainer/config.h"

namespace vigil::drainer {

void fold_verdicts(NodeReport& report, const detect::ReportVerdicts& verdicts,
                   const PolicyConfig& policy) {
  for (auto& c : report.checks) {
    if (c.status == Status::kError || c.status == Status::kSkipped) continue;
    const detect::Verdict* w = verdicts.worst_for(c.check);
    if (!w || w->status == Status::kPass) continue;
    if (w->status == Status::kFail) {
      const std::string code(w->confirmed ? kSlowConfirmedFaultCode : kSlowFaultCode);
      if (c.status == Status::kFail && policy.for_check(c.check, c.fault_code).drain_after <=
                                           policy.for_check(c.check, code).drain_after)
        continue;  // the check's own finding drains as soon or sooner: it stands as reported
      c.status = Status::kFail;
      c.fault_code = code;
      c.message = w->message;
      if (w->confirmed) c.message += ", confirmed by " + std::to_string(w->repeats) + " repeats";
    } else if (c.status == Status::kPass) {
      c.status = Status::kWarn;
      c.message = w->message;
    }
  }
}

}  // namespace vigil::drainer
