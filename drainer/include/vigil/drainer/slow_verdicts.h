#pragma once
// The fail-slow verdicts (vigil::detect) folded into the report the policy engine decides on.
// A slow figure turns its check's `pass`/`warn` into `warn` or `fail`, with the verdict's
// message (which names its baseline) and a fault code the policy counts on its own:
// VIGIL-SLOW-CONFIRMED (the checker's repeats were slow too) drains after
// detection.confirmed_drain_after reports, VIGIL-SLOW after detection.unconfirmed_drain_after.
// `error` and `skipped` results are never touched: a check that could not run proves nothing.
#include "vigil/detect/detect.h"
#include "vigil/report/report.h"

namespace vigil::drainer {

void fold_verdicts(NodeReport& report, const detect::ReportVerdicts& verdicts);

}  // namespace vigil::drainer
