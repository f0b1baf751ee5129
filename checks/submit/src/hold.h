#pragma once
// Running a held re-check (plan.h Hold, docs/recheck.md "The hold").
#include <string>
#include <vector>

#include "vigil/base/process.h"
#include "vigil/slurm/slurm_jobs.h"
#include "vigil/submit/plan.h"

namespace vigil::submit {

// The exit status of a re-check whose hold could not be set up (nothing ran; vigil-check's own
// codes are 0..3, and a killed step 124 or 128+N).
inline constexpr int kHoldFailed = 125;

// Holds c.hold's node, runs c.argv inside the allocation (timeout_s), and lets the node go
// again. The node is never left undrained outside the reservation: a step that ran found its
// drain restored first, and a hold that fails before the step drains it again (or, when even
// that fails, keeps the reservation so that no user job can start there).
LaunchResult run_held(const PlannedCommand& c, int timeout_s, const std::string& slurm_conf);

// Holds left by a vigil-submit that was killed mid-way (reservations named kHoldPrefix + node
// with no re-check job of this submitter running): an undrained node is drained ("vigil: recheck
// interrupted") so that it gets its re-check, then the reservation is deleted. One line per hold.
std::vector<std::string> release_stale_holds(const std::vector<slurm::SlurmJobInfo>& jobs,
                                             const SubmitOptions& options,
                                             const std::string& slurm_conf);

}  // namespace vigil::submit
