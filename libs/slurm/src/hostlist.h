#pragma once
// Hostlist expansion with libslurm's own parser ("gpu-[0-1]" -> gpu-0, gpu-1), shared by the
// libslurm and slurmrestd job readers. Compression is to_hostlist() in vigil/slurm/slurm_api.h.
#include <string>
#include <vector>

namespace vigil::slurm {

// Empty for a null or empty expression or one libslurm cannot parse.
std::vector<std::string> expand_hostlist(const char* expr);

}  // namespace vigil::slurm
