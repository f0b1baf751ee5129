// vigil-allreduce: parses arguments and calls the library (docs/nccl-bench.md).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <string>

#include "vigil/ncclbench/bench_result.h"
#include "vigil/ncclbench/harness.h"
#include "vigil/ncclbench/options.h"

namespace nb = vigil::ncclbench;

int main(int argc, char** argv) {
  nb::BenchOptions opts;
#ifdef VIGIL_NCCLBENCH_HAS_NCCL
  opts.backend = nb::Backend::kNccl;
#endif
  CLI::App app{
      "vigil-allreduce: all_reduce bus bandwidth, nccl-tests compatible output. One MPI rank per "
      "GPU; start with mpirun or srun. Exit codes: 0 ok, 1 wrong results, 2 busbw below "
      "--min-busbw, 3 setup error, 4 runtime error, 5 timeout."};
  std::string minbytes = "32M", maxbytes = "32M", sizes, backend, transport = "nvlink",
              datatype = "float";
  int check = 1;
  double min_busbw = -1;
  app.add_option("-b,--minbytes", minbytes, "smallest message size (K/M/G suffixes, 1024-based)")
      ->capture_default_str();
  app.add_option("-e,--maxbytes", maxbytes, "largest message size")->capture_default_str();
  app.add_option("-f,--stepfactor", opts.step_factor, "multiply the size by this each step")
      ->capture_default_str();
  app.add_option("--sizes", sizes,
                 "comma-separated size list (overrides -b/-e/-f), e.g. 1M,64M,1G");
  app.add_option("-w,--warmup_iters", opts.warmup_iters, "warm-up iterations per size")
      ->capture_default_str();
  app.add_option("-n,--iters", opts.iters, "timed iterations per size")->capture_default_str();
  app.add_option("-c,--check", check, "check results on seeded data (0/1)")->capture_default_str();
  app.add_option("-d,--datatype", datatype, "float or bf16 (bf16: nccl backend only)")
      ->check(CLI::IsMember({"float", "bf16", "bfloat16"}))
      ->capture_default_str();
  app.add_option("--backend", backend, "nccl (GPUs) or host (MPI_Allreduce on host memory)")
      ->check(CLI::IsMember({"nccl", "host"}));
  app.add_option(
         "--transport", transport,
         "nvlink: NCCL defaults; ib: NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 "
         "NCCL_ALGO=Ring so traffic goes through the NICs; fabric: NVLink inside each "
         "node, the network between nodes (NCCL_MNNVL_ENABLE=0); domain: the trays of one NVLink "
         "domain over multi-node NVLink and NVLS (NCCL_MNNVL_ENABLE=1 NCCL_NVLS_ENABLE=1)")
      ->check(CLI::IsMember({"nvlink", "ib", "fabric", "domain"}))
      ->capture_default_str();
  app.add_option("--json", opts.json_path, "write every row and the run metadata to FILE");
  app.add_option("--min-busbw", min_busbw,
                 "exit 2 when the summary busbw (GB/s) is below this value");
  app.add_option("--timeout", opts.timeout_s,
                 "watchdog: end the run with 'timeout after S s' (exit 5) if it takes longer "
                 "than S seconds; 0 = off")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : nb::kExitSetupError;
  }

  auto b = nb::parse_size(minbytes);
  auto e = nb::parse_size(maxbytes);
  if (!b || !e) {
    std::fprintf(stderr, "vigil-allreduce: bad size in -b/-e (use e.g. 1048576, 64K, 32M, 8G)\n");
    return nb::kExitSetupError;
  }
  opts.min_bytes = *b;
  opts.max_bytes = *e;
  if (!sizes.empty()) {
    auto list = nb::parse_size_list(sizes);
    if (!list) {
      std::fprintf(stderr, "vigil-allreduce: bad --sizes list (use e.g. 1M,64M,1G)\n");
      return nb::kExitSetupError;
    }
    opts.sizes = *list;
  }
  if (!backend.empty()) opts.backend = backend == "nccl" ? nb::Backend::kNccl : nb::Backend::kHost;
  opts.transport = value_of(nb::kTransportNames, transport).value_or(nb::Transport::kNvlink);
  opts.datatype = datatype == "float" ? nb::DataType::kFloat : nb::DataType::kBf16;
  opts.check = check != 0;
  if (min_busbw >= 0) opts.min_busbw_gb_s = min_busbw;
  return nb::allreduce_main(opts);
}
