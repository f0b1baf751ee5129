// to_hostlist(): compresses node names into a Slurm hostlist expression with libslurm's own
// hostlist code, so the string we send is exactly what slurmctld parses back.
#include "hostlist.h"

#include <slurm/slurm.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "slurm_compat.h"
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
  // slurm_hostlist_ranged_string() exists in every release (the _malloc variant left in 23.11);
  // it returns -1 when the buffer is too small.
  std::string out(4096, '\0');
  for (;;) {
    const ssize_t n = slurm_hostlist_ranged_string(hl.get(), out.size(), out.data());
    if (n >= 0 && static_cast<size_t>(n) < out.size()) {
      out.resize(static_cast<size_t>(n));
      return out;
    }
    if (out.size() > (64u << 20)) return "";
    out.resize(out.size() * 4);
  }
}

std::vector<std::string> expand_hostlist(const char* expr) {
  std::vector<std::string> out;
  if (expr == nullptr || *expr == '\0') return out;
  compat::Hostlist hl = slurm_hostlist_create(expr);
  if (hl == nullptr) return out;
  while (char* host = slurm_hostlist_shift(hl)) {
    out.emplace_back(host);
    std::free(host);  // NOLINT(cppcoreguidelines-no-malloc): libslurm's buffer
  }
  slurm_hostlist_destroy(hl);
  return out;
}

}  // namespace vigil::slurm
