// What the node table does not say by itself, shared by every backend: a node's GPU count from
// its Gres string, as slurmctld prints it (slurm.conf(5) "Gres": name[:type]:count per entry,
// comma separated; scontrol and libslurm append the sockets as "(S:0-1)" or "(S:0,2)", whose
// commas are not entry separators), and which nodes a Vigil hold reservation holds.
#include <charconv>
#include <regex>
#include <set>
#include <string>
#include <string_view>

#include "vigil/slurm/slurm_api.h"

namespace vigil::slurm {

int gpu_count(const std::string& gres) {
  std::string plain;  // gres without the parenthesised socket lists
  int depth = 0;
  for (char c : gres) {
    if (c == '(') ++depth;
    if (depth == 0) plain += c;
    if (c == ')' && depth > 0) --depth;
  }
  int total = 0;
  std::string_view rest(plain);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view entry = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t colon = entry.find(':');
    if (entry.substr(0, colon) != "gpu") continue;
    // "gpu" alone counts 1 (slurm.conf(5): the count defaults to one).
    if (colon == std::string_view::npos) {
      total += 1;
      continue;
    }
    const std::string_view count = entry.substr(entry.rfind(':') + 1);
    int n = 0;
    const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
    if (ec == std::errc() && end == count.data() + count.size()) {
      total += n;
    } else {
      total += 1;  // "gpu:h100": a type without a count, which is one
    }
  }
  return total;
}

int physical_gpu_count(const std::string& gres) {
  static const std::regex kMigProfile("gpu:[^:,]*[0-9]+g\\.[0-9]+gb");
  if (std::regex_search(gres, kMigProfile)) return 0;
  return gpu_count(gres);
}

std::vector<std::string> split_feature_list(const std::string& list) {
  std::vector<std::string> out;
  if (list == "(null)") return out;
  std::string cur;
  for (char c : list + ",") {
    if (c != ',') {
      cur += c;
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  return out;
}

void mark_holds(std::vector<SlurmNodeInfo>& nodes, const std::vector<std::string>& reservations) {
  std::set<std::string> names(reservations.begin(), reservations.end());
  for (SlurmNodeInfo& n : nodes) n.vigil_hold = names.count(kHoldReservationPrefix + n.name) > 0;
}

}  // namespace vigil::slurm
