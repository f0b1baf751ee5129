// Pure planning for vigil-submit: eligibility, caps, fabric pairing and the command lines.
#include "vigil/submit/plan.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <random>
#include <set>
#include <span>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "vigil/report/check_catalog.h"

namespace vigil::submit {

using slurm::SlurmJobInfo;
using slurm::SlurmNodeInfo;

namespace {

bool starts_with(const std::string& s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

bool in_partition(const slurm::SlurmNodeInfo& n, const std::string& partition) {
  return std::find(n.partitions.begin(), n.partitions.end(), partition) != n.partitions.end();
}

// sbatch options every Vigil job carries (node and fabric jobs alike). time_limit: the job's own
// --time, whose length is part of its deadline (SubmitOptions::max_pending_s).
void add_common_sbatch(std::vector<std::string>& argv, const SubmitOptions& o,
                       const std::string& time_limit) {
  argv.push_back("--job-name=" + o.job_name);
  argv.push_back("--comment=vigil:" + o.run_id);
  argv.push_back("--exclusive");
  argv.push_back("--no-requeue");
  if (!o.partition.empty()) argv.push_back("--partition=" + o.partition);
  if (!o.qos.empty()) argv.push_back("--qos=" + o.qos);
  if (!o.account.empty()) argv.push_back("--account=" + o.account);
  if (!o.reservation.empty()) argv.push_back("--reservation=" + o.reservation);
  if (o.max_pending_s > 0) {
    // An unreadable limit was refused before planning (main.cpp); none here gets no deadline.
    if (auto limit = slurm_time_limit_s(time_limit))
      argv.push_back("--deadline=now+" + std::to_string(*limit + o.max_pending_s));
  }
  for (const auto& a : o.extra_sbatch_args) argv.push_back(a);
}

// ",VIGIL_EXPECTED_GPUS=N" for a node whose Gres says how many GPUs it has (vigil-check's
// gpu_count then expects the site's count, not the SKU catalogue's), else "".
std::string expected_gpus_export(const SlurmNodeInfo& node) {
  const int n = slurm::physical_gpu_count(node.gres);
  return n > 0 ? ",VIGIL_EXPECTED_GPUS=" + std::to_string(n) : "";
}

PlannedCommand node_job(const SlurmNodeInfo& node, const SubmitOptions& o) {
  PlannedCommand c{"node", {node.name}, {"sbatch", "--parsable"}};
  add_common_sbatch(c.argv, o, o.time_limit);
  c.argv.push_back("--nodelist=" + node.name);
  c.argv.push_back("--nodes=1");
  c.argv.push_back("--time=" + o.time_limit);
  c.argv.push_back("--export=ALL,VIGIL_MODE=node,VIGIL_RUN_ID=" + o.run_id +
                   expected_gpus_export(node));
  c.argv.push_back(o.job_script);
  return c;
}

// A multi-node job: kind and VIGIL_MODE "fabric" or "domain". partition: the group's own
// partition when --partition is not given (the allocation must lie in one partition), empty when
// the nodes have none.
// gpus: the GPUs every node of the group has in Slurm (its Gres), 0 when it has none.
// --gres=gpu:N on the allocation, not only --exclusive: a step gets by default every GRES the job
// asked for, but none that --exclusive alone gave it (srun(1), --gres), and mpirun starts its
// daemons on the other nodes as such steps. Measured on the production profile: in an
// `--exclusive` job the plain step opens no GPU, in an `--exclusive --gres=gpu:4` job it opens
// all 4 (docs/recheck.md "Which step sees which GPU").
PlannedCommand multi_node_job(const std::string& kind, const std::vector<std::string>& group,
                              const std::string& partition, int ranks_per_node, int gpus,
                              const SubmitOptions& o) {
  PlannedCommand c{kind, group, {"sbatch", "--parsable"}};
  add_common_sbatch(c.argv, o, o.fabric_time_limit);
  if (o.partition.empty() && !partition.empty()) c.argv.push_back("--partition=" + partition);
  std::string list;
  for (const auto& n : group) list += (list.empty() ? "" : ",") + n;
  c.argv.push_back("--nodelist=" + list);
  c.argv.push_back("--nodes=" + std::to_string(group.size()));
  if (gpus > 0) c.argv.push_back("--gres=gpu:" + std::to_string(gpus));
  c.argv.push_back("--ntasks-per-node=" + std::to_string(ranks_per_node));
  c.argv.push_back("--time=" + o.fabric_time_limit);
  c.argv.push_back("--export=ALL,VIGIL_MODE=" + kind + ",VIGIL_RUN_ID=" + o.run_id);
  c.argv.push_back(o.job_script);
  return c;
}

// The hold of a drained node (docs/recheck.md "The hold"), with the partners held beside it. No
// job starts on a DRAIN node, and `srun -Z`, which does run there, holds no GRES: with task/cgroup
// and ConstrainDevices=yes its step may open no GPU (Slurm: a faked credential without GRES, and
// gres_g_get_devices() denies every GRES device to it; measured on the local cluster's production
// profile, tests/integration/production_slurm_test.cpp). So the node is held in a reservation
// only the checker may use, undrained, allocated whole with every GPU (--gres=gpu:N from its
// Gres) and drained again with its own reason before the step runs.
Hold make_hold(const SlurmNodeInfo& node, const std::vector<std::string>& partners,
               const std::string& partition, const SubmitOptions& o) {
  const int gpus = slurm::gpu_count(node.gres);
  Hold hold{node.name,   hold_reservation(node.name),
            node.reason, o.hold_user.empty() ? "root" : o.hold_user,
            {"salloc"},  partners};
  std::string list = node.name;
  for (const auto& p : partners) list += "," + p;
  auto& a = hold.allocate;
  // No shell: the allocation only holds the nodes; --immediate: nodes that cannot be had within
  // a minute (another job slipped in before the hold) are given up, never waited for.
  a.insert(a.end(), {"--no-shell", "--immediate=60"});
  a.push_back("--reservation=" + hold.reservation);
  a.push_back("--nodelist=" + list);
  a.push_back("--nodes=" + std::to_string(1 + partners.size()));
  a.push_back("--exclusive");
  // Per node; a step then gets every one of them by default (multi_node_job).
  if (gpus > 0) a.push_back("--gres=gpu:" + std::to_string(gpus));
  // The allocation outlives a vigil-submit killed mid-way by no more than this (minutes).
  a.push_back("--time=" + std::to_string(o.recheck_timeout_s / 60 + 5));
  a.push_back("--job-name=" + o.job_name + "-recheck");
  a.push_back("--comment=vigil:" + o.run_id);
  if (!partition.empty()) a.push_back("--partition=" + partition);
  if (!o.qos.empty()) a.push_back("--qos=" + o.qos);
  if (!o.account.empty()) a.push_back("--account=" + o.account);
  return hold;
}

// The step of a held re-check: the job script on `on` (one task, the node's every GPU: the
// default of a step in an allocation that asked for them), in VIGIL_MODE `mode`; `env`: more
// exports.
std::vector<std::string> held_step(const std::string& on, const std::string& mode,
                                   const std::string& env, const SubmitOptions& o) {
  std::vector<std::string> argv = {
      "srun",
      "--jobid=" + std::string(kHoldJobId),
      "--nodelist=" + on,
      "--nodes=1",
      "--ntasks=1",
      "--export=ALL,VIGIL_MODE=" + mode + ",VIGIL_RUN_ID=" + o.run_id + env,
      "bash"};
  if (o.recheck_script_text.empty()) {
    argv.push_back(o.job_script);
  } else {
    argv.push_back("-c");
    argv.push_back(o.recheck_script_text);
    argv.push_back("vigil-recheck");  // $0 of the inline script
  }
  return argv;
}

// The suite a held re-check runs when the drainer named none: "full" when the reason's check runs
// in no quick run ("vigil: sdc gpu 0 ..." names gpu_sdc: its quick re-checks would never pass it,
// and the drain would last until a person ends it), else the job's own. Not "qualify": its soak
// outlasts the hourly re-check's time limit; the drainer names that suite itself for a soak's
// drain (GET /v1/rechecks), which the requalify CronJob runs.
std::string suite_for_reason(std::string_view reason) {
  const std::string prefix = std::string(slurm::kReasonPrefix) + " ";
  if (!reason.starts_with(prefix)) return "";
  reason.remove_prefix(prefix.size());
  const std::string check(reason.substr(0, reason.find(' ')));
  return suite_to_run(std::span<const std::string>(&check, 1)) == "full" ? "full" : "";
}

// A held re-check of a node Vigil drained, and in `why` what the plan says of it. A reason
// "vigil: reset-gpu ..." (the drainer asked for a GPU reset first): the job script's mode `reset`
// runs `vigil-check repair reset-gpu`, then the re-check if it passed. A suite the drainer named
// (o.recheck_suite), or else the one the reason's check needs, is exported as VIGIL_SUITE.
PlannedCommand recheck_cmd(const SlurmNodeInfo& node, const SubmitOptions& o, std::string& why) {
  const bool reset = slurm::is_reset_gpu_reason(node.reason);
  const std::string partition = !o.partition.empty()      ? o.partition
                                : node.partitions.empty() ? ""
                                                          : node.partitions.front();
  const auto listed = o.recheck_suite.find(node.name);
  const std::string suite =
      listed != o.recheck_suite.end() ? listed->second : suite_for_reason(node.reason);
  const bool named = !suite.empty();
  const std::string env = expected_gpus_export(node) + (named ? ",VIGIL_SUITE=" + suite : "");
  PlannedCommand c{
      "recheck", {node.name}, held_step(node.name, reset ? "reset" : "recheck", env, o)};
  c.hold = make_hold(node, {}, partition, o);
  why = std::string(reset ? "drained by vigil for a GPU reset: held, reset-gpu, then the re-check "
                            "(reservation "
                          : "drained by vigil: held re-check (reservation ") +
        hold_reservation(node.name) + ")" + (named ? ", suite " + suite : "");
  return c;
}

// A node Vigil drained for the fabric (docs/fabric.md "Fabric re-check"): the pair test against
// a known-good partner, both held in one reservation and allocation. The job script runs as a
// step on the partner, and its mpirun reaches the drained node through a second step of the
// allocation, so the ranks on both sides hold every GPU of their node. Only the drained node's
// report is posted; the partner is a reference. kind: "fabric-recheck", or "domain-recheck" for a
// node drained for its NVLink domain (the partner is of the same domain).
PlannedCommand fabric_recheck_cmd(const std::string& kind, const SlurmNodeInfo& drained,
                                  const std::string& partner, const std::string& partition,
                                  int ranks_per_node, const SubmitOptions& o) {
  PlannedCommand c{kind,
                   {drained.name, partner},
                   held_step(partner, kind,
                             ",VIGIL_RECHECK_NODE=" + drained.name +
                                 ",VIGIL_RANKS_PER_NODE=" + std::to_string(ranks_per_node),
                             o)};
  c.hold = make_hold(drained, {partner}, partition, o);
  return c;
}

}  // namespace

std::string hold_reservation(const std::string& node) { return std::string(kHoldPrefix) + node; }

bool is_fabric_drain(const slurm::SlurmNodeInfo& node) {
  return node.drain &&
         (starts_with(node.reason, std::string(slurm::kReasonPrefix) + " fabric-ib") ||
          is_domain_drain(node));
}

bool is_domain_drain(const slurm::SlurmNodeInfo& node) {
  return node.drain && starts_with(node.reason, std::string(slurm::kReasonPrefix) + " nvl-domain");
}

bool is_active_vigil_job(const slurm::SlurmJobInfo& job, const SubmitOptions& options) {
  if (!job.active) return false;
  return job.name == options.job_name || starts_with(job.comment, slurm::kReasonPrefix);
}

namespace {

// Active vigil jobs by node, built once per plan: a large queue must not cost nodes x jobs.
using VigilJobIndex = std::unordered_map<std::string, const slurm::SlurmJobInfo*>;

VigilJobIndex index_vigil_jobs(const std::vector<slurm::SlurmJobInfo>& jobs,
                               const SubmitOptions& o) {
  VigilJobIndex index;
  for (const slurm::SlurmJobInfo& j : jobs) {
    if (!is_active_vigil_job(j, o)) continue;
    for (const std::string& node : j.nodes) index.emplace(node, &j);
  }
  return index;
}

std::string skip_reason_indexed(const slurm::SlurmNodeInfo& n, const VigilJobIndex& vigil_jobs,
                                const SubmitOptions& o) {
  if (!o.partition.empty() && !in_partition(n, o.partition)) {
    return "not in partition " + o.partition;
  }
  if (n.down) return "DOWN" + (n.reason.empty() ? "" : ": " + n.reason);
  if (n.fail) return "FAIL" + (n.reason.empty() ? "" : ": " + n.reason);
  if (n.not_responding) return "NOT_RESPONDING";
  const bool ours = starts_with(n.reason, slurm::kReasonPrefix);
  if (n.drain && !ours) {
    return "drained by someone else: " + (n.reason.empty() ? "(no reason)" : n.reason);
  }
  if (n.drain && ours && !o.recheck) return "drained by vigil; re-checks disabled (--no-recheck)";
  // The repair ladder gave up on it (docs/repair.md): a person's, until someone resumes it.
  if (n.drain && starts_with(n.reason, std::string(slurm::kReasonPrefix) + " replace "))
    return "drained by vigil for replacement; not re-checked until a person resumes it";
  // DRAINING: user jobs still run there; a re-check now would disturb them and measure noise.
  if (n.drain && ours && (n.state == "ALLOCATED" || n.state == "MIXED")) {
    return "draining (user jobs still running); re-checked once drained";
  }
  // A node Vigil drained that sits in a reservation (the site's, or another run's hold) cannot be
  // held for its re-check: ours could overlap it, and that reservation's jobs could start on the
  // node once it is undrained.
  if ((n.maint || n.reserved) && n.drain && ours)
    return "drained by vigil, in a reservation; re-checked once the reservation ends";
  if ((n.maint || n.reserved) && o.reservation.empty()) {
    return n.maint ? "in a MAINT reservation (pass --reservation to use it)"
                   : "reserved (pass --reservation to use the reservation)";
  }
  if (auto it = vigil_jobs.find(n.name); it != vigil_jobs.end()) {
    return "vigil job " + std::to_string(it->second->job_id) + " already " + it->second->state;
  }
  return "";
}

// The partition a node's multi-node job runs in: --partition, else the node's first (one
// allocation lies in one partition, and a pair's reports carry one SKU); empty when none.
std::string job_partition(const slurm::SlurmNodeInfo& n, const SubmitOptions& o) {
  return !o.partition.empty() ? o.partition : n.partitions.empty() ? "" : n.partitions.front();
}

using Verdicts = std::map<std::string, NodeVerdict>;

void note_group(Verdicts& verdicts, const std::vector<std::string>& group,
                const std::string& what) {
  for (const auto& n : group) {
    std::string others;
    for (const auto& m : group)
      if (m != n) others += (others.empty() ? "" : ",") + m;
    verdicts[n].why += " + " + what + " with " + others;
  }
}

// What a multi-node job's nodes must share, per node: its partition (one allocation lies in one)
// and its GPUs in Slurm (the job asks every node for --gres=gpu:N).
std::map<std::string, std::pair<std::string, int>> group_keys(
    const std::vector<slurm::SlurmNodeInfo>& nodes, const SubmitOptions& o) {
  std::map<std::string, std::pair<std::string, int>> key_of;
  for (const slurm::SlurmNodeInfo& n : nodes)
    key_of[n.name] = {job_partition(n, o), slurm::gpu_count(n.gres)};
  return key_of;
}

// Fabric jobs over this run's node jobs. Pairs in shuffled order: a different partner each run,
// so a bad link shows up as the node common to several slow pairs. Jobs of fabric_nodes nodes
// (the last one of a partition may be smaller, down to a pair); inside, vigil-check fabric runs
// rounds of pairs and names a slow node in one job.
void add_fabric_jobs(SubmitPlan& plan, Verdicts& verdicts, const std::vector<std::string>& chosen,
                     const std::vector<slurm::SlurmNodeInfo>& nodes, const SubmitOptions& o) {
  const auto key_of = group_keys(nodes, o);
  // One allocation lies in one partition and asks every node for the same GPUs.
  std::map<std::pair<std::string, int>, std::vector<std::string>> groups;  // in shuffled order
  for (const std::string& name : chosen) groups[key_of.at(name)].push_back(name);
  const size_t k = static_cast<size_t>(std::max(2, o.fabric_nodes));
  for (const auto& [key, members] : groups) {
    const auto& [partition, gpus] = key;
    for (size_t i = 0; i + 1 < members.size(); i += k) {
      const std::vector<std::string> group(
          members.begin() + static_cast<long>(i),
          members.begin() + static_cast<long>(std::min(members.size(), i + k)));
      plan.jobs.push_back(
          multi_node_job("fabric", group, partition, o.fabric_ranks_per_node, gpus, o));
      note_group(verdicts, group, "fabric");
    }
    if (members.size() % k == 1) verdicts[members.back()].why += " (no fabric partner this run)";
  }
}

// NVLink domain jobs (docs/fabric.md "NVLink domain jobs"): the node jobs of this run that share
// an NVLink domain and a partition get one job together (all of them: the job runs rounds of
// pairs over multi-node NVLink, then one all_reduce over every tray at once). Nodes without a
// known domain get none.
void add_domain_jobs(SubmitPlan& plan, Verdicts& verdicts, const std::vector<std::string>& chosen,
                     const std::vector<slurm::SlurmNodeInfo>& nodes, const SubmitOptions& o) {
  const auto key_of = group_keys(nodes, o);
  std::map<std::tuple<std::string, std::string, int>, std::vector<std::string>> groups;
  for (const std::string& name : chosen) {
    auto d = o.nvlink_domain_of.find(name);
    if (d != o.nvlink_domain_of.end())
      groups[{key_of.at(name).first, d->second, key_of.at(name).second}].push_back(name);
  }
  // A map's "domain" larger than one NVL72 is split: no job spans more than domain_nodes trays.
  const size_t k = static_cast<size_t>(std::max(2, o.domain_nodes));
  for (auto& [key, members] : groups) {
    const auto& [partition, domain, gpus] = key;
    std::sort(members.begin(), members.end());
    for (size_t i = 0; i + 1 < members.size(); i += k) {
      const std::vector<std::string> group(
          members.begin() + static_cast<long>(i),
          members.begin() + static_cast<long>(std::min(members.size(), i + k)));
      plan.jobs.push_back(
          multi_node_job("domain", group, partition, o.domain_ranks_per_node, gpus, o));
      note_group(verdicts, group, "NVLink domain " + domain + " job");
    }
    if (members.size() % k == 1)
      verdicts[members.back()].why += " (no NVLink domain partner this run)";
  }
}

}  // namespace

std::string skip_reason(const slurm::SlurmNodeInfo& n, const std::vector<slurm::SlurmJobInfo>& jobs,
                        const SubmitOptions& o) {
  return skip_reason_indexed(n, index_vigil_jobs(jobs, o), o);
}

namespace {

// The held re-checks, in order (nodes waiting for a GPU reset first: past --max-rechecks a late
// name would wait until the drainer's reset_timeout_s sends it to a reboot). A node drained for
// the fabric or its NVLink domain takes a known-good partner out of `check_candidates`: an idle
// node Vigil may check (not drained, no vigil job, in no reservation), of the same partition, the
// same GPUs in Slurm, and for a domain drain the same NVLink domain, in the run's seeded order. The
// partner is held with it, so it gets no node job this run (it has to be idle when the hold
// begins); --nodes does not restrict partners: a partner is a reference, never judged.
void add_rechecks(SubmitPlan& plan, Verdicts& verdicts, std::vector<std::string> candidates,
                  std::vector<std::string>& check_candidates,
                  const std::vector<slurm::SlurmNodeInfo>& nodes, const VigilJobIndex& vigil_jobs,
                  const SubmitOptions& o) {
  std::map<std::string, const slurm::SlurmNodeInfo*> info;
  for (const slurm::SlurmNodeInfo& n : nodes) info[n.name] = &n;
  std::sort(candidates.begin(), candidates.end(), [&](const std::string& a, const std::string& b) {
    const bool ra = slurm::is_reset_gpu_reason(info.at(a)->reason);
    const bool rb = slurm::is_reset_gpu_reason(info.at(b)->reason);
    return ra != rb ? ra : a < b;
  });
  std::set<std::string> taken;  // partners already given
  // Partners in the run's seeded order, not by name: another partner each run, so one slow node
  // cannot fail every pair re-check of its partition, and no node is the partner (and without a
  // node job) run after run.
  std::vector<const slurm::SlurmNodeInfo*> partner_order;
  for (const auto& [name, n] : info) partner_order.push_back(n);
  std::mt19937_64 partner_rng(o.seed ^ 0x9e3779b97f4a7c15ULL);
  std::shuffle(partner_order.begin(), partner_order.end(), partner_rng);
  auto domain_of = [&](const std::string& name) {
    auto it = o.nvlink_domain_of.find(name);
    return it == o.nvlink_domain_of.end() ? std::string() : it->second;
  };
  const size_t cap = static_cast<size_t>(std::max(o.max_rechecks, 0));
  for (size_t i = 0; i < candidates.size(); ++i) {
    NodeVerdict& v = verdicts[candidates[i]];
    if (i >= cap) {
      v.why = "drained by vigil; over --max-rechecks " + std::to_string(cap);
      continue;
    }
    const slurm::SlurmNodeInfo& drained = *info.at(candidates[i]);
    v.action = PlanStep::kRecheck;
    // A node the drainer asked a suite of (the qualify gate's) runs it, whatever drained it.
    if (!is_fabric_drain(drained) || o.recheck_suite.count(drained.name)) {
      plan.rechecks.push_back(recheck_cmd(drained, o, v.why));
      continue;
    }
    // The node checks of a plain re-check do not include the fabric test that drained it.
    const bool domain = is_domain_drain(drained);
    const std::string what = domain ? "NVLink domain" : "fabric";
    const std::string partition = job_partition(drained, o);
    const std::string its_domain = domain ? domain_of(drained.name) : "";
    const int gpus = slurm::gpu_count(drained.gres);
    auto p = std::find_if(partner_order.begin(), partner_order.end(), [&](const auto* np) {
      const slurm::SlurmNodeInfo& n = *np;
      // What run_held asks of a partner too (hold.cpp partner_unfit): idle, in no reservation.
      return !n.drain && n.state == "IDLE" && !n.completing && !n.reserved && !n.maint &&
             !taken.count(n.name) && job_partition(n, o) == partition &&
             slurm::gpu_count(n.gres) == gpus &&
             (!domain || (!its_domain.empty() && domain_of(n.name) == its_domain)) &&
             skip_reason_indexed(n, vigil_jobs, o).empty();
    });
    if (p == partner_order.end()) {
      v.action = PlanStep::kSkip;
      v.why = "drained by vigil (" + what + "); no idle known-good partner in partition " +
              partition +
              (domain ? its_domain.empty() ? " (its NVLink domain is not known: --nvlink-domains)"
                                           : " and NVLink domain " + its_domain
                      : "") +
              " this run";
      continue;
    }
    const std::string& partner = (*p)->name;
    taken.insert(partner);
    check_candidates.erase(std::remove(check_candidates.begin(), check_candidates.end(), partner),
                           check_candidates.end());
    if (auto pv = verdicts.find(partner); pv != verdicts.end())
      pv->second.why = "held as the known-good partner of " + drained.name + "'s " + what +
                       " re-check; its own checks next run";
    plan.rechecks.push_back(fabric_recheck_cmd(
        domain ? "domain-recheck" : "fabric-recheck", drained, partner, partition,
        domain ? o.domain_ranks_per_node : o.fabric_ranks_per_node, o));
    v.why = "drained by vigil (" + what + "): held pair re-check with " + partner +
            " (reservation " + hold_reservation(drained.name) + ")";
  }
}

}  // namespace

SubmitPlan plan_submissions(const std::vector<slurm::SlurmNodeInfo>& nodes,
                            const std::vector<slurm::SlurmJobInfo>& jobs, const SubmitOptions& o) {
  SubmitPlan plan;
  const std::set<std::string> wanted(o.nodes.begin(), o.nodes.end());
  const VigilJobIndex vigil_jobs = index_vigil_jobs(jobs, o);
  Verdicts verdicts;
  std::vector<std::string> check_candidates;
  std::vector<std::string> recheck_candidates;
  for (const slurm::SlurmNodeInfo& n : nodes) {
    if (!wanted.empty() && !wanted.count(n.name)) continue;
    NodeVerdict v{n.name, PlanStep::kSkip, skip_reason_indexed(n, vigil_jobs, o)};
    if (v.why.empty()) {
      if (n.drain) {  // drained by vigil (skip_reason filtered every other drain)
        recheck_candidates.push_back(n.name);
      } else {
        check_candidates.push_back(n.name);
      }
    }
    verdicts[n.name] = std::move(v);
  }
  for (const std::string& name : o.nodes) {
    if (!verdicts.count(name)) verdicts[name] = {name, PlanStep::kSkip, "unknown to slurmctld"};
  }
  add_rechecks(plan, verdicts, recheck_candidates, check_candidates, nodes, vigil_jobs, o);

  // Random subset under the cap: a large fleet is covered over several runs instead of
  // flooding slurmctld in one. Seeded, so a plan can be reproduced.
  std::mt19937_64 rng(o.seed);
  std::shuffle(check_candidates.begin(), check_candidates.end(), rng);
  const size_t cap = static_cast<size_t>(std::max(o.max_jobs, 0));
  std::vector<std::string> chosen(
      check_candidates.begin(),
      check_candidates.begin() + static_cast<long>(std::min(cap, check_candidates.size())));
  for (size_t i = chosen.size(); i < check_candidates.size(); ++i) {
    verdicts[check_candidates[i]].why =
        "not in this run's random subset (--max-jobs " + std::to_string(cap) + ")";
  }

  std::unordered_map<std::string, const SlurmNodeInfo*> by_name;
  for (const SlurmNodeInfo& n : nodes) by_name.emplace(n.name, &n);
  std::vector<std::string> chosen_sorted = chosen;
  std::sort(chosen_sorted.begin(), chosen_sorted.end());
  for (const std::string& name : chosen_sorted) {
    plan.jobs.push_back(node_job(*by_name.at(name), o));
    verdicts[name].action = PlanStep::kSubmit;
    verdicts[name].why = "node job";
  }
  if (o.fabric) add_fabric_jobs(plan, verdicts, chosen, nodes, o);
  if (!o.nvlink_domain_of.empty()) add_domain_jobs(plan, verdicts, chosen, nodes, o);
  for (auto& [name, v] : verdicts) plan.verdicts.push_back(std::move(v));
  return plan;
}

std::optional<int64_t> slurm_time_limit_s(std::string_view limit) {
  // Slurm's forms: minutes, minutes:seconds, hours:minutes:seconds, days-hours,
  // days-hours:minutes, days-hours:minutes:seconds.
  int64_t days = 0;
  bool has_days = false;
  if (auto dash = limit.find('-'); dash != std::string_view::npos) {
    std::string_view d = limit.substr(0, dash);
    if (d.empty() || d.size() > 4 || !std::all_of(d.begin(), d.end(), ::isdigit))
      return std::nullopt;
    days = std::stoll(std::string(d));
    has_days = true;
    limit = limit.substr(dash + 1);
  }
  std::vector<int64_t> parts;
  while (true) {
    const size_t colon = limit.find(':');
    std::string_view p = limit.substr(0, colon);
    if (p.empty() || p.size() > 6 || !std::all_of(p.begin(), p.end(), ::isdigit))
      return std::nullopt;
    parts.push_back(std::stoll(std::string(p)));
    if (colon == std::string_view::npos) break;
    limit = limit.substr(colon + 1);
  }
  if (parts.size() > 3) return std::nullopt;
  int64_t s = 0;
  if (has_days) {  // days-hours[:minutes[:seconds]]
    const int64_t mult[] = {3600, 60, 1};
    for (size_t i = 0; i < parts.size(); ++i) s += parts[i] * mult[i];
    return days * 86400 + s;
  }
  if (parts.size() == 1) return parts[0] * 60;             // minutes
  if (parts.size() == 2) return parts[0] * 60 + parts[1];  // minutes:seconds
  return parts[0] * 3600 + parts[1] * 60 + parts[2];       // hours:minutes:seconds
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    const bool plain = !a.empty() && std::all_of(a.begin(), a.end(), [](unsigned char c) {
      return std::isalnum(c) || std::string_view("-_./=:,@%+").find(c) != std::string::npos;
    });
    if (i) out += ' ';
    if (plain) {
      out += a;
    } else {
      out += '\'';
      for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
  }
  return out;
}

}  // namespace vigil::submit
