// fleet_reports: writes the NodeReports of the project's simulated H100 fleet (fleet_model.h)
// as vigil-drainer input, one JSON array per cycle, for the calibration test
// (tests/drainer/calibrate_e2e_test.sh) and for trying `vigil-drainer calibrate` by hand.
//   fleet_reports --out DIR [--nodes N] [--cycles N] [--seed N] [--slow-nodes N]
// --slow-nodes: that many nodes carry a GEMM fault (one GPU 10% slow) from their first report,
// so the calibration data is a real fleet's, not a clean one.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "fleet_model.h"
#include "vigil/report/report.h"

using namespace vigil::detect::sim;

int main(int argc, char** argv) {
  std::string out;
  int nodes = 30, cycles = 8, slow = 2;
  std::uint64_t seed = 7;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--out")
      out = next();
    else if (a == "--nodes")
      nodes = std::atoi(next().c_str());
    else if (a == "--cycles")
      cycles = std::atoi(next().c_str());
    else if (a == "--seed")
      seed = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--slow-nodes")
      slow = std::atoi(next().c_str());
    else {
      std::fprintf(stderr, "unknown flag %s (flags: --out --nodes --cycles --seed --slow-nodes)\n",
                   a.c_str());
      return 2;
    }
  }
  if (out.empty() || nodes < 1 || cycles < 1 || slow < 0 || slow > nodes) {
    std::fprintf(stderr,
                 "need --out DIR, --nodes >= 1, --cycles >= 1, 0 <= --slow-nodes <= nodes\n");
    return 2;
  }
  std::filesystem::create_directories(out);
  const vigil::detect::DetectConfig config = vigil::detect::DetectConfig::defaults();
  FleetModel model(seed, /*dip_rate=*/0.01, figure_models());
  std::vector<SimNode> fleet;
  for (int n = 0; n < nodes; ++n) {
    std::optional<Fault> fault;
    if (n < slow) fault = Fault{FaultKind::kGemm, 0.10, 0, 3};
    fleet.push_back(model.make_node("gpu-" + std::to_string(n), fault));
  }
  const std::int64_t t0 = 1'795'000'000;  // 2026-11-18
  for (int c = 0; c < cycles; ++c) {
    nlohmann::json batch = nlohmann::json::array();
    for (SimNode& node : fleet)
      batch.push_back(vigil::to_json(model.run(node, c, t0 + c * 3600, config).report));
    std::ofstream(out + "/cycle-" + std::to_string(c) + ".json") << batch.dump() << "\n";
  }
  std::printf("%d nodes x %d cycles written to %s\n", nodes, cycles, out.c_str());
  return 0;
}
