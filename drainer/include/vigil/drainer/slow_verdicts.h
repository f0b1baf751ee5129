#pragma once
// The fail-slow verdicts (vigil::detect) folded into the report the policy engine decides on.
// A slow figure turns its check's `pass`/`warn` into `warn` or `fail`, with the verdict's
// message (which names its baseline) and a fault code the policy counts on its own:
// VIGIL-SLOW-CONFIRMED (the checker's repeats were slow too) drains after
// detection.confirmed_drain_after reports, VIGIL-SLOW after detection.unconfirmed_drain_after.
// `error` and `skipped` results are never touched: a check that could not run proves nothing.
// A check that failed on its own keeps its fault code unless the slow code drains it sooner
// under `policy`: a fatal finding (drain after one report, the rule the hooks share) is never
// weakened into a slow figure that waits for a second report.
#include "vigil/detect/detect.h"
#include "vigil/drainer/config.h"
#include "vigil/report/report.h"

namespace vigil::drainer {

void fold_verdicts(NodeReport& report, const detect::ReportVerdicts& verdicts,
                   const PolicyConfig& policy);

}  // namespace vigil::drainer
