// vigil-submit planning on in-memory node and job lists (no Slurm).
#include "vigil/submit/plan.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>

#include "vigil/submit/submit.h"

namespace {

using vigil::slurm::SlurmJobInfo;
using vigil::slurm::SlurmNodeInfo;
using vigil::submit::plan_submissions;
using vigil::submit::PlanStep;
using vigil::submit::SubmitOptions;
using vigil::submit::SubmitPlan;

SlurmNodeInfo idle(const std::string& name) {
  SlurmNodeInfo n;
  n.name = name;
  n.state = "IDLE";
  n.partitions = {"gpu", "vigil"};
  return n;
}

SubmitOptions options() {
  SubmitOptions o;
  o.job_script = "/etc/vigil/vigil-check.sbatch";
  o.run_id = "r1";
  o.seed = 42;
  return o;
}

const vigil::submit::NodeVerdict& verdict(const SubmitPlan& p, const std::string& node) {
  auto it = std::find_if(p.verdicts.begin(), p.verdicts.end(),
                         [&](const auto& v) { return v.node == node; });
  if (it == p.verdicts.end()) throw std::runtime_error("no verdict for " + node);
  return *it;
}

bool has_arg(const std::vector<std::string>& argv, const std::string& arg) {
  return std::find(argv.begin(), argv.end(), arg) != argv.end();
}

TEST(SubmitPlan, one_sbatch_per_idle_node_with_every_required_option) {
  SubmitOptions o = options();
  o.partition = "vigil";
  o.qos = "high";
  o.account = "ops";
  o.reservation = "vigil-maint";
  o.time_limit = "20:00";
  const SubmitPlan p = plan_submissions({idle("gpu-1"), idle("gpu-0")}, {}, o);
  ASSERT_EQ(p.jobs.size(), 2u);
  EXPECT_TRUE(p.rechecks.empty());
  const auto& argv = p.jobs[0].argv;  // sorted by node
  EXPECT_EQ(argv[0], "sbatch");
  for (const char* a : {"--nodelist=gpu-0", "--exclusive", "--no-requeue", "--time=20:00",
                        "--job-name=vigil-check", "--comment=vigil:r1", "--partition=vigil",
                        "--qos=high", "--account=ops", "--reservation=vigil-maint", "--nodes=1"}) {
    EXPECT_TRUE(has_arg(argv, a)) << a << " missing in " << vigil::submit::shell_join(argv);
  }
  EXPECT_EQ(argv.back(), "/etc/vigil/vigil-check.sbatch");
  EXPECT_EQ(p.jobs[1].nodes, std::vector<std::string>{"gpu-1"});
  EXPECT_EQ(verdict(p, "gpu-0").action, PlanStep::kSubmit);
}

TEST(SubmitPlan, skips_down_fail_not_responding_and_foreign_drains_with_the_reason) {
  SlurmNodeInfo down = idle("n-down");
  down.down = true;
  down.state = "DOWN";
  down.reason = "Not responding";
  SlurmNodeInfo fail = idle("n-fail");
  fail.fail = true;
  SlurmNodeInfo silent = idle("n-silent");
  silent.not_responding = true;
  SlurmNodeInfo admin = idle("n-admin");
  admin.drain = true;
  admin.reason = "bad dimm, ticket 42";
  SlurmNodeInfo nhc = idle("n-nhc");
  nhc.drain = true;
  nhc.reason = "NHC: vigil: lookalike";  // prefix must be at the start
  const SubmitPlan p =
      plan_submissions({down, fail, silent, admin, nhc, idle("n-ok")}, {}, options());
  ASSERT_EQ(p.jobs.size(), 1u);
  EXPECT_EQ(p.jobs[0].nodes[0], "n-ok");
  EXPECT_TRUE(p.rechecks.empty());
  EXPECT_EQ(verdict(p, "n-down").why, "DOWN: Not responding");
  EXPECT_EQ(verdict(p, "n-fail").why, "FAIL");
  EXPECT_EQ(verdict(p, "n-silent").why, "NOT_RESPONDING");
  EXPECT_EQ(verdict(p, "n-admin").why, "drained by someone else: bad dimm, ticket 42");
  EXPECT_EQ(verdict(p, "n-nhc").action, PlanStep::kSkip);
  for (const auto& v : p.verdicts) {
    if (v.node != "n-ok") {
      EXPECT_EQ(v.action, PlanStep::kSkip) << v.node;
    }
  }
}

TEST(SubmitPlan, reserved_or_maint_nodes_are_used_only_with_a_reservation) {
  SlurmNodeInfo maint = idle("gpu-0");
  maint.maint = true;
  SlurmNodeInfo resv = idle("gpu-1");
  resv.reserved = true;
  SubmitPlan p = plan_submissions({maint, resv}, {}, options());
  EXPECT_TRUE(p.jobs.empty());
  EXPECT_NE(verdict(p, "gpu-0").why.find("MAINT"), std::string::npos);
  EXPECT_NE(verdict(p, "gpu-1").why.find("reserved"), std::string::npos);
  SubmitOptions o = options();
  o.reservation = "vigil";
  p = plan_submissions({maint, resv}, {}, o);
  EXPECT_EQ(p.jobs.size(), 2u);
}

TEST(SubmitPlan, never_stacks_a_second_vigil_job_on_a_node) {
  SlurmJobInfo pending{101, "vigil-check", "vigil:old", "PENDING", true, {"gpu-0"}};
  SlurmJobInfo running_by_comment{102, "custom", "vigil:old", "RUNNING", true, {"gpu-1", "gpu-2"}};
  SlurmJobInfo finished{103, "vigil-check", "vigil:old", "COMPLETED", false, {"gpu-3"}};
  SlurmJobInfo user{104, "train", "", "RUNNING", true, {"gpu-4"}};
  const SubmitPlan p =
      plan_submissions({idle("gpu-0"), idle("gpu-1"), idle("gpu-2"), idle("gpu-3"), idle("gpu-4")},
                       {pending, running_by_comment, finished, user}, options());
  std::set<std::string> submitted;
  for (const auto& j : p.jobs) submitted.insert(j.nodes[0]);
  EXPECT_EQ(submitted, (std::set<std::string>{"gpu-3", "gpu-4"}));
  EXPECT_EQ(verdict(p, "gpu-0").why, "vigil job 101 already PENDING");
  EXPECT_EQ(verdict(p, "gpu-2").why, "vigil job 102 already RUNNING");
}

TEST(SubmitPlan, caps_node_jobs_with_a_seeded_random_subset) {
  std::vector<SlurmNodeInfo> nodes;
  for (int i = 0; i < 1000; ++i) nodes.push_back(idle("sim-" + std::to_string(i)));
  SubmitOptions o = options();
  o.max_jobs = 200;
  const SubmitPlan a = plan_submissions(nodes, {}, o);
  ASSERT_EQ(a.jobs.size(), 200u);
  size_t capped = 0;
  for (const auto& v : a.verdicts) {
    if (v.action == PlanStep::kSkip) {
      ++capped;
      EXPECT_NE(v.why.find("--max-jobs 200"), std::string::npos);
    }
  }
  EXPECT_EQ(capped, 800u);
  // Same seed, same subset; another seed, another subset (not just the first 200 names).
  const SubmitPlan same = plan_submissions(nodes, {}, o);
  o.seed = 7;
  const SubmitPlan other = plan_submissions(nodes, {}, o);
  auto names = [](const SubmitPlan& p) {
    std::set<std::string> s;
    for (const auto& j : p.jobs) s.insert(j.nodes[0]);
    return s;
  };
  EXPECT_EQ(names(a), names(same));
  EXPECT_NE(names(a), names(other));
  std::set<std::string> first200;
  for (int i = 0; i < 200; ++i) first200.insert("sim-" + std::to_string(i));
  EXPECT_NE(names(a), first200);
}

// The site's GPU count, from Slurm: a node job tells vigil-check how many GPUs the node's Gres
// has (VIGIL_EXPECTED_GPUS), so a 4-GPU board of a GPU whose catalogue board has 8 is judged
// against 4; no Gres, or MIG slices as GRES: nothing, the SKU's count.
TEST(SubmitPlan, a_node_job_carries_the_gpu_count_slurm_has_for_the_node) {
  SlurmNodeInfo four = idle("gpu-0");
  four.gres = "gpu:h100:4(S:0)";
  SlurmNodeInfo mig = idle("gpu-1");
  mig.gres = "gpu:nvidia_a100_1g.5gb:7";
  const SubmitPlan p = plan_submissions({four, mig, idle("gpu-2")}, {}, options());
  ASSERT_EQ(p.jobs.size(), 3u);
  EXPECT_TRUE(has_arg(p.jobs[0].argv,
                      "--export=ALL,VIGIL_MODE=node,VIGIL_RUN_ID=r1,VIGIL_EXPECTED_GPUS=4"));
  EXPECT_TRUE(has_arg(p.jobs[1].argv, "--export=ALL,VIGIL_MODE=node,VIGIL_RUN_ID=r1"));
  EXPECT_TRUE(has_arg(p.jobs[2].argv, "--export=ALL,VIGIL_MODE=node,VIGIL_RUN_ID=r1"));
}

TEST(SubmitPlan, fabric_jobs_pair_distinct_chosen_nodes_with_two_node_allocations) {
  SubmitOptions o = options();
  o.fabric = true;
  o.fabric_nodes = 2;
  const SubmitPlan p = plan_submissions(
      {idle("gpu-0"), idle("gpu-1"), idle("gpu-2"), idle("gpu-3"), idle("gpu-4")}, {}, o);
  std::vector<const vigil::submit::PlannedCommand*> fabric;
  for (const auto& j : p.jobs)
    if (j.kind == "fabric") fabric.push_back(&j);
  ASSERT_EQ(fabric.size(), 2u);
  std::set<std::string> paired;
  for (const auto* f : fabric) {
    ASSERT_EQ(f->nodes.size(), 2u);
    EXPECT_NE(f->nodes[0], f->nodes[1]);
    paired.insert(f->nodes.begin(), f->nodes.end());
    EXPECT_TRUE(has_arg(f->argv, "--nodes=2"));
    EXPECT_TRUE(has_arg(f->argv, "--nodelist=" + f->nodes[0] + "," + f->nodes[1]));
    EXPECT_TRUE(has_arg(f->argv, "--export=ALL,VIGIL_MODE=fabric,VIGIL_RUN_ID=r1"));
  }
  EXPECT_EQ(paired.size(), 4u);  // no node in two pairs; one of five has no partner
  size_t without = 0;
  for (const auto& v : p.verdicts)
    if (v.why.find("no fabric partner") != std::string::npos) ++without;
  EXPECT_EQ(without, 1u);
}

TEST(SubmitPlan, fabric_partners_share_a_partition_and_the_job_asks_for_it) {
  SubmitOptions o = options();
  o.fabric = true;
  o.fabric_nodes = 2;
  std::vector<SlurmNodeInfo> nodes;
  for (int i = 0; i < 6; ++i) {
    SlurmNodeInfo n = idle("h100-" + std::to_string(i));
    n.partitions = {"h100"};
    nodes.push_back(n);
    SlurmNodeInfo m = idle("a100-" + std::to_string(i));
    m.partitions = {"a100", "all"};
    nodes.push_back(m);
  }
  for (uint64_t seed : {1u, 2u, 3u}) {
    o.seed = seed;
    const SubmitPlan p = plan_submissions(nodes, {}, o);
    int pairs = 0;
    for (const auto& j : p.jobs) {
      if (j.kind != "fabric") continue;
      ++pairs;
      const std::string part = j.nodes[0].substr(0, 4);
      EXPECT_EQ(j.nodes[1].substr(0, 4), part) << j.nodes[0] << " + " << j.nodes[1];
      EXPECT_TRUE(has_arg(j.argv, "--partition=" + part)) << part;
    }
    EXPECT_EQ(pairs, 6);
  }
  o.partition = "all";  // --partition given: every job asks for that one, and only that one
  const SubmitPlan p = plan_submissions(nodes, {}, o);
  for (const auto& j : p.jobs) {
    if (j.kind != "fabric") continue;
    EXPECT_TRUE(has_arg(j.argv, "--partition=all"));
    EXPECT_FALSE(has_arg(j.argv, "--partition=a100"));
  }
}

// A multi-node job asks for every GPU of its nodes (--gres=gpu:N from their Gres): mpirun starts
// its daemons on the other nodes as plain steps, and a plain step of an --exclusive job without a
// GPU request may open no GPU under ConstrainDevices=yes (production_slurm_test). One allocation
// asks every node for the same count, so nodes with other GPUs in Slurm are not grouped together.
TEST(SubmitPlan, a_fabric_job_asks_for_every_gpu_of_its_nodes_and_groups_by_their_count) {
  SubmitOptions o = options();
  o.fabric = true;
  o.fabric_nodes = 8;
  std::vector<SlurmNodeInfo> nodes;
  for (int i = 0; i < 4; ++i) {
    SlurmNodeInfo eight = idle("big-" + std::to_string(i));
    eight.gres = "gpu:h100:8(S:0-1)";
    nodes.push_back(eight);
    SlurmNodeInfo four = idle("small-" + std::to_string(i));
    four.gres = "gpu:h100:4";
    nodes.push_back(four);
  }
  nodes.push_back(idle("cpu-0"));  // no GPU in Slurm: no --gres
  nodes.push_back(idle("cpu-1"));
  const SubmitPlan p = plan_submissions(nodes, {}, o);
  int jobs = 0;
  for (const auto& j : p.jobs) {
    if (j.kind != "fabric") continue;
    ++jobs;
    const std::string family = j.nodes[0].substr(0, j.nodes[0].find('-'));
    for (const auto& n : j.nodes) EXPECT_EQ(n.substr(0, n.find('-')), family) << n;
    const bool gres = std::any_of(j.argv.begin(), j.argv.end(),
                                  [](const std::string& a) { return a.rfind("--gres", 0) == 0; });
    const std::string want = family == "big"     ? "--gres=gpu:8"
                             : family == "small" ? "--gres=gpu:4"
                                                 : "";
    if (want.empty()) {
      EXPECT_FALSE(gres) << family;
    } else {
      EXPECT_TRUE(has_arg(j.argv, want)) << family;
    }
  }
  EXPECT_EQ(jobs, 3);
}

TEST(SubmitPlan, fabric_jobs_take_eight_nodes_each_and_the_rest_as_a_smaller_job) {
  SubmitOptions o = options();
  o.fabric = true;  // fabric_nodes defaults to 8
  std::vector<SlurmNodeInfo> nodes;
  for (int i = 0; i < 19; ++i) nodes.push_back(idle("gpu-" + std::to_string(i)));
  const SubmitPlan p = plan_submissions(nodes, {}, o);
  std::vector<size_t> sizes;
  std::set<std::string> in_a_job;
  for (const auto& j : p.jobs) {
    if (j.kind != "fabric") continue;
    sizes.push_back(j.nodes.size());
    EXPECT_TRUE(has_arg(j.argv, "--nodes=" + std::to_string(j.nodes.size())));
    for (const auto& n : j.nodes) EXPECT_TRUE(in_a_job.insert(n).second) << n << " in two jobs";
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{8, 8, 3}));
  EXPECT_EQ(in_a_job.size(), 19u);
  // 17 nodes: two jobs of 8 and one node left without partners.
  nodes.resize(17);
  const SubmitPlan q = plan_submissions(nodes, {}, o);
  size_t jobs = 0, without = 0;
  for (const auto& j : q.jobs) jobs += j.kind == "fabric";
  for (const auto& v : q.verdicts) without += v.why.find("no fabric partner") != std::string::npos;
  EXPECT_EQ(jobs, 2u);
  EXPECT_EQ(without, 1u);
}

// A node Vigil drained is re-checked held (docs/recheck.md "The hold"): a reservation of it for
// the submitting user, an allocation of the whole node with every GPU of its Gres inside it, and
// the step in that allocation with the same GPUs; never `srun -Z`, whose step may open no GPU
// under ConstrainDevices=yes (tests/integration/production_slurm_test.cpp).
TEST(SubmitPlan, nodes_drained_by_vigil_get_a_held_recheck_with_every_gpu_not_an_sbatch) {
  SlurmNodeInfo ours = idle("gpu-2");
  ours.drain = true;
  ours.reason = "vigil: remap gpu3 pending 1>0";
  ours.gres = "gpu:h100:8(S:0-1)";
  SubmitOptions o = options();
  o.hold_user = "vigil";
  o.recheck_script_text = "#!/bin/bash\nvigil-check run\n";
  SubmitPlan p = plan_submissions({idle("gpu-1"), ours}, {}, o);
  ASSERT_EQ(p.jobs.size(), 1u);
  EXPECT_EQ(p.jobs[0].nodes[0], "gpu-1");
  ASSERT_EQ(p.rechecks.size(), 1u);
  const auto& argv = p.rechecks[0].argv;
  EXPECT_EQ(argv[0], "srun");
  EXPECT_FALSE(has_arg(argv, "--no-allocate"));
  EXPECT_TRUE(has_arg(argv, "--jobid=@HOLD_JOB@"));
  EXPECT_TRUE(has_arg(argv, "--nodelist=gpu-2"));
  // The step asks for no GRES of its own: a step gets every GPU the allocation asked for by
  // default (srun(1), --gres; production_slurm_test measures it).
  EXPECT_TRUE(std::none_of(argv.begin(), argv.end(),
                           [](const std::string& a) { return a.rfind("--gres", 0) == 0; }));
  EXPECT_TRUE(has_arg(argv, o.recheck_script_text));
  ASSERT_TRUE(p.rechecks[0].hold.has_value());
  const vigil::submit::Hold& hold = *p.rechecks[0].hold;
  EXPECT_EQ(hold.node, "gpu-2");
  EXPECT_EQ(hold.reservation, "vigil-hold-gpu-2");
  EXPECT_EQ(hold.reason, ours.reason);  // restored word for word once the node is allocated
  EXPECT_EQ(hold.user, "vigil");
  EXPECT_EQ(hold.allocate[0], "salloc");
  for (const char* a :
       {"--no-shell", "--reservation=vigil-hold-gpu-2", "--nodelist=gpu-2", "--nodes=1",
        "--exclusive", "--gres=gpu:8", "--partition=gpu", "--comment=vigil:r1"})
    EXPECT_TRUE(has_arg(hold.allocate, a)) << a;
  EXPECT_TRUE(hold.partners.empty());
  // The step tells vigil-check the node's GPUs in Slurm (gpu_count expects them).
  EXPECT_TRUE(
      has_arg(argv, "--export=ALL,VIGIL_MODE=recheck,VIGIL_RUN_ID=r1,VIGIL_EXPECTED_GPUS=8"))
      << vigil::submit::shell_join(argv);
  EXPECT_EQ(verdict(p, "gpu-2").action, PlanStep::kRecheck);
  EXPECT_NE(verdict(p, "gpu-2").why.find("held re-check"), std::string::npos);
  // The drainer's list asked for the qualify gate's suite (--rechecks-from): the step runs it.
  o.recheck_suite["gpu-2"] = "qualify";
  p = plan_submissions({ours}, {}, o);
  ASSERT_EQ(p.rechecks.size(), 1u);
  EXPECT_TRUE(has_arg(p.rechecks[0].argv,
                      "--export=ALL,VIGIL_MODE=recheck,VIGIL_RUN_ID=r1,VIGIL_EXPECTED_GPUS=8,"
                      "VIGIL_SUITE=qualify"))
      << vigil::submit::shell_join(p.rechecks[0].argv);
  EXPECT_NE(verdict(p, "gpu-2").why.find(", suite qualify"), std::string::npos);
  o.recheck_suite.clear();
  // Drained by gpu_sdc, which no quick run has: its held re-check runs the full suite, or it
  // could never pass; a suite the drainer names still wins.
  const std::string remap_reason = ours.reason;
  ours.reason = "vigil: sdc gpu 0 bf16: 1 element of 67108864 wrong in the exact integer GEMM";
  p = plan_submissions({ours}, {}, o);
  ASSERT_EQ(p.rechecks.size(), 1u);
  EXPECT_TRUE(has_arg(p.rechecks[0].argv,
                      "--export=ALL,VIGIL_MODE=recheck,VIGIL_RUN_ID=r1,VIGIL_EXPECTED_GPUS=8,"
                      "VIGIL_SUITE=full"))
      << vigil::submit::shell_join(p.rechecks[0].argv);
  EXPECT_NE(verdict(p, "gpu-2").why.find(", suite full"), std::string::npos);
  o.recheck_suite["gpu-2"] = "qualify";
  p = plan_submissions({ours}, {}, o);
  EXPECT_NE(verdict(p, "gpu-2").why.find(", suite qualify"), std::string::npos);
  o.recheck_suite.clear();
  ours.reason = "vigil: soak gpu3 582<640TFLOP/s";  // qualify's soak: the drainer names it
  p = plan_submissions({ours}, {}, o);
  ASSERT_EQ(p.rechecks.size(), 1u);
  EXPECT_EQ(verdict(p, "gpu-2").why.find(", suite"), std::string::npos) << verdict(p, "gpu-2").why;
  ours.reason = remap_reason;
  // In a reservation (the site's, or another run's hold): not held, said so (review of the hold:
  // ours could overlap it, and its jobs could start on the undrained node).
  ours.reserved = true;
  p = plan_submissions({ours}, {}, o);
  EXPECT_TRUE(p.rechecks.empty());
  EXPECT_NE(verdict(p, "gpu-2").why.find("in a reservation"), std::string::npos);
  ours.reserved = false;
  // A node without GPUs in its Gres gets no --gres (nothing of it is constrained).
  ours.gres = "(null)";
  p = plan_submissions({ours}, {}, o);
  ASSERT_EQ(p.rechecks.size(), 1u);
  EXPECT_TRUE(std::none_of(p.rechecks[0].hold->allocate.begin(), p.rechecks[0].hold->allocate.end(),
                           [](const std::string& a) { return a.rfind("--gres", 0) == 0; }));
  // A vigil drain of a node that is also DOWN cannot run anything.
  ours.down = true;
  p = plan_submissions({ours}, {}, o);
  EXPECT_TRUE(p.rechecks.empty());
  // DRAINING (user jobs still running): not yet.
  ours.down = false;
  ours.state = "MIXED";
  p = plan_submissions({ours}, {}, o);
  EXPECT_TRUE(p.rechecks.empty());
  EXPECT_NE(verdict(p, "gpu-2").why.find("draining"), std::string::npos);
  ours.state = "IDLE";
  // Re-checks off: skipped, and said so.
  ours.down = false;
  o.recheck = false;
  p = plan_submissions({ours}, {}, o);
  EXPECT_TRUE(p.rechecks.empty());
  EXPECT_NE(verdict(p, "gpu-2").why.find("--no-recheck"), std::string::npos);
}

// A node drained for the fabric cannot be re-checked alone (the node checks do not include the
// pair test): it is held with an idle known-good partner of the same partition and GPUs, in one
// reservation and one allocation of both with every GPU, and the job script runs as a step on the
// partner (docs/fabric.md "Fabric re-check"). The partner gets no node job this run.
TEST(SubmitPlan, a_fabric_drain_is_rechecked_held_with_a_known_good_partner) {
  SlurmNodeInfo sick = idle("gpu-2");
  sick.drain = true;
  sick.reason = "vigil: fabric-ib 4-node fabric job: slow with 3 partners";
  sick.gres = "gpu:h100:8(S:0-1)";
  SlurmNodeInfo remap = idle("gpu-5");
  remap.drain = true;
  remap.reason = "vigil: remap gpu3 pending 1>0";
  SlurmNodeInfo busy = idle("gpu-0");
  busy.state = "ALLOCATED";  // a user job: no partner now
  busy.gres = sick.gres;
  SlurmNodeInfo four = idle("gpu-1");  // other GPUs in Slurm: not a partner for an 8-GPU node
  four.gres = "gpu:4";
  SlurmNodeInfo good = idle("gpu-3");
  good.gres = "gpu:h100:8";
  SubmitOptions o = options();
  o.nodes = {"gpu-2", "gpu-5", "gpu-3"};  // --nodes restricts what is checked, not who partners
  SubmitPlan p = plan_submissions({busy, four, sick, good, remap}, {}, o);
  EXPECT_TRUE(p.jobs.empty()) << "the partner gets no node job this run";
  ASSERT_EQ(p.rechecks.size(), 2u);
  const auto& rc = p.rechecks[0].kind == "fabric-recheck" ? p.rechecks[0] : p.rechecks[1];
  EXPECT_EQ(rc.kind, "fabric-recheck");
  EXPECT_EQ(rc.nodes, (std::vector<std::string>{"gpu-2", "gpu-3"}));
  EXPECT_EQ(rc.argv[0], "srun");
  EXPECT_TRUE(has_arg(rc.argv, "--jobid=@HOLD_JOB@"));
  EXPECT_TRUE(has_arg(rc.argv, "--nodelist=gpu-3")) << vigil::submit::shell_join(rc.argv);
  EXPECT_TRUE(has_arg(rc.argv,
                      "--export=ALL,VIGIL_MODE=fabric-recheck,VIGIL_RUN_ID=r1,"
                      "VIGIL_RECHECK_NODE=gpu-2,VIGIL_RANKS_PER_NODE=8"));
  EXPECT_FALSE(has_arg(rc.argv, "--no-allocate"));
  ASSERT_TRUE(rc.hold.has_value());
  EXPECT_EQ(rc.hold->node, "gpu-2");
  EXPECT_EQ(rc.hold->reservation, "vigil-hold-gpu-2");
  EXPECT_EQ(rc.hold->partners, (std::vector<std::string>{"gpu-3"}));
  EXPECT_EQ(rc.hold->reason, sick.reason);
  for (const char* a : {"--nodelist=gpu-2,gpu-3", "--nodes=2", "--exclusive", "--gres=gpu:8",
                        "--reservation=vigil-hold-gpu-2", "--partition=gpu"})
    EXPECT_TRUE(has_arg(rc.hold->allocate, a)) << a;
  EXPECT_EQ(verdict(p, "gpu-2").action, PlanStep::kRecheck);
  EXPECT_NE(verdict(p, "gpu-2").why.find("held pair re-check with gpu-3"), std::string::npos);
  EXPECT_NE(verdict(p, "gpu-3").why.find("known-good partner of gpu-2"), std::string::npos)
      << verdict(p, "gpu-3").why;
  // The other vigil drain keeps its single-node held re-check.
  const auto& plain = p.rechecks[0].kind == "fabric-recheck" ? p.rechecks[1] : p.rechecks[0];
  EXPECT_EQ(plain.kind, "recheck");
  EXPECT_EQ(plain.nodes, (std::vector<std::string>{"gpu-5"}));
  // No idle partner with its GPUs: nothing launched for it, and the table says why.
  p = plan_submissions({busy, four, sick}, {}, o);
  EXPECT_TRUE(p.jobs.empty());
  EXPECT_TRUE(p.rechecks.empty());
  EXPECT_NE(verdict(p, "gpu-2").why.find("no idle known-good partner"), std::string::npos);
  // One partner per re-check: two fabric drains take two partners.
  SlurmNodeInfo sick2 = sick;
  sick2.name = "gpu-4";
  SlurmNodeInfo good2 = good;
  good2.name = "gpu-6";
  o.nodes = {};
  p = plan_submissions({good, good2, sick, sick2}, {}, o);
  std::set<std::string> partners;
  for (const auto& j : p.rechecks) {
    if (j.kind != "fabric-recheck") continue;
    ASSERT_EQ(j.nodes.size(), 2u);
    partners.insert(j.nodes[1]);
  }
  EXPECT_EQ(partners, (std::set<std::string>{"gpu-3", "gpu-6"}));
  EXPECT_TRUE(p.jobs.empty());
  // Another partner from run to run (the seed), never one in a reservation (run_held would
  // refuse it and the re-check would fail every run).
  std::vector<SlurmNodeInfo> fleet = {sick};
  for (int i = 10; i < 20; ++i) {
    SlurmNodeInfo n = good;
    n.name = "gpu-" + std::to_string(i);
    n.reserved = i % 2 == 0;
    fleet.push_back(n);
  }
  std::set<std::string> seen;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    o.seed = seed;
    const SubmitPlan q = plan_submissions(fleet, {}, o);
    ASSERT_EQ(q.rechecks.size(), 1u);
    const std::string partner = q.rechecks[0].nodes.at(1);
    EXPECT_EQ(std::stoi(partner.substr(4)) % 2, 1) << partner << " is in a reservation";
    seen.insert(partner);
  }
  EXPECT_GT(seen.size(), 2u);
}

TEST(SubmitPlan, caps_rechecks_and_honours_the_node_and_partition_filters) {
  std::vector<SlurmNodeInfo> nodes;
  for (int i = 0; i < 5; ++i) {
    SlurmNodeInfo n = idle("gpu-" + std::to_string(i));
    n.drain = true;
    n.reason = "vigil: ecc";
    nodes.push_back(n);
  }
  SlurmNodeInfo other = idle("cpu-0");
  other.partitions = {"cpu"};
  nodes.push_back(other);
  SubmitOptions o = options();
  o.max_rechecks = 2;
  o.partition = "gpu";
  SubmitPlan p = plan_submissions(nodes, {}, o);
  EXPECT_EQ(p.rechecks.size(), 2u);
  EXPECT_EQ(verdict(p, "cpu-0").why, "not in partition gpu");
  EXPECT_NE(verdict(p, "gpu-4").why.find("--max-rechecks 2"), std::string::npos);
  o.nodes = {"gpu-3", "gpu-9"};
  p = plan_submissions(nodes, {}, o);
  ASSERT_EQ(p.verdicts.size(), 2u);
  EXPECT_EQ(verdict(p, "gpu-9").why, "unknown to slurmctld");
  EXPECT_EQ(p.rechecks.size(), 1u);
}

TEST(SubmitPlan, plans_a_10000_node_fleet_with_a_50000_job_queue_quickly) {
  std::vector<SlurmNodeInfo> nodes;
  for (int i = 0; i < 10000; ++i) nodes.push_back(idle("sim-" + std::to_string(i)));
  std::vector<SlurmJobInfo> jobs;
  for (int i = 0; i < 50000; ++i) {
    const bool vigil = i % 100 == 0;  // 500 vigil jobs, the rest user jobs
    jobs.push_back({static_cast<uint32_t>(i + 1),
                    vigil ? "vigil-check" : "train",
                    "",
                    "RUNNING",
                    true,
                    {"sim-" + std::to_string(vigil ? i / 100 : i % 10000)}});
  }
  const auto start = std::chrono::steady_clock::now();
  const SubmitPlan p = plan_submissions(nodes, jobs, options());
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(p.jobs.size(), 200u);
  EXPECT_EQ(p.verdicts.size(), 10000u);
  size_t busy = 0;
  for (const auto& v : p.verdicts)
    if (v.why.find("already RUNNING") != std::string::npos) ++busy;
  EXPECT_EQ(busy, 500u);
  EXPECT_LT(ms, 2000.0);
  std::printf("planned 10000 nodes / 50000 jobs in %.1f ms\n", ms);
}

TEST(SubmitPlan, shell_join_quotes_only_what_the_shell_would_split) {
  EXPECT_EQ(vigil::submit::shell_join({"sbatch", "--comment=vigil:r1", "a b", "it's"}),
            "sbatch --comment=vigil:r1 'a b' 'it'\\''s'");
}

}  // namespace

TEST(SubmitPlan, a_node_the_repair_ladder_gave_up_on_is_not_rechecked) {
  SlurmNodeInfo replace = idle("n-replace");
  replace.drain = true;
  replace.reason = "vigil: replace remap gpu3 pending (fault back after reboot)";
  SlurmNodeInfo remap = idle("n-remap");
  remap.drain = true;
  remap.reason = "vigil: remap gpu3 pending : reboot issued";
  const SubmitPlan p = plan_submissions({replace, remap}, {}, options());
  EXPECT_EQ(verdict(p, "n-replace").action, PlanStep::kSkip);
  EXPECT_EQ(verdict(p, "n-replace").why,
            "drained by vigil for replacement; not re-checked until a person resumes it");
  ASSERT_EQ(p.rechecks.size(), 1u);  // a rebooted node keeps its re-check
  EXPECT_EQ(p.rechecks[0].nodes, std::vector<std::string>{"n-remap"});
}

// The repair ladder's GPU reset (docs/repair.md "GPU reset"): a node whose drain reads
// "vigil: reset-gpu ..." gets the job script's reset mode (reset, then the re-check); any other
// Vigil drain the plain re-check.
TEST(SubmitPlan, a_node_drained_for_a_gpu_reset_gets_the_reset_mode) {
  SlurmNodeInfo reset = idle("n-reset");
  reset.drain = true;
  reset.reason = "vigil: reset-gpu remap gpu3 pending (1)";
  SlurmNodeInfo plain = idle("n-plain");
  plain.drain = true;
  plain.reason = "vigil: remap gpu3 pending (1) reset-gpu";  // the word elsewhere: no reset
  const SubmitPlan p = plan_submissions({reset, plain}, {}, options());
  ASSERT_EQ(p.rechecks.size(), 2u);
  EXPECT_TRUE(has_arg(p.rechecks[0].argv, "--export=ALL,VIGIL_MODE=reset,VIGIL_RUN_ID=r1"));
  EXPECT_TRUE(has_arg(p.rechecks[1].argv, "--export=ALL,VIGIL_MODE=recheck,VIGIL_RUN_ID=r1"));
  EXPECT_NE(verdict(p, "n-reset").why.find("held, reset-gpu, then the re-check"),
            std::string::npos);
  // Past --max-rechecks the node waiting for its reset goes first, whatever its name.
  SubmitOptions one = options();
  one.max_rechecks = 1;
  reset.name = "z-reset";
  const SubmitPlan capped = plan_submissions({plain, reset}, {}, one);
  ASSERT_EQ(capped.rechecks.size(), 1u);
  EXPECT_EQ(capped.rechecks[0].nodes, std::vector<std::string>{"z-reset"});
}

// NVLink domain jobs (issue 27 item 2): the node jobs of a run that share an NVLink domain and a
// partition get one job together, sorted, with a rank per GPU of a tray.
TEST(SubmitPlan, nodes_of_one_nvlink_domain_share_one_domain_job) {
  SubmitOptions o = options();
  for (const char* n : {"gb-01", "gb-02", "gb-03", "gb-04"}) o.nvlink_domain_of[n] = "rackA";
  o.nvlink_domain_of["gb-05"] = o.nvlink_domain_of["gb-06"] = "rackB";
  o.nvlink_domain_of["gb-07"] = "rackC";
  std::vector<SlurmNodeInfo> nodes;
  for (const char* n : {"gb-04", "gb-02", "gb-01", "gb-03", "gb-05", "gb-06", "gb-07", "gpu-9"})
    nodes.push_back(idle(n));
  const SubmitPlan p = plan_submissions(nodes, {}, o);
  std::vector<const vigil::submit::PlannedCommand*> domain;
  for (const auto& j : p.jobs)
    if (j.kind == "domain") domain.push_back(&j);
  ASSERT_EQ(domain.size(), 2u);
  EXPECT_EQ(domain[0]->nodes, (std::vector<std::string>{"gb-01", "gb-02", "gb-03", "gb-04"}));
  const auto& argv = domain[0]->argv;
  for (const char* a :
       {"--nodelist=gb-01,gb-02,gb-03,gb-04", "--nodes=4", "--ntasks-per-node=4", "--partition=gpu",
        "--exclusive", "--export=ALL,VIGIL_MODE=domain,VIGIL_RUN_ID=r1"})
    EXPECT_TRUE(has_arg(argv, a)) << a << " in " << vigil::submit::shell_join(argv);
  EXPECT_EQ(domain[1]->nodes, (std::vector<std::string>{"gb-05", "gb-06"}));
  EXPECT_NE(verdict(p, "gb-02").why.find("+ NVLink domain rackA job with gb-01,gb-03,gb-04"),
            std::string::npos)
      << verdict(p, "gb-02").why;
  EXPECT_NE(verdict(p, "gb-07").why.find("no NVLink domain partner this run"), std::string::npos);
  EXPECT_EQ(verdict(p, "gpu-9").why, "node job");  // no domain known: a node job only
  EXPECT_EQ(p.jobs.size(), 8u + 2u);
  // Every sbatch carries the deadline that keeps a job whose node was drained from pending
  // forever: its own time limit (30:00) plus --max-pending-s (7200).
  EXPECT_TRUE(has_arg(argv, "--deadline=now+9000")) << vigil::submit::shell_join(argv);
  // A domain larger than --domain-nodes is split; a last single node gets no domain job.
  o.domain_nodes = 3;
  const SubmitPlan split = plan_submissions(nodes, {}, o);
  std::vector<std::vector<std::string>> groups;
  for (const auto& j : split.jobs)
    if (j.kind == "domain") groups.push_back(j.nodes);
  EXPECT_EQ(groups, (std::vector<std::vector<std::string>>{{"gb-01", "gb-02", "gb-03"},
                                                           {"gb-05", "gb-06"}}));
  EXPECT_NE(verdict(split, "gb-04").why.find("no NVLink domain partner this run"),
            std::string::npos);
}

// A tray drained for its NVLink domain is re-checked over that domain: its partner is an idle
// tray of the same domain; without the domain map it waits and the table says why.
TEST(SubmitPlan, an_nvlink_domain_drain_is_rechecked_with_a_partner_of_its_domain) {
  SlurmNodeInfo sick = idle("gb-02");
  sick.drain = true;
  sick.reason = "vigil: nvl-domain 4-node NVLink domain job: slow with 3 partners";
  SubmitOptions o = options();
  o.nodes = {"gb-02"};
  o.nvlink_domain_of = {{"gb-02", "rackA"}, {"gb-03", "rackA"}, {"gb-11", "rackB"}};
  SubmitPlan p = plan_submissions({idle("gb-11"), idle("gb-03"), sick}, {}, o);
  EXPECT_TRUE(p.jobs.empty());
  ASSERT_EQ(p.rechecks.size(), 1u);  // held like every re-check, with its partner
  EXPECT_EQ(p.rechecks[0].kind, "domain-recheck");
  EXPECT_EQ(p.rechecks[0].nodes, (std::vector<std::string>{"gb-02", "gb-03"}));
  EXPECT_EQ(p.rechecks[0].hold->partners, (std::vector<std::string>{"gb-03"}));
  EXPECT_TRUE(has_arg(p.rechecks[0].argv,
                      "--export=ALL,VIGIL_MODE=domain-recheck,VIGIL_RUN_ID=r1,"
                      "VIGIL_RECHECK_NODE=gb-02,VIGIL_RANKS_PER_NODE=4"));
  o.nvlink_domain_of.clear();
  p = plan_submissions({idle("gb-11"), idle("gb-03"), sick}, {}, o);
  EXPECT_TRUE(p.rechecks.empty());
  EXPECT_NE(verdict(p, "gb-02").why.find("its NVLink domain is not known"), std::string::npos)
      << verdict(p, "gb-02").why;
}

// --nvlink-domains FILE: a '<node> <domain>' map; a bad line is an error naming the option, the
// file and the line, and vigil-submit submits nothing then.
TEST(SubmitPlan, the_nvlink_domain_map_file_is_read_strictly) {
  char tmpl[] = "/tmp/vigil-domains-XXXXXX";
  const int fd = ::mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  const std::string good = "# rack map\ngb-01 rackA\ngb-02 rackA  # tray 2\n\ngb-10 rackB\n";
  ASSERT_EQ(::write(fd, good.data(), good.size()), static_cast<ssize_t>(good.size()));
  auto m = vigil::submit::load_nvlink_domains(tmpl, "");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(*m, (std::map<std::string, std::string>{
                    {"gb-01", "rackA"}, {"gb-02", "rackA"}, {"gb-10", "rackB"}}));
  const std::string bad = "gb-11\n";
  ASSERT_EQ(::write(fd, bad.data(), bad.size()), static_cast<ssize_t>(bad.size()));
  ::close(fd);
  m = vigil::submit::load_nvlink_domains(tmpl, "");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().to_string().find(std::string(tmpl) + ":6"), std::string::npos)
      << m.error().to_string();
  EXPECT_NE(m.error().to_string().find("expected '<node> <domain>'"), std::string::npos);
  EXPECT_NE(m.error().to_string().find("--nvlink-domains"), std::string::npos);
  ::unlink(tmpl);
  EXPECT_FALSE(vigil::submit::load_nvlink_domains("/nonexistent/domains.txt", "").ok());
}

// Slurm's --time forms (sbatch(1)), which the deadline adds to the wait; anything else is refused
// by vigil-submit before it plans.
TEST(SubmitPlan, slurm_time_limits_in_every_form_slurm_takes) {
  using vigil::submit::slurm_time_limit_s;
  EXPECT_EQ(slurm_time_limit_s("30"), 1800);
  EXPECT_EQ(slurm_time_limit_s("30:00"), 1800);
  EXPECT_EQ(slurm_time_limit_s("1:30:00"), 5400);
  EXPECT_EQ(slurm_time_limit_s("2-0"), 2 * 86400);
  EXPECT_EQ(slurm_time_limit_s("2-01:30"), 2 * 86400 + 3600 + 1800);
  EXPECT_EQ(slurm_time_limit_s("1-00:00:10"), 86400 + 10);
  for (const char* bad : {"", "2h", "1:2:3:4", "-5", "a-1", "1-", ":30", "30:"})
    EXPECT_FALSE(slurm_time_limit_s(bad)) << bad;
  SubmitOptions o = options();
  o.time_limit = "1-00:00:00";
  o.max_pending_s = 600;
  auto p = plan_submissions({idle("gpu-0")}, {}, o);
  EXPECT_TRUE(has_arg(p.jobs[0].argv, "--deadline=now+87000"))
      << vigil::submit::shell_join(p.jobs[0].argv);
  o.max_pending_s = 0;  // forever: no deadline
  p = plan_submissions({idle("gpu-0")}, {}, o);
  for (const auto& a : p.jobs[0].argv) EXPECT_NE(a.rfind("--deadline", 0), 0u) << a;
}
