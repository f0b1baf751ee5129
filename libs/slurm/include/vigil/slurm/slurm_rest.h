#pragma once
// The slurmrestd backend: the same SlurmApi and SlurmJobReader as the libslurm client, over
// Slurm's REST API with JWT authentication (docs/slurm-compat.md). For clusters whose slurmctld
// is newer than the libslurm Vigil was built with, or where only slurmrestd is reachable
// (Soperator, Slinky).
//
// The API version is chosen from what the server offers (its OpenAPI document): the newest
// version of Slurm 24.11's (v0.0.42, v0.0.41, v0.0.40), else the newest of v0.0.44 / v0.0.43
// (Slurm 25.x, written from SchedMD's documentation; tested against 26.05's slurmrestd only).
// slurmrestd of Slurm 22.05 (v0.0.38) cannot update nodes: such a server is refused with an
// error that says to use the libslurm backend.
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "vigil/base/result.h"
#include "vigil/slurm/slurm_api.h"
#include "vigil/slurm/slurm_jobs.h"

namespace vigil::slurm {

struct RestSettings {
  std::string url;          // slurmrestd base URL, http://host:port or https://host:port
  std::string api_version;  // "v0.0.41"; empty: chosen from what the server offers
  std::string user;         // X-SLURM-USER-NAME; empty: the user the token was issued for
  // Where the JWT comes from, first match wins:
  std::string token_file;  // a file holding the token (re-read when it changes: rotated secrets)
  std::vector<std::string> token_command;  // e.g. {"scontrol", "token", "lifespan=3600"}; run
                                           // at first use and again when a token is rejected
  // Neither: the SLURM_JWT environment variable, as Slurm's own clients use it.
  int timeout_ms = 10000;
};

// Validates the settings (URL scheme, api_version spelling, a token source); the server is first
// contacted on the first call.
Result<std::unique_ptr<SlurmApi>> make_rest_api(const RestSettings& settings);
Result<std::unique_ptr<SlurmJobReader>> make_rest_job_reader(const RestSettings& settings);

// The versions the REST backend speaks, in the order it prefers them (24.11's first).
const std::vector<std::string>& rest_api_versions();

// The API versions a slurmrestd serves: those whose node path ("/slurm/v0.0.42/nodes/") its
// OpenAPI document (the body of GET /openapi/v3) lists. nullopt when the body is not one.
std::optional<std::set<std::string>> served_api_versions(const std::string& openapi_body);

}  // namespace vigil::slurm
