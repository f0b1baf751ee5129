#include "vigil/ncclbench/text_format.h"

#include <cstdio>
#include <string>

namespace vigil::ncclbench {
namespace {

std::string printf_string(const char* fmt, auto... args) {
  char buf[512];
  int n = std::snprintf(buf, sizeof buf, fmt, args...);
  if (n < 0) return {};
  return std::string(buf, static_cast<std::size_t>(n) < sizeof buf ? n : sizeof buf - 1);
}

std::string format_point(const BenchPoint& p) {
  std::string wrong = p.wrong ? std::to_string(*p.wrong) : "N/A";
  return printf_string("  %7s  %6.2f  %6.2f  %6s", format_time_us(p.time_us).c_str(), p.algbw_gb_s,
                       p.busbw_gb_s, wrong.c_str());
}

}  // namespace

std::string format_time_us(double us) {
  if (us >= 100000.0) return printf_string("%7.0f", us);
  if (us >= 10000.0) return printf_string("%7.1f", us);
  return printf_string("%7.2f", us);
}

std::string format_header(const BenchRun& run, const std::vector<std::string>& device_lines,
                          std::uint64_t min_bytes, std::uint64_t max_bytes, int step_factor) {
  std::string s;
  s += "# " + run.tool + " " + run.tool_version + " backend " + run.backend + " transport " +
       run.transport;
  if (!run.nccl_version.empty()) s += " nccl " + run.nccl_version;
  s += "\n";
  s += "# Collective test starting: " + run.collective + "_perf\n";
  s += printf_string(
      "# nThread 1 nGpus 1 minBytes %llu maxBytes %llu step: %d(factor) warmup iters: %d "
      "iters: %d agg iters: 1 validation: %d graph: 0\n",
      static_cast<unsigned long long>(min_bytes), static_cast<unsigned long long>(max_bytes),
      step_factor, run.warmup_iters.value_or(0), run.iters.value_or(0),
      run.check.value_or(false) ? 1 : 0);
  s += "#\n# Using devices\n";
  for (const auto& l : device_lines) s += "#  " + l + "\n";
  s += "#\n";
  s += printf_string(
      "# Timing: each row is the slowest of %d ranks (max time per op); algbw = bytes/1e9/s, "
      "busbw = algbw * 2(n-1)/n\n",
      run.ranks.value_or(1));
  s += "#\n";
  s += "#                                                              out-of-place            "
       "           in-place          \n";
  s += "#       size         count      type   redop    root     time   algbw   busbw  #wrong "
       "    time   algbw   busbw  #wrong \n";
  s += "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)        "
       "     (us)  (GB/s)  (GB/s)         \n";
  return s;
}

std::string format_row(const BenchRow& row) {
  std::string s = printf_string("%12llu  %12llu  %8s  %6s  %6d",
                                static_cast<unsigned long long>(row.size_bytes),
                                static_cast<unsigned long long>(row.count), row.type.c_str(),
                                row.redop.c_str(), row.root.value_or(-1));
  s += format_point(row.out_of_place);
  s += format_point(row.in_place);
  s += "\n";
  return s;
}

std::string format_footer(const BenchRun& run) {
  std::string s;
  const std::int64_t oob = run.out_of_bounds.value_or(run.total_wrong());
  s += printf_string("# Out of bounds values : %lld %s\n", static_cast<long long>(oob),
                     oob == 0 ? "OK" : "FAILED");
  s += printf_string("# Avg bus bandwidth    : %g \n", run.summary_busbw());
  s += "#\n";
  s += printf_string("# Summary busbw (mean over rows, slowest rank per row) : %.2f GB/s",
                     run.summary_busbw());
  if (run.min_busbw_gb_s)
    s += printf_string(" (minimum %.2f GB/s: %s)", *run.min_busbw_gb_s,
                       run.summary_busbw() >= *run.min_busbw_gb_s ? "OK" : "BELOW");
  s += "\n";
  s += "# Result : " + std::string(to_string(run.outcome));
  if (!run.message.empty()) s += " (" + run.message + ")";
  s += "\n#\n";
  return s;
}

}  // namespace vigil::ncclbench
