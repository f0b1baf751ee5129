#include "cuda/cuda_labels.h"

#include <algorithm>
#include <cctype>

namespace vigil::cuda_probe {

std::string normal_bus_id(const std::string& id) {
  const std::size_t colon = id.find(':');
  if (colon == std::string::npos || id.find(':', colon + 1) == std::string::npos) return "";
  std::size_t start = 0;
  while (start + 1 < colon && id[start] == '0') ++start;  // domain without leading zeros
  std::string out = id.substr(start);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

int CudaLabels::ordinal_of(int l) const {
  const auto it = std::find(label.begin(), label.end(), l);
  return it == label.end() ? -1 : static_cast<int>(it - label.begin());
}

CudaLabels cuda_labels(const std::vector<std::string>& nvml_bus_ids,
                       const std::vector<std::string>& cuda_bus_ids) {
  CudaLabels out;
  out.matched = !cuda_bus_ids.empty();
  for (const std::string& cuda : cuda_bus_ids) {
    const std::string want = normal_bus_id(cuda);
    int found = -1;
    for (std::size_t n = 0; n < nvml_bus_ids.size() && !want.empty(); ++n)
      if (normal_bus_id(nvml_bus_ids[n]) == want) found = static_cast<int>(n);
    if (found < 0 || std::find(out.label.begin(), out.label.end(), found) != out.label.end())
      out.matched = false;
    out.label.push_back(found);
  }
  if (!out.matched)
    for (std::size_t k = 0; k < out.label.size(); ++k) out.label[k] = static_cast<int>(k);
  return out;
}

}  // namespace vigil::cuda_probe
