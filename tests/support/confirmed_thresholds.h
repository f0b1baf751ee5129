#pragma once
// A copy of the shipped SKU thresholds with every `unconfirmed: true` removed: what a site has
// after `vigil-drainer calibrate` confirmed its floors (docs/thresholds.md, "Calibration"). For
// tests whose subject is what happens once a performance floor fails; the shipped floors only
// warn until calibrated.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace vigil::testing {

// Writes the copy into `dir` (created) and returns `dir`.
inline std::string confirmed_thresholds(const std::string& shipped_dir, const std::string& dir) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  const std::string flag = ", unconfirmed: true";
  for (const auto& e : fs::directory_iterator(shipped_dir)) {
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    std::string yaml = text.str();
    for (std::size_t at; (at = yaml.find(flag)) != std::string::npos;) yaml.erase(at, flag.size());
    std::ofstream(dir + "/" + e.path().filename().string()) << yaml;
  }
  return dir;
}

}  // namespace vigil::testing
