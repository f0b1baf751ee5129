#include "vigil/checks/runner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <stdexcept>
#include <thread>

namespace vigil {

namespace {

enum class Behaviour { kMeasure, kHang, kCrash, kThrow, kNotApplicable };

class FakeCheck final : public Check {
 public:
  FakeCheck(std::string name, Behaviour b) : name_(std::move(name)), b_(b) {}
  std::string_view name() const override { return name_; }
  std::string_view short_name() const override { return "fake"; }
  std::chrono::seconds timeout() const override { return std::chrono::seconds(1); }
  Applies applies(const CheckContext&) const override {
    return b_ == Behaviour::kNotApplicable ? Applies{false, "no widget on this node"} : Applies{};
  }
  CheckResult run(const CheckContext& ctx) override {
    switch (b_) {
      case Behaviour::kHang:
        std::this_thread::sleep_for(std::chrono::seconds(30));
        break;
      case Behaviour::kCrash:
        std::raise(SIGSEGV);
        break;
      case Behaviour::kThrow:
        throw std::runtime_error("widget exploded");
      default:
        break;
    }
    CheckResult r;
    r.check = name_;
    add_measurement(r, ctx, "busbw", 151, "GB/s");
    finalize(r, "VIGIL-TEST");
    return r;
  }

 private:
  std::string name_;
  Behaviour b_;
};

SkuConfig sku_with_busbw_threshold() {
  SkuConfig s;
  s.name = "TEST";
  s.thresholds["measure"]["busbw"] = Threshold{Op::kGe, 180, 189, "GB/s", {}, false, {}};
  return s;
}

}  // namespace

// A check's short name and time box are stated once, in the check catalog; one outside it (a
// site's or a test's) is called by its name and gets 60 s.
class NamedOnly final : public Check {
 public:
  explicit NamedOnly(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  Applies applies(const CheckContext&) const override { return {}; }
  CheckResult run(const CheckContext&) override { return {}; }

 private:
  std::string name_;
};

TEST(Runner, short_name_and_timeout_come_from_the_check_catalog) {
  EXPECT_EQ(NamedOnly("nvml_row_remap").short_name(), "remap");
  EXPECT_EQ(NamedOnly("gpu_memtest").timeout(), std::chrono::seconds(180));
  EXPECT_EQ(NamedOnly("fabric_allreduce_ib").timeout(), std::chrono::seconds(660));
  EXPECT_EQ(NamedOnly("site_widget").short_name(), "site_widget");
  EXPECT_EQ(NamedOnly("site_widget").timeout(), std::chrono::seconds(60));
}

TEST(Runner, isolated_check_result_crosses_the_process_boundary) {
  SkuConfig sku = sku_with_busbw_threshold();
  CheckContext ctx;
  ctx.sku = &sku;
  FakeCheck c("measure", Behaviour::kMeasure);
  CheckResult r = run_isolated(c, ctx);
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "busbw 151<180GB/s");
  EXPECT_EQ(r.fault_code, "VIGIL-TEST-BUSBW");
  EXPECT_EQ(r.short_name, "fake");  // stamped by the runner from the check's own short_name()
  ASSERT_EQ(r.measurements.size(), 1u);
  ASSERT_TRUE(r.measurements[0].threshold.has_value());
}

TEST(Runner, unknown_sku_reports_the_figure_without_failing) {
  FakeCheck c("measure", Behaviour::kMeasure);
  CheckResult r = run_isolated(c, CheckContext{});
  EXPECT_EQ(r.status, Status::kPass);
  EXPECT_FALSE(r.measurements.at(0).threshold.has_value());
}

TEST(Runner, hung_check_is_an_error_after_its_timeout_and_the_run_continues) {
  std::vector<std::unique_ptr<Check>> checks;
  checks.push_back(std::make_unique<FakeCheck>("hang", Behaviour::kHang));
  checks.push_back(std::make_unique<FakeCheck>("measure", Behaviour::kMeasure));
  auto t0 = std::chrono::steady_clock::now();
  auto results = run_checks(checks, CheckContext{}, RunOptions{});
  auto elapsed = std::chrono::steady_clock::now() - t0;
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status, Status::kError);
  EXPECT_EQ(results[0].message, "timed out after 1 s");
  EXPECT_EQ(results[0].fault_code, "VIGIL-CHECK-TIMEOUT");
  EXPECT_EQ(results[1].status, Status::kPass);
  EXPECT_LT(elapsed, std::chrono::seconds(10));
}

TEST(Runner, crash_and_exception_are_errors_not_failures) {
  FakeCheck crash("crash", Behaviour::kCrash), thrower("throw", Behaviour::kThrow);
  CheckResult a = run_isolated(crash, CheckContext{});
  EXPECT_EQ(a.status, Status::kError);
  EXPECT_NE(a.message.find("signal 11"), std::string::npos) << a.message;
  CheckResult b = run_isolated(thrower, CheckContext{});
  EXPECT_EQ(b.status, Status::kError);
  EXPECT_NE(b.message.find("widget exploded"), std::string::npos);
}

TEST(Runner, not_applicable_and_excluded_checks_are_skipped_with_the_reason) {
  std::vector<std::unique_ptr<Check>> checks;
  checks.push_back(std::make_unique<FakeCheck>("na", Behaviour::kNotApplicable));
  checks.push_back(std::make_unique<FakeCheck>("measure", Behaviour::kMeasure));
  checks.push_back(std::make_unique<FakeCheck>("other", Behaviour::kMeasure));
  RunOptions opts;
  opts.exclude = {"measure"};
  auto results = run_checks(checks, CheckContext{}, opts);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].status, Status::kSkipped);
  EXPECT_EQ(results[0].message, "no widget on this node");
  EXPECT_EQ(results[1].status, Status::kSkipped);
  EXPECT_EQ(results[1].message, "excluded by --exclude");
  opts.exclude.clear();
  opts.only = {"other"};
  results = run_checks(checks, CheckContext{}, opts);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].check, "other");
}

TEST(Runner, run_in_child_returns_output_or_the_reason_it_has_none) {
  auto ok = run_in_child([] { return std::string("hello"); }, std::chrono::seconds(5));
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, "hello");
  auto bad = run_in_child([]() -> std::string { ::_exit(4); }, std::chrono::seconds(5));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "exited 4");
}

}  // namespace vigil

namespace vigil {

// Review F15: the confirmation repeats of a slow node must not outrun the check's limit (the
// runner would kill the check and its fail would become error VIGIL-CHECK-TIMEOUT).
TEST(RepeatBudget, another_run_fits_only_with_room_for_one_half_again_slower) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  // 8 slow GPUs at ~5.5 s each (review F15's example): 44 s spent, 120 s limit.
  EXPECT_TRUE(another_run_fits(seconds(44), milliseconds(5500), seconds(120)));
  EXPECT_TRUE(another_run_fits(seconds(111), seconds(6), seconds(120)));      // 111 + 9 = 120
  EXPECT_FALSE(another_run_fits(seconds(112), seconds(6), seconds(120)));     // 112 + 9 > 120
  EXPECT_TRUE(another_run_fits(seconds(1000), seconds(6), milliseconds(0)));  // no limit
  EXPECT_EQ(repeats_stopped_note(3, 16, seconds(120)),
            "repeats stopped after 3 of 16: another might pass the check's 120 s limit");
}

// Spaced confirmation repeats (docs/detection.md, "Interference that lasts through the
// repeats"): a check that spaces its repeats gets the wait added to its limit by the runner;
// the wait itself happens only when it and another run still fit.
namespace {
class LimitReporter final : public Check {
 public:
  explicit LimitReporter(bool spaced) : spaced_(spaced) {}
  std::string_view name() const override { return "limit"; }
  std::string_view short_name() const override { return "limit"; }
  std::chrono::seconds timeout() const override { return std::chrono::seconds(30); }
  bool spaces_repeats() const override { return spaced_; }
  Applies applies(const CheckContext&) const override { return {}; }
  CheckResult run(const CheckContext& ctx) override {
    CheckResult r;
    r.check = "limit";
    r.status = Status::kPass;
    r.message = std::to_string(ctx.time_limit.count());
    return r;
  }

 private:
  bool spaced_;
};
}  // namespace

TEST(RepeatSpacing, the_runner_adds_the_spacing_to_the_limit_of_checks_that_space_repeats) {
  CheckContext ctx;
  ctx.repeat_spacing = std::chrono::seconds(120);
  LimitReporter spaced(true), plain(false);
  EXPECT_EQ(run_isolated(spaced, ctx).message, "150000");
  EXPECT_EQ(run_isolated(plain, ctx).message, "30000");
  // A run's time box still caps it.
  EXPECT_EQ(run_isolated(spaced, ctx, std::chrono::milliseconds(40000)).message, "40000");
}

TEST(RepeatSpacing, the_wait_happens_only_when_it_and_another_run_fit) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  CheckContext ctx;
  std::string note;
  EXPECT_TRUE(wait_before_repeats(ctx, seconds(100), seconds(5), note));  // no spacing: at once
  EXPECT_TRUE(note.empty());

  ctx.repeat_spacing = seconds(120);
  ctx.time_limit = seconds(150);
  // 20 s spent + 120 s wait + 1.5 x 10 s > 150 s: no wait, no repeats, and it says why.
  EXPECT_FALSE(wait_before_repeats(ctx, seconds(20), seconds(10), note));
  EXPECT_EQ(note, "repeats not run: waiting 120 s first would pass the check's 150 s limit");

  ctx.repeat_spacing = seconds(1);
  ctx.time_limit = seconds(10);
  note.clear();
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(wait_before_repeats(ctx, seconds(2), seconds(1), note));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(1000));
  EXPECT_TRUE(note.empty());
}

}  // namespace vigil
