// Hostlist compression (the node_names of every drain/resume RPC): for any set of valid node
// names, to_hostlist() must expand, through libslurm's own hostlist parser, to exactly that set.
#include <slurm/slurm.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <vector>

#include "fuzz_support.h"
#include "vigil/report/report.h"
#include "vigil/slurm/slurm_api.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::set<std::string> names;
  const auto text = vigil::fuzz::as_text(data, size);
  size_t start = 0;
  while (start <= text.size() && names.size() < 64) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string n(text.substr(start, nl - start));
    if (!vigil::node_name_problem(n)) names.insert(n);
    start = nl + 1;
  }
  if (names.empty()) return 0;
  const std::string expr =
      vigil::slurm::to_hostlist(std::vector<std::string>(names.begin(), names.end()));
  std::set<std::string> back;
  hostlist_t hl = slurm_hostlist_create(expr.c_str());
  if (!hl) vigil::fuzz::broken("libslurm cannot parse '" + expr + "'");
  while (char* h = slurm_hostlist_shift(hl)) {
    back.insert(h);
    std::free(h);
  }
  slurm_hostlist_destroy(hl);
  if (back != names) vigil::fuzz::broken("'" + expr + "' does not expand to the names given");
  return 0;
}
