#include "slurm_view_cache.h"

namespace vigil::drainer {

Result<std::shared_ptr<const SlurmView>> SlurmViewCache::read(bool publish) {
  uint64_t gen = 0;
  int64_t started = 0;
  {
    std::lock_guard lk(mu_);
    gen = gen_;
    started = clock_.now_unix();
  }
  VIGIL_TRY(auto nodes, slurm_->load_nodes());
  auto view = std::make_shared<SlurmView>();
  for (auto& n : nodes) {
    std::string name = n.name;
    view->emplace(std::move(name), std::move(n));
  }
  std::lock_guard lk(mu_);
  // Not if the sink acted while this read was under way: the table may predate its RPCs.
  if (publish && gen == gen_) {
    view_ = view;
    at_ = started;
  }
  return std::shared_ptr<const SlurmView>(std::move(view));
}

Result<std::shared_ptr<const SlurmView>> SlurmViewCache::read_named(
    const std::vector<std::string>& nodes) {
  VIGIL_TRY(auto infos, slurm_->load_nodes_named(nodes));
  auto view = std::make_shared<SlurmView>();
  for (auto& n : infos) {
    std::string name = n.name;
    view->emplace(std::move(name), std::move(n));
  }
  return std::shared_ptr<const SlurmView>(std::move(view));
}

void SlurmViewCache::invalidate() {
  std::lock_guard lk(mu_);
  ++gen_;
  view_.reset();
}

std::shared_ptr<const SlurmView> SlurmViewCache::get(bool fresh) {
  if (!slurm_) return std::make_shared<const SlurmView>();
  if (!fresh && max_age_s_ > 0) {
    std::lock_guard lk(mu_);
    if (view_ && clock_.now_unix() - at_ <= max_age_s_) return view_;
  }
  auto view = read(true);
  if (!view.ok()) return std::make_shared<const SlurmView>();  // unknown: the sink re-checks
  return view.value();
}

}  // namespace vigil::drainer
