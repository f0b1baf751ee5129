// Policy engine: table-driven, injected clock, no I/O.
#include "vigil/drainer/policy.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "fake_clock.h"
#include "fakes.h"
#include "vigil/drainer/intent.h"
#include "vigil/drainer/metrics.h"

namespace vigil::drainer {
namespace {

using testing::FakeClock;
using testing::make_check;
using testing::make_report;
constexpr auto P = Status::kPass;
constexpr auto W = Status::kWarn;
constexpr auto F = Status::kFail;
constexpr auto E = Status::kError;
constexpr auto S = Status::kSkipped;

enum class Slurm { kIdle, kDown, kFail, kMaint, kOtherDrain, kUnknown };

struct Step {
  std::vector<std::pair<std::string, Status>> checks;
  Action want_action;
  NodeState want_state;
  Slurm slurm = Slurm::kIdle;
};

struct Case {
  std::string name;
  std::vector<Step> steps;
  bool dry_run = false;
};

// Runs the steps against one node; Slurm follows the actions (drain sets DRAIN + reason).
void run_case(const Case& c) {
  FakeClock clock;
  PolicyConfig pol = default_policy();  // nccl_allreduce_ib: drain_after 3; nvml_ecc fatal
  pol.defaults = {2, 2};
  PolicyEngine eng(pol, BreakerConfig{}, c.dry_run, clock);
  std::optional<NodeRecord> record;
  BreakerState breaker;
  slurm::SlurmNodeInfo info;
  info.name = "gpu-1";
  info.state = "IDLE";
  info.partitions = {"gpu"};
  int i = 0;
  for (const auto& st : c.steps) {
    SCOPED_TRACE(c.name + " step " + std::to_string(i));
    std::vector<CheckResult> checks;
    for (const auto& [name, s] : st.checks) checks.push_back(make_check(name, s, 1, 0));
    auto r = make_report("gpu-1", "run-" + std::to_string(i++), checks);
    slurm::SlurmNodeInfo now = info;
    switch (st.slurm) {
      case Slurm::kDown:
        now.down = true;
        now.state = "DOWN";
        break;
      case Slurm::kFail:
        now.fail = true;
        break;
      case Slurm::kMaint:
        now.maint = true;
        break;
      case Slurm::kOtherDrain:
        now.drain = true;
        now.reason = "admin: fan replaced";
        break;
      default:
        break;
    }
    const slurm::SlurmNodeInfo* sp = st.slurm == Slurm::kUnknown ? nullptr : &now;
    Decision d = eng.on_report(record ? &*record : nullptr, r, sp, breaker, 4);
    EXPECT_EQ(to_string(d.action), to_string(st.want_action)) << d.why;
    EXPECT_EQ(to_string(d.after), to_string(st.want_state)) << d.why;
    EXPECT_EQ(d.record.state, d.after);
    record = d.record;
    breaker = d.breaker;
    if (d.action == Action::kDrain) {
      info.drain = true;
      info.reason = d.reason;
      clock.advance(10);
    } else if (d.action == Action::kResume) {
      info.drain = false;
      info.reason.clear();
    }
    clock.advance(60);
  }
}

TEST(PolicyEngine, table_of_report_sequences) {
  const std::string ecc = "nvml_ecc", nccl = "nccl_allreduce_ib", temp = "nvml_pcie";
  const std::vector<Case> cases = {
      {"fatal check drains on the first fail", {{{{ecc, F}}, Action::kDrain, NodeState::kDrained}}},
      {"noisy check drains only after 3 consecutive fails",
       {{{{nccl, F}}, Action::kNone, NodeState::kWarn},
        {{{nccl, F}}, Action::kNone, NodeState::kWarn},
        {{{nccl, F}}, Action::kDrain, NodeState::kDrained}}},
      {"a pass in between resets the fail streak",
       {{{{nccl, F}}, Action::kNone, NodeState::kWarn},
        {{{nccl, F}}, Action::kNone, NodeState::kWarn},
        {{{nccl, P}}, Action::kNone, NodeState::kHealthy},
        {{{nccl, F}}, Action::kNone, NodeState::kWarn},
        {{{nccl, F}}, Action::kNone, NodeState::kWarn}}},
      {"warn never drains",
       {{{{ecc, W}}, Action::kNone, NodeState::kWarn},
        {{{ecc, W}}, Action::kNone, NodeState::kWarn},
        {{{ecc, W}}, Action::kNone, NodeState::kWarn},
        {{{ecc, W}}, Action::kNone, NodeState::kWarn}}},
      {"error and skipped never drain",
       {{{{ecc, E}}, Action::kNone, NodeState::kError},
        {{{ecc, E}, {temp, S}}, Action::kNone, NodeState::kError},
        {{{ecc, S}}, Action::kNone, NodeState::kHealthy}}},
      {"error neither extends nor resets a fail streak",
       {{{{nccl, F}}, Action::kNone, NodeState::kWarn},
        {{{nccl, E}}, Action::kNone, NodeState::kError},
        {{{nccl, F}}, Action::kNone, NodeState::kWarn},
        {{{nccl, F}}, Action::kDrain, NodeState::kDrained}}},
      {"resume after resume_after consecutive passes",
       {{{{ecc, F}}, Action::kDrain, NodeState::kDrained},
        {{{ecc, P}}, Action::kNone, NodeState::kDrained},
        {{{ecc, P}}, Action::kResume, NodeState::kHealthy},
        {{{ecc, P}}, Action::kNone, NodeState::kHealthy}}},
      {"a fail during the resume streak restarts it",
       {{{{ecc, F}}, Action::kDrain, NodeState::kDrained},
        {{{ecc, P}}, Action::kNone, NodeState::kDrained},
        {{{ecc, F}}, Action::kNone, NodeState::kDrained},
        {{{ecc, P}}, Action::kNone, NodeState::kDrained},
        {{{ecc, P}}, Action::kResume, NodeState::kHealthy}}},
      {"resume needs the driving check itself to pass",
       {{{{ecc, F}}, Action::kDrain, NodeState::kDrained},
        {{{temp, P}}, Action::kNone, NodeState::kDrained},
        {{{temp, P}}, Action::kNone, NodeState::kDrained},
        {{{temp, P}, {ecc, S}}, Action::kNone, NodeState::kDrained}}},
      {"never drains a node drained by another owner",
       {{{{ecc, F}}, Action::kNone, NodeState::kDrained, Slurm::kOtherDrain},
        {{{ecc, P}}, Action::kNone, NodeState::kDrained, Slurm::kOtherDrain},
        {{{ecc, P}}, Action::kNone, NodeState::kDrained, Slurm::kOtherDrain}}},
      {"never touches a DOWN node", {{{{ecc, F}}, Action::kNone, NodeState::kWarn, Slurm::kDown}}},
      {"never touches a FAIL node", {{{{ecc, F}}, Action::kNone, NodeState::kWarn, Slurm::kFail}}},
      {"never touches a MAINT node",
       {{{{ecc, F}}, Action::kNone, NodeState::kWarn, Slurm::kMaint}}},
      {"resume is deferred while the node is DOWN",
       {{{{ecc, F}}, Action::kDrain, NodeState::kDrained},
        {{{ecc, P}}, Action::kNone, NodeState::kDrained, Slurm::kDown},
        {{{ecc, P}}, Action::kNone, NodeState::kDrained, Slurm::kDown},
        {{{ecc, P}}, Action::kResume, NodeState::kHealthy}}},
      {"drains when Slurm's view is unknown (the sink re-checks)",
       {{{{ecc, F}}, Action::kDrain, NodeState::kDrained, Slurm::kUnknown}}},
      {"a node already drained by vigil gets no second drain",
       {{{{ecc, F}}, Action::kDrain, NodeState::kDrained},
        {{{ecc, F}}, Action::kNone, NodeState::kDrained}}},
      {"dry-run: would drain, never drains",
       {{{{ecc, F}}, Action::kWouldDrain, NodeState::kWouldDrain},
        {{{ecc, F}}, Action::kWouldDrain, NodeState::kWouldDrain},
        {{{ecc, P}}, Action::kNone, NodeState::kHealthy}},
       true},
  };
  for (const auto& c : cases) run_case(c);
}

struct Fixture {
  FakeClock clock;
  PolicyConfig pol = default_policy();
  slurm::SlurmNodeInfo idle(const std::string& n) {
    slurm::SlurmNodeInfo i;
    i.name = n;
    i.state = "IDLE";
    i.partitions = {"gpu"};
    return i;
  }
};

TEST(PolicyEngine, vigil_drain_taken_over_by_admin_is_never_resumed) {
  Fixture f;
  PolicyEngine eng(f.pol, {}, false, f.clock);
  auto info = f.idle("gpu-1");
  auto d = eng.on_report(nullptr, make_report("gpu-1", "a", {make_check("nvml_ecc", F, 1, 0)}),
                         &info, {}, 4);
  ASSERT_EQ(d.action, Action::kDrain);
  info.drain = true;
  info.reason = "admin: keep out, RMA";  // admin overwrote the reason
  auto s = d.record;
  for (int i = 0; i < 5; ++i) {
    auto d2 = eng.on_report(
        &s, make_report("gpu-1", "p" + std::to_string(i), {make_check("nvml_ecc", P, 0, 0)}), &info,
        {}, 4);
    EXPECT_EQ(d2.action, Action::kNone);
    EXPECT_FALSE(d2.record.drained_by_vigil);
    s = d2.record;
  }
}

// A report that arrives while the node is undrained inside Vigil's own hold (the Prolog of the
// held re-check's job, docs/recheck.md): the drain stays Vigil's, and no pass resumes a node that
// Slurm shows undrained; without the hold the same view is a drain lifted outside Vigil.
TEST(PolicyEngine, a_node_undrained_inside_its_hold_stays_vigils) {
  Fixture f;
  PolicyEngine eng(f.pol, {}, false, f.clock);
  auto info = f.idle("gpu-1");
  auto d = eng.on_report(nullptr, make_report("gpu-1", "a", {make_check("nvml_ecc", F, 1, 0)}),
                         &info, {}, 4);
  ASSERT_EQ(d.action, Action::kDrain);
  info.reserved = true;  // held: undrained for the seconds before its allocation
  info.vigil_hold = true;
  auto held = eng.on_report(&d.record, make_report("gpu-1", "b", {make_check("nvml_ecc", P, 0, 0)}),
                            &info, {}, 4);
  EXPECT_TRUE(held.record.drained_by_vigil) << held.why;
  EXPECT_EQ(held.record.reason, d.reason);
  info.vigil_hold = false;
  auto lifted = eng.on_report(
      &d.record, make_report("gpu-1", "c", {make_check("nvml_ecc", P, 0, 0)}), &info, {}, 4);
  EXPECT_FALSE(lifted.record.drained_by_vigil) << lifted.why;
}

// The check's remedy (docs/xid.md) travels with the failing figures into the node's state,
// the Node annotation and /v1/nodes: what the repair ladder will act on.
TEST(PolicyEngine, the_failing_summary_carries_the_checks_remedy) {
  Fixture f;
  PolicyEngine eng(f.pol, {}, false, f.clock);
  auto info = f.idle("gpu-1");
  CheckResult xid = make_check("kmsg_xid", F, 1, 0);
  xid.remedy = Remedy::kReboot;
  auto d = eng.on_report(nullptr, make_report("gpu-1", "a", {xid}), &info, {}, 4);
  ASSERT_EQ(d.action, Action::kDrain);
  ASSERT_EQ(d.record.failing.size(), 1u);
  EXPECT_EQ(d.record.failing[0].remedy, Remedy::kReboot);
  auto plain = eng.on_report(nullptr, make_report("gpu-2", "a", {make_check("nvml_ecc", F, 1, 0)}),
                             &info, {}, 4);
  ASSERT_EQ(plain.record.failing.size(), 1u);
  EXPECT_FALSE(plain.record.failing[0].remedy);
}

TEST(PolicyEngine, a_report_without_a_known_sku_keeps_the_node_in_its_sku_group) {
  Fixture f;
  PolicyEngine eng(f.pol, {}, false, f.clock);
  auto info = f.idle("gpu-1");
  auto d = eng.on_report(nullptr, make_report("gpu-1", "a", {make_check("nvml_ecc", P)}, "B200"),
                         &info, {}, 4);
  ASSERT_EQ(d.record.sku, "B200");
  auto d2 = eng.on_report(
      &d.record, make_report("gpu-1", "b", {make_check("nvml_ecc", P)}, "unknown"), &info, {}, 4);
  EXPECT_EQ(d2.record.sku, "B200");
  auto d3 = eng.on_report(
      nullptr, make_report("gpu-2", "a", {make_check("nvml_ecc", P)}, "unknown"), &info, {}, 4);
  EXPECT_EQ(d3.record.sku, "unknown");  // nothing better known
}

TEST(PolicyEngine, adopts_a_vigil_drain_it_has_no_record_of_and_resumes_it) {
  Fixture f;
  PolicyEngine eng(f.pol, {}, false, f.clock);
  auto info = f.idle("gpu-3");
  info.drain = true;
  info.reason = "vigil: ecc gpu0 dbe 1>0count";
  auto d =
      eng.on_report(nullptr, make_report("gpu-3", "a", {make_check("nvml_ecc", P)}), &info, {}, 4);
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_TRUE(d.record.drained_by_vigil);
  auto d2 = eng.on_report(&d.record, make_report("gpu-3", "b", {make_check("nvml_ecc", P)}), &info,
                          {}, 4);
  EXPECT_EQ(d2.action, Action::kResume);
}

TEST(PolicyEngine, fatal_fault_code_drains_a_noisy_check_at_once) {
  Fixture f;
  f.pol.fatal_fault_codes = {"VIGIL-NCCL-HANG"};
  PolicyEngine eng(f.pol, {}, false, f.clock);
  auto info = f.idle("gpu-1");
  auto d = eng.on_report(
      nullptr,
      make_report("gpu-1", "a",
                  {make_check("nccl_allreduce_ib", F, 1, 0, "GB/s", "VIGIL-NCCL-HANG")}),
      &info, {}, 4);
  EXPECT_EQ(d.action, Action::kDrain);
  auto d2 = eng.on_report(
      nullptr,
      make_report("gpu-2", "a",
                  {make_check("nccl_allreduce_ib", F, 1, 0, "GB/s", "VIGIL-NCCL-LOW")}),
      &info, {}, 4);
  EXPECT_EQ(d2.action, Action::kNone);
}

TEST(PolicyEngine, a_localized_fabric_fail_drains_after_one_job_a_pair_fail_after_three) {
  Fixture f;
  PolicyEngine eng(default_policy(), {}, false, f.clock);
  auto info = f.idle("gpu-1");
  auto localized = eng.on_report(
      nullptr,
      make_report("gpu-1", "a",
                  {make_check("fabric_allreduce_ib", F, 1, 0, "GB/s", "VIGIL-FABRIC-LOCALIZED")}),
      &info, {}, 4);
  EXPECT_EQ(localized.action, Action::kDrain) << localized.why;
  auto tray = eng.on_report(nullptr,
                            make_report("gpu-3", "a",
                                        {make_check("domain_allreduce_nvlink", F, 1, 0, "GB/s",
                                                    "VIGIL-DOMAIN-LOCALIZED")}),
                            &info, {}, 4);
  EXPECT_EQ(tray.action, Action::kDrain) << tray.why;  // the same rounds, in an NVLink domain
  auto pair = eng.on_report(
      nullptr,
      make_report("gpu-2", "a",
                  {make_check("fabric_allreduce_ib", F, 1, 0, "GB/s", "VIGIL-FABRIC-BUSBW")}),
      &info, {}, 4);
  EXPECT_EQ(pair.action, Action::kNone) << pair.why;
}

TEST(PolicyEngine, drain_reason_is_the_vigil_reason_of_the_most_fatal_check) {
  Fixture f;
  PolicyEngine eng(f.pol, {}, false, f.clock);
  auto info = f.idle("gpu-1");
  NodeRecord s;
  // nccl has failed twice already; now both fail: ecc (fatal) must lead the reason.
  s.node = "gpu-1";
  s.checks["nccl_allreduce_ib"].consecutive_fails = 2;
  auto ecc = make_check("nvml_ecc", F, 1, 0);
  auto d = eng.on_report(
      &s, make_report("gpu-1", "a", {make_check("nccl_allreduce_ib", F, 100, 180, "GB/s"), ecc}),
      &info, {}, 4);
  ASSERT_EQ(d.action, Action::kDrain);
  EXPECT_EQ(d.reason, drain_reason(ecc));
  EXPECT_TRUE(d.reason.starts_with("vigil:"));
  EXPECT_EQ(d.driving_checks, (std::vector<std::string>{"nvml_ecc", "nccl_allreduce_ib"}));
}

// Circuit breaker.
struct BreakerRun {
  FakeClock clock;
  PolicyConfig pol = default_policy();
  BreakerState b;
  std::vector<Action> run(const BreakerConfig& bc, int nodes, int group_size, int64_t step_s = 1) {
    PolicyEngine eng(pol, bc, false, clock);
    std::vector<Action> out;
    for (int i = 0; i < nodes; ++i) {
      slurm::SlurmNodeInfo info;
      info.name = "n" + std::to_string(i);
      info.partitions = {"gpu"};
      auto d =
          eng.on_report(nullptr, make_report(info.name, "r", {make_check("nvml_ecc", F, 1, 0)}),
                        &info, b, group_size);
      b = d.breaker;
      out.push_back(d.action);
      clock.advance(step_s);
    }
    return out;
  }
};

TEST(CircuitBreaker, absolute_cap_stops_mass_drains_and_stays_open) {
  BreakerRun r;
  auto a = r.run({3, 100, 3600}, 10, 1000);
  EXPECT_EQ(std::count(a.begin(), a.end(), Action::kDrain), 3);
  EXPECT_EQ(std::count(a.begin(), a.end(), Action::kBreakerBlocked), 7);
  EXPECT_TRUE(r.b.open);
  EXPECT_NE(r.b.why.find("max_drains 3"), std::string::npos) << r.b.why;
  // Hours later the window is empty, but only an operator closes the breaker.
  r.clock.advance(10 * 3600);
  auto later = r.run({3, 100, 3600}, 1, 1000);
  EXPECT_EQ(later[0], Action::kBreakerBlocked);
}

TEST(CircuitBreaker, percent_cap_per_partition) {
  BreakerRun r;
  auto a = r.run({100, 20, 3600}, 10, 10);  // 20% of 10 nodes = 2
  EXPECT_EQ(std::count(a.begin(), a.end(), Action::kDrain), 2);
  EXPECT_TRUE(r.b.open);
}

TEST(CircuitBreaker, percent_cap_always_allows_one_node_in_small_groups) {
  BreakerRun r;
  auto a = r.run({100, 10, 3600}, 1, 4);  // 10% of 4 nodes rounds to 0: still one allowed
  EXPECT_EQ(a[0], Action::kDrain);
  EXPECT_FALSE(r.b.open);
}

TEST(CircuitBreaker, sliding_window_forgets_old_drains) {
  BreakerRun r;
  auto a = r.run({2, 100, 100}, 4, 1000, 60);  // drains at t=0,60,120,180; window 100 s
  EXPECT_EQ(std::count(a.begin(), a.end(), Action::kDrain), 4);
  EXPECT_FALSE(r.b.open);
}

TEST(CircuitBreaker, dry_run_does_not_count_towards_the_cap) {
  FakeClock clock;
  PolicyEngine eng(default_policy(), {1, 100, 3600}, true, clock);
  BreakerState b;
  for (int i = 0; i < 5; ++i) {
    auto d = eng.on_report(
        nullptr, make_report("n" + std::to_string(i), "r", {make_check("nvml_ecc", F, 1, 0)}),
        nullptr, b, 100);
    EXPECT_EQ(d.action, Action::kWouldDrain);
    b = d.breaker;
  }
  EXPECT_FALSE(b.open);
}

TEST(PolicyEngine, stale_after_configured_silence_but_drained_nodes_stay_drained) {
  FakeClock clock;
  PolicyConfig pol = default_policy();
  pol.staleness_s = 600;
  PolicyEngine eng(pol, {}, false, clock);
  auto d =
      eng.on_report(nullptr, make_report("a", "1", {make_check("nvml_ecc", P)}), nullptr, {}, 4);
  auto dd = eng.on_report(nullptr, make_report("b", "1", {make_check("nvml_ecc", F, 1, 0)}),
                          nullptr, {}, 4);
  ASSERT_EQ(dd.action, Action::kDrain);
  clock.advance(600);
  EXPECT_FALSE(eng.on_tick(d.record, {}));
  clock.advance(1);
  auto st = eng.on_tick(d.record, {});
  ASSERT_TRUE(st);
  EXPECT_EQ(st->record.state, NodeState::kStale);
  EXPECT_FALSE(eng.on_tick(st->record, {}));  // only once
  EXPECT_FALSE(eng.on_tick(dd.record, {}));
  // A new report makes it fresh again.
  auto back = eng.on_report(&st->record, make_report("a", "2", {make_check("nvml_ecc", P)}),
                            nullptr, {}, 4);
  EXPECT_EQ(back.after, NodeState::kHealthy);
}

TEST(PolicyEngine, operator_resume_lifts_only_vigil_drains) {
  FakeClock clock;
  PolicyEngine eng(default_policy(), {}, false, clock);
  slurm::SlurmNodeInfo info;
  info.name = "a";
  auto d = eng.on_report(nullptr, make_report("a", "1", {make_check("nvml_ecc", F, 1, 0)}), &info,
                         {}, 4);
  ASSERT_EQ(d.action, Action::kDrain);
  info.drain = true;
  info.reason = d.reason;
  EXPECT_FALSE(d.by_operator);
  auto r = eng.on_operator_resume(d.record, &info);
  EXPECT_EQ(r.action, Action::kResume);
  EXPECT_TRUE(r.by_operator);  // the one decision whose resume may lift a DOWN node's drain
  EXPECT_FALSE(r.record.drained_by_vigil);
  info.reason = "admin: do not touch";
  auto r2 = eng.on_operator_resume(d.record, &info);
  EXPECT_EQ(r2.action, Action::kNone);
  EXPECT_NE(r2.why.find("another owner"), std::string::npos);
}

// Every drainer enum's one name table lists each value once, in the enum's order, with a
// distinct spelling: a value added to an enum and not to its table fails here.
template <typename E, size_t N>
void expect_complete(const EnumName<E> (&names)[N], const char* what) {
  std::set<std::string_view> spellings;
  for (size_t i = 0; i < N; ++i) {
    EXPECT_EQ(static_cast<size_t>(names[i].value), i) << what << " " << names[i].name;
    EXPECT_FALSE(names[i].name.empty()) << what << " " << i;
    EXPECT_TRUE(spellings.insert(names[i].name).second) << what << " " << names[i].name;
  }
}

// The decisions the tick, the repair ladder and the Slurm sink make, as values.
TEST(RecordChange, a_repair_step_says_its_action_and_a_redrain_drains_again) {
  NodeRecord prev;
  prev.node = "gpu-1";
  prev.state = NodeState::kDrained;
  NodeRecord next = prev;
  next.reason = "vigil: ecc 1 DBE";
  next.driving_checks = {"nvml_ecc"};
  BreakerState breaker;
  breaker.open = true;
  const Decision reboot = repair_decision(prev, next, {Action::kReboot, "reboot 1 of 2"}, breaker);
  EXPECT_EQ(reboot.action, Action::kReboot);
  EXPECT_EQ(reboot.record.last_action, Action::kReboot);
  EXPECT_EQ(reboot.record.note, "reboot 1 of 2");
  EXPECT_EQ(reboot.why, "reboot 1 of 2");
  EXPECT_EQ(reboot.reason, "vigil: ecc 1 DBE");
  EXPECT_EQ(reboot.driving_checks, std::vector<std::string>{"nvml_ecc"});
  EXPECT_TRUE(reboot.breaker.open);
  EXPECT_EQ(repair_decision(prev, next, {Action::kRedrain, "timed out"}, breaker).action,
            Action::kDrain);
  const Decision back = repair_decision(prev, next, {Action::kRebooted, "back"}, breaker);
  EXPECT_EQ(back.action, Action::kNone);
  EXPECT_EQ(back.record.last_action, Action::kNone);
}

TEST(RecordChange, an_undone_drain_is_no_longer_vigils_nor_counted_against_a_part) {
  NodeRecord s;
  s.node = "gpu-1";
  s.state = NodeState::kDrained;
  s.drained_by_vigil = true;
  s.drained_unix = 100;
  s.reason = "vigil: ecc 1 DBE";
  s.driving_checks = {"nvml_ecc"};
  s.parts = {PartRecord{3, "S3", "GPU-3", {50, 100}}};
  s.repair.part_drain_unix = 100;
  s.repair.stage = RepairStage::kRebooting;
  const Decision d = undone_drain(s, NodeState::kUnknown, "node is DOWN in Slurm", {});
  EXPECT_EQ(d.before, NodeState::kDrained);
  EXPECT_EQ(d.after, NodeState::kUnknown);
  EXPECT_EQ(d.record.state, NodeState::kUnknown);
  EXPECT_FALSE(d.record.drained_by_vigil);
  EXPECT_EQ(d.record.drained_unix, 0);
  EXPECT_EQ(d.record.reason, "");
  EXPECT_EQ(d.record.parts[0].drains, std::vector<int64_t>{50});
  EXPECT_EQ(d.record.repair.stage, RepairStage::kNone);
  EXPECT_EQ(d.record.last_action, Action::kDrainSkipped);
  EXPECT_EQ(d.record.note, "drain not applied: node is DOWN in Slurm");
  EXPECT_EQ(d.why, d.record.note);
  EXPECT_EQ(d.driving_checks, std::vector<std::string>{"nvml_ecc"});
  EXPECT_EQ(d.action, Action::kNone);
}

TEST(Vocabulary, every_name_table_is_complete_and_unambiguous) {
  expect_complete(kActionNames, "Action");
  EXPECT_EQ(static_cast<size_t>(Action::kBreakerReset) + 1, std::size(kActionNames));
  expect_complete(kNodeStateNames, "NodeState");
  EXPECT_EQ(static_cast<size_t>(NodeState::kUnknown) + 1, std::size(kNodeStateNames));
  expect_complete(kIntentActionNames, "IntentAction");
  EXPECT_EQ(static_cast<size_t>(IntentAction::kRedrain) + 1, std::size(kIntentActionNames));
  expect_complete(kRepairStageNames, "RepairStage");
  EXPECT_EQ(static_cast<size_t>(RepairStage::kResetting) + 1, std::size(kRepairStageNames));
  expect_complete(kNodeMappingNames, "NodeMapping");
  EXPECT_EQ(static_cast<size_t>(NodeMapping::kPodLookup) + 1, std::size(kNodeMappingNames));
  expect_complete(Metrics::kOutcomeNames, "Metrics::Outcome");
  EXPECT_EQ(static_cast<size_t>(Metrics::Outcome::kDryRun) + 1, std::size(Metrics::kOutcomeNames));
}

}  // namespace
}  // namespace vigil::drainer
