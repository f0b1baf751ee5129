#include "vigil/drainer/slow_verdicts.h"

#include "vigil/drainer/config.h"

namespace vigil::drainer {

void fold_verdicts(NodeReport& report, const detect::ReportVerdicts& verdicts) {
  for (auto& c : report.checks) {
    if (c.status == Status::kError || c.status == Status::kSkipped) continue;
    const detect::Verdict* w = verdicts.worst_for(c.check);
    if (!w || w->status == Status::kPass) continue;
    if (w->status == Status::kFail) {
      c.status = Status::kFail;
      c.fault_code = std::string(w->confirmed ? kSlowConfirmedFaultCode : kSlowFaultCode);
      c.message = w->message;
      if (w->confirmed) c.message += ", confirmed by " + std::to_string(w->repeats) + " repeats";
    } else if (c.status == Status::kPass) {
      c.status = Status::kWarn;
      c.message = w->message;
    }
  }
}

}  // namespace vigil::drainer
