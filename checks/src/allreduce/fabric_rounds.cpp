#include "allreduce/fabric_rounds.h"

#include "allreduce/launch_files.h"
#include "vigil/base/process.h"
#include "vigil/base/strings.h"
#include "vigil/ncclbench/bench_result.h"
#include "vigil/ncclbench/parser.h"

namespace vigil {

namespace nb = ncclbench;

namespace {

// The pair's busbw, or why there is none: vigil-allreduce's JSON, or the text table of a site's
// all_reduce_perf. A figure measured over another path than the job's (sockets in a fabric job,
// the network in an NVLink domain job: wrong_path) is no figure: counted as slow, it would blame
// a node for a setting.
Result<double> pair_busbw(const AllreduceSpec& spec, const LaunchResult& lr,
                          const std::string& json_path, bool site) {
  if (lr.timed_out) return Error{"timed out", "mpirun"};
  auto run =
      site ? nb::parse_nccl_tests_text(lr.out) : nb::parse_bench_json(read_launch_file(json_path));
  if (!run.ok()) {
    const std::string tail = tail_lines(lr.err.empty() ? lr.out : lr.err, 2);
    return Error{"exited " + std::to_string(shell_status(lr)) + " with no result" +
                     (tail.empty() ? "" : ": " + tail),
                 "vigil-allreduce"};
  }
  if (run->total_wrong() > 0) return Error{"wrong values in the data check", "all_reduce"};
  if (run->outcome != nb::Outcome::kOk && run->outcome != nb::Outcome::kBelowMinBusbw)
    return Error{std::string(nb::to_string(run->outcome)) + ": " + run->message, "vigil-allreduce"};
  if (auto wrong = wrong_path(spec, *run)) return Error{wrong->why, "NCCL"};
  return run->summary_busbw();
}

}  // namespace

FabricRoundsResult run_fabric_rounds(const CheckContext& ctx, AllreduceSpec spec,
                                     const FabricRoundsPlan& plan) {
  FabricRoundsResult out;
  const std::string binary = find_allreduce_binary(ctx);
  const LaunchDir dir;
  if (!dir.ok()) {
    out.job_error = "cannot create a temporary directory under /tmp";
    out.verdict = detect::localize(plan.nodes, {}, plan.leaf_of, plan.judge);
    return out;
  }
  const auto rounds =
      detect::plan_rounds(static_cast<int>(plan.nodes.size()), plan.rounds, plan.seed);
  spec.ranks = 2 * plan.ranks_per_node;
  spec.map_by_node = true;
  for (std::size_t r = 0; r < rounds.size(); ++r) {
    std::vector<std::vector<std::string>> argvs;
    std::vector<std::string> json_paths;
    for (const auto& [a, b] : rounds[r]) {
      spec.hosts = {plan.nodes[static_cast<std::size_t>(a)],
                    plan.nodes[static_cast<std::size_t>(b)]};
      json_paths.push_back(dir.file("r" + std::to_string(r) + "-" + std::to_string(a) + "-" +
                                    std::to_string(b) + ".json"));
      argvs.push_back(allreduce_command(ctx, spec, binary, json_paths.back()));
    }
    LaunchOptions lo;
    lo.timeout = spec.timeout + std::chrono::seconds(15);  // past vigil-allreduce's own watchdog
    const auto results = run_commands(argvs, static_cast<int>(argvs.size()), lo);
    for (std::size_t i = 0; i < results.size(); ++i) {
      const auto& [a, b] = rounds[r][i];
      detect::PairFigure p{plan.nodes[static_cast<std::size_t>(a)],
                           plan.nodes[static_cast<std::size_t>(b)],
                           static_cast<int>(r),
                           {}};
      Result<double> busbw =
          pair_busbw(spec, results[i], json_paths[i], is_nccl_tests_binary(binary));
      if (busbw.ok()) {
        p.busbw = *busbw;
      } else {
        out.pair_errors[out.pairs.size()] = busbw.error().to_string();
      }
      out.pairs.push_back(std::move(p));
    }
  }
  out.verdict = detect::localize(plan.nodes, out.pairs, plan.leaf_of, plan.judge);
  return out;
}

}  // namespace vigil
