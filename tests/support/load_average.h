#pragma once
// /proc/loadavg as one line, printed beside the figures of a benchmark run on a shared machine.
#include <fstream>
#include <string>

namespace vigil::testing {

inline std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string l;
  std::getline(in, l);
  return l;
}

}  // namespace vigil::testing
