// Site checks (vigil/checks/site_check.h, docs/site-checks.md): what a declaration file may say
// and the errors that name its field; the check's verdicts from real commands' exit codes,
// signals, timeouts and measurement lines; a site check joining the catalog through the
// thresholds directory (SKU bounds, `vigil-check run` and the hooks' lists).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "check_factories.h"
#include "temp_dir.h"
#include "vigil/checks/registry.h"
#include "vigil/checks/sku.h"

namespace vigil {
namespace {

using testing::TempDir;

// `yaml`, with the codes that fail ([1]) when it does not say them.
std::string with_codes(const std::string& yaml) {
  return yaml.find("exit_codes") == std::string::npos ? yaml + "exit_codes: {fail: [1]}\n" : yaml;
}

// The first error of a site-checks directory holding `yaml` alone, without the directory.
std::string first_error(const std::string& yaml, bool add_codes = true) {
  TempDir d;
  d.write("x.yaml", add_codes ? with_codes(yaml) : yaml);
  auto loaded = load_site_checks(d.path());
  EXPECT_FALSE(loaded.errors.empty()) << yaml;
  return loaded.errors.empty() ? "" : loaded.errors.front().to_string().substr(d.path().size() + 1);
}

SiteCheckSpec spec_of(const std::string& yaml) {
  TempDir d;
  d.write("x.yaml", with_codes(yaml));
  auto loaded = load_site_checks(d.path());
  EXPECT_TRUE(loaded.errors.empty()) << loaded.errors.front().to_string();
  return loaded.value->front();
}

CheckResult run_site(const std::string& yaml, const CheckContext& ctx = {}) {
  return make_site_check(spec_of(yaml))->run(ctx);
}

TEST(SiteCheckFile, defaults_and_every_field) {
  const SiteCheckSpec plain =
      spec_of("name: site_lustre_rw\ncommand: [/bin/true]\nexit_codes: {fail: [1]}\n");
  EXPECT_EQ(plain.short_name, "lustre-rw");
  EXPECT_EQ(plain.timeout, std::chrono::seconds(30));
  EXPECT_TRUE(plain.in_run && plain.in_hooks);
  EXPECT_FALSE(plain.measurements);
  EXPECT_EQ(plain.fail_codes, std::vector<int>{1});
  EXPECT_TRUE(plain.warn_codes.empty());

  const SiteCheckSpec full = spec_of(
      "name: site_nagios_disk\nshort_name: disk\ncommand: [/usr/lib/nagios/plugins/check_disk, "
      "-w, \"10%\"]\ntimeout_s: 20\nruns_in: [hooks]\nresult: measurements\n"
      "exit_codes: {warn: [1], fail: [2]}\nenv: {LC_ALL: C}\n");
  EXPECT_EQ(full.short_name, "disk");
  EXPECT_EQ(full.command.size(), 3u);
  EXPECT_EQ(full.timeout, std::chrono::seconds(20));
  EXPECT_FALSE(full.in_run);
  EXPECT_TRUE(full.in_hooks);
  EXPECT_TRUE(full.measurements);
  EXPECT_EQ(full.warn_codes, std::vector<int>{1});
  EXPECT_EQ(full.fail_codes, std::vector<int>{2});
  EXPECT_EQ(full.env, (std::vector<std::pair<std::string, std::string>>{{"LC_ALL", "C"}}));
}

TEST(SiteCheckFile, bad_files_name_the_line_and_field) {
  EXPECT_EQ(
      first_error("name: lustre\ncommand: [/bin/true]\n").rfind("x.yaml:1: name: must be site_", 0),
      0u);
  EXPECT_NE(first_error("command: [/bin/true]\n").find("name: missing"), std::string::npos);
  EXPECT_NE(first_error("name: site_x\ncommand: [true]\n").find("'true' is not an absolute path"),
            std::string::npos);
  EXPECT_NE(first_error("name: site_x\ncommand: /bin/true\n").find("command: must be a list"),
            std::string::npos);
  EXPECT_NE(first_error("name: site_x\ncommand: [/bin/true]\ntimeout_s: 0\n").find("timeout_s"),
            std::string::npos);
  EXPECT_NE(first_error("name: site_x\ncommand: [/bin/true]\nruns_in: [prolog]\n")
                .find("'prolog' is not run or hooks"),
            std::string::npos);
  EXPECT_NE(first_error("name: site_x\ncommand: [/bin/true]\nexit_codes: {fail: [1], warn: [1]}\n")
                .find("exit code 1 both fails and warns"),
            std::string::npos);
  EXPECT_NE(
      first_error("name: site_x\ncommand: [/bin/true]\nresult: json\n").find("result: must be"),
      std::string::npos);
  EXPECT_NE(first_error("name: site_x\ncommand: [/bin/true]\nshell: bash\n").find("shell"),
            std::string::npos);
  // No default for the codes that fail: the file says what its program means by exit 1.
  EXPECT_NE(
      first_error("name: site_x\ncommand: [/bin/true]\n", false).find("exit_codes.fail: missing"),
      std::string::npos);
  EXPECT_NE(first_error("name: site_x\ncommand: [/bin/true]\nexit_codes: {fail: [127]}\n")
                .find("exit_codes.fail"),
            std::string::npos);
  // The hook's box is at most 55 s: a longer timeout there could never be kept.
  EXPECT_NE(first_error("name: site_x\ncommand: [/bin/true]\ntimeout_s: 120\n").find("at most 50"),
            std::string::npos);
  EXPECT_EQ(spec_of("name: site_x\ncommand: [/bin/true]\ntimeout_s: 120\nruns_in: [run]\n").timeout,
            std::chrono::seconds(120));  // vigil-check run has no such box
  // A list where a mapping belongs (and back) is the field's error, not a parser's.
  EXPECT_NE(first_error("name: site_x\ncommand: [/bin/true]\nruns_in: {run: 1}\n").find("runs_in"),
            std::string::npos);
  EXPECT_NE(first_error("name: site_x\ncommand: [/bin/true]\nenv: [A=1]\n").find("env: must be"),
            std::string::npos);
  // A short name already in Slurm reasons (pcie_aer's "aer").
  EXPECT_NE(first_error("name: site_aer\ncommand: [/bin/true]\n").find("'aer' already names"),
            std::string::npos);
  EXPECT_NE(first_error("name: site_x\ncommand: [/bin/true]\nenv: {lower: x}\n")
                .find("'lower' is not an environment variable name"),
            std::string::npos);
  TempDir d;
  d.write("a.yaml", with_codes("name: site_x\ncommand: [/bin/true]\n"));
  d.write("b.yaml", with_codes("name: site_x\ncommand: [/bin/false]\n"));
  auto two = load_site_checks(d.path());
  ASSERT_EQ(two.errors.size(), 1u);
  EXPECT_NE(two.errors[0].to_string().find("duplicate site check 'site_x'"), std::string::npos);
  EXPECT_TRUE(load_site_checks(d.path() + "/absent").errors.empty());  // none is no error
}

TEST(SiteCheck, exit_codes_decide_and_the_last_line_says_why) {
  CheckContext ctx;
  ctx.node = "gpu-7";
  CheckResult r =
      run_site("name: site_scratch\ncommand: [/bin/sh, -c, 'echo \"$VIGIL_NODE ok\"']\n", ctx);
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(r.message, "gpu-7 ok");  // VIGIL_NODE reaches the command
  r = run_site(
      "name: site_scratch\ncommand: [/bin/sh, -c, 'echo checking; echo \"/scratch is read-only\"; "
      "exit 1']\n");
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "/scratch is read-only");
  EXPECT_EQ(r.fault_code, "VIGIL-SITE-SCRATCH");
  r = run_site(
      "name: site_nagios\ncommand: [/bin/sh, -c, 'echo WARNING; exit 1']\n"
      "exit_codes: {warn: [1], fail: [2]}\n");
  EXPECT_EQ(r.status, Status::kWarn);
  EXPECT_EQ(r.message, "WARNING");
  r = run_site("name: site_x\ncommand: [/bin/sh, -c, 'echo >&2 gone wrong; exit 1']\n");
  EXPECT_EQ(r.message, "gone wrong");  // stderr when stdout is empty
  // Bytes that are not printable ASCII (Latin-1, a control character) never reach the JSON.
  r = run_site(
      "name: site_x\ncommand: [/bin/sh, -c, 'printf \"caf\\351\\033 down\\n\"; exit 1']\n");
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "caf?? down");
  EXPECT_NO_THROW(to_json(r).dump());
}

// Whatever goes wrong with the command itself is an error: never a fail, never a drain.
TEST(SiteCheck, a_hang_a_crash_an_unnamed_exit_or_a_missing_program_is_an_error) {
  const auto t0 = std::chrono::steady_clock::now();
  CheckResult r = run_site("name: site_hang\ncommand: [/bin/sleep, \"60\"]\ntimeout_s: 1\n");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_EQ(r.status, Status::kError) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-SITE-TIMEOUT");
  r = run_site("name: site_crash\ncommand: [/bin/sh, -c, 'ulimit -c 0; kill -SEGV $$']\n");
  EXPECT_EQ(r.status, Status::kError) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-SITE-CRASH");
  r = run_site("name: site_x\ncommand: [/bin/sh, -c, 'exit 3']\n");
  EXPECT_EQ(r.status, Status::kError) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-SITE-EXIT");
  r = run_site("name: site_x\ncommand: [/nonexistent/check]\n");
  EXPECT_EQ(r.status, Status::kError) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-SITE-SETUP");
  // The hook's time box is shorter than the file's timeout: the box wins.
  CheckContext ctx;
  ctx.time_limit = std::chrono::milliseconds(800);
  const auto t1 = std::chrono::steady_clock::now();
  r = run_site("name: site_hang\ncommand: [/bin/sleep, \"60\"]\ntimeout_s: 30\n", ctx);
  EXPECT_EQ(r.fault_code, "VIGIL-SITE-TIMEOUT");
  EXPECT_LT(std::chrono::steady_clock::now() - t1, std::chrono::seconds(5));
}

constexpr const char* kFreeSpace =
    "name: site_scratch_free\nresult: measurements\ncommand: [/bin/sh, -c, 'echo \"{\\\"name\\\": "
    "\\\"scratch_free\\\", \\\"value\\\": 3, \\\"unit\\\": \\\"percent\\\", \\\"port\\\": "
    "\\\"/scratch\\\", \\\"threshold\\\": {\\\"op\\\": \\\">=\\\", \\\"fail\\\": 5, \\\"unit\\\": "
    "\\\"percent\\\"}}\"']\n";

TEST(SiteCheck, measurement_lines_are_judged_by_their_own_bound_or_the_skus) {
  CheckResult r = run_site(kFreeSpace);
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  ASSERT_EQ(r.measurements.size(), 1u);
  EXPECT_EQ(r.measurements[0].port, "/scratch");
  EXPECT_EQ(r.fault_code.rfind("VIGIL-SITE-SCRATCH-FREE", 0), 0u) << r.fault_code;

  SkuConfig sku;  // the SKU file's bound wins over the line's
  Threshold t;
  t.op = Op::kGe;
  t.fail = 2;
  t.unit = "percent";
  sku.thresholds["site_scratch_free"]["scratch_free"] = t;
  CheckContext ctx;
  ctx.sku = &sku;
  r = run_site(kFreeSpace, ctx);
  EXPECT_EQ(r.status, Status::kPass) << r.message;

  r = run_site(
      "name: site_x\nresult: measurements\ncommand: [/bin/sh, -c, 'echo \"{\\\"name\\\": 1}\"']\n");
  EXPECT_EQ(r.status, Status::kError) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-SITE-OUTPUT");
  EXPECT_NE(r.message.find("stdout line 1"), std::string::npos) << r.message;
  // Measurements asked for and none printed: the program did not do its job.
  r = run_site("name: site_x\nresult: measurements\ncommand: [/bin/sh, -c, 'echo fine']\n");
  EXPECT_EQ(r.status, Status::kError) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-SITE-OUTPUT");
}

// Beside the SKU files: loaded with them, valid names for their thresholds, in the run's and
// the hooks' lists as the file says.
TEST(SiteCheck, joins_the_catalog_through_the_thresholds_directory) {
  TempDir d;
  d.write("h100.yaml",
          "sku: H100-SXM5-80GB\nmatch:\n  gpu_names: [\"NVIDIA H100 80GB HBM3\"]\n  gpu_count: 8\n"
          "thresholds:\n  site_scratch_free:\n    scratch_free: {op: \">=\", fail: 2, unit: "
          "percent}\n");
  std::filesystem::create_directories(d.file("site-checks"));
  d.write("site-checks/free.yaml", with_codes(std::string(kFreeSpace) + "runs_in: [run]\n"));
  d.write("site-checks/lustre.yaml",
          with_codes("name: site_lustre\ncommand: [/bin/true]\nruns_in: [hooks]\n"));
  auto skus = load_sku_dir(d.path(), known_check_names());
  ASSERT_TRUE(skus) << skus.errors.front().to_string();
  EXPECT_EQ(skus.value->site_checks.size(), 2u);
  auto names = [](const std::vector<std::unique_ptr<Check>>& checks) {
    std::vector<std::string> out;
    for (const auto& c : checks) out.emplace_back(c->name());
    return out;
  };
  const auto run = names(all_checks(&*skus.value));
  EXPECT_EQ(run.back(), "site_scratch_free");
  EXPECT_EQ(std::ranges::count(run, "site_lustre"), 0);
  const auto hooks = names(passive_checks({}, &*skus.value));
  EXPECT_EQ(hooks.back(), "site_lustre");
  EXPECT_EQ(std::ranges::count(hooks, "site_scratch_free"), 0);

  d.write("site-checks/bad.yaml", "name: site_bad\n");  // no command: the directory is invalid
  EXPECT_FALSE(load_sku_dir(d.path(), known_check_names()));
}

}  // namespace
}  // namespace vigil
