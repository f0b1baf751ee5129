// to_hostlist(): compresses node names into a Slurm hostlist expression with libslurm's own
// hostlist code, so the string we send is exactly what slurmctld parses back.
#include <slurm/slurm.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "vigil/slurm/slurm_api.h"

namespace vigil::slurm {
namespace {

// "gpu-10" -> {"gpu-", 10, 2}. Names without a numeric suffix keep an empty digit part.
struct NameKey {
  std::string_view prefix;
  std::string_view digits;
};

NameKey split_name(std::string_view name) {
  size_t i = name.size();
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
  return {name.substr(0, i), name.substr(i)};
}

// Orders names so that numerically consecutive hosts are adjacent: libslurm only merges a pushed
// host into the range pushed just before it.
bool natural_less(std::string_view a, std::string_view b) {
  NameKey ka = split_name(a), kb = split_name(b);
  if (ka.prefix != kb.prefix) return ka.prefix < kb.prefix;
  // Strip leading zeros for the numeric comparison; fall back to width, then text.
  auto strip = [](std::string_view d) {
    size_t z = 0;
    while (z + 1 < d.size() && d[z] == '0') ++z;
    return d.substr(z);
  };
  std::string_view na = strip(ka.digits), nb = strip(kb.digits);
  return std::make_tuple(na.size(), na, ka.digits.size()) <
         std::make_tuple(nb.size(), nb, kb.digits.size());
}

struct HostlistDeleter {
  void operator()(hostlist* hl) const { slurm_hostlist_destroy(hl); }
};

}  // namespace

std::string to_hostlist(const std::vector<std::string>& nodes) {
  if (nodes.empty()) return "";
  std::vector<std::string> sorted = nodes;
  std::sort(sorted.begin(), sorted.end(),
            [](const std::string& a, const std::string& b) { return natural_less(a, b); });
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());

  std::unique_ptr<hostlist, HostlistDeleter> hl(slurm_hostlist_create(nullptr));
  if (!hl) return "";
  for (const std::string& n : sorted) {
    // push_host takes the name literally (no range parsing), so odd names cannot expand.
    slurm_hostlist_push_host(hl.get(), n.c_str());
  }
  char* s = slurm_hostlist_ranged_string_malloc(hl.get());
  if (s == nullptr) return "";
  std::string out(s);
  free(s);  // NOLINT(cppcoreguidelines-no-malloc): libslurm documents free() for this buffer
  return out;
}

}  // namespace vigil::slurm
