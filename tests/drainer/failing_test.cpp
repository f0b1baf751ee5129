// Typed failing entries (failing.h): what a report puts in them, their JSON both ways, the
// journal's older string form, and the annotation's size bound.
#include "vigil/drainer/failing.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "drainer_fixtures.h"

using namespace vigil;
using namespace vigil::drainer;

namespace {

NodeReport report_with(std::vector<CheckResult> checks) {
  NodeReport r;
  r.node = "gpu-1";
  r.checks = std::move(checks);
  return r;
}

CheckResult ecc_fail() {
  CheckResult c = vigil::testing::make_check("nvml_ecc", Status::kFail, 2, 0);  // <= 0 fails
  Measurement& m = c.measurements[0];
  m.name = "volatile_uncorrected_ecc";
  m.gpu = 3;
  Measurement ok = m;
  ok.name = "aggregate_uncorrected_ecc";
  ok.value = 0;
  c.measurements.push_back(ok);
  c.remedy = Remedy::kReboot;
  return c;
}

FailingMeasurement entry(const std::string& check, Status status, const std::string& measurement,
                         std::optional<int> gpu = std::nullopt,
                         std::optional<std::string> port = std::nullopt) {
  FailingMeasurement f;
  f.check = check;
  f.status = status;
  f.measurement = measurement;
  f.gpu = gpu;
  f.port = std::move(port);
  return f;
}

}  // namespace

TEST(Failing, a_report_gives_one_entry_per_broken_bound_and_one_per_verdict_without_one) {
  CheckResult slow;
  slow.check = "cuda_gemm";
  slow.status = Status::kWarn;
  slow.message = "gpu3 gemm_bf16_tflops 704 TFLOP/s, 12% below its 7 peers (803)";
  CheckResult pass;
  pass.check = "nvml_xid";
  auto f = failing_of(report_with({ecc_fail(), slow, pass}));
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].check, "nvml_ecc");
  EXPECT_EQ(f[0].measurement, "volatile_uncorrected_ecc");  // the figure inside its bound is not
  EXPECT_EQ(f[0].value, 2);
  EXPECT_EQ(f[0].gpu, 3);
  EXPECT_EQ(f[0].fail, 0);
  EXPECT_EQ(f[0].remedy, Remedy::kReboot);
  EXPECT_EQ(f[1].check, "cuda_gemm");
  EXPECT_EQ(f[1].status, Status::kWarn);
  EXPECT_TRUE(f[1].measurement.empty());
  EXPECT_EQ(f[1].message, slow.message);
}

TEST(Failing, json_round_trips_and_keeps_the_published_field_names) {
  auto f = failing_of(report_with({ecc_fail()}));
  nlohmann::json j = failing_to_json(f);
  EXPECT_EQ(j[0]["check"], "nvml_ecc");
  EXPECT_EQ(j[0]["measurement"], "volatile_uncorrected_ecc");
  EXPECT_EQ(j[0]["status"], "fail");
  EXPECT_EQ(j[0]["remedy"], "reboot");
  EXPECT_FALSE(j[0].contains("message"));
  auto back = failing_from_json(j);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back.value(), f);
}

// Journals and snapshots written before the type held the array as a JSON string, and the old
// writer cut a long one at 4 KiB into something that is no JSON: that reads as nothing (the
// next report fills it), not as a replay error.
TEST(Failing, the_journals_older_string_form_still_reads) {
  auto f = failing_of(report_with({ecc_fail()}));
  auto old = failing_from_json(nlohmann::json(failing_to_json(f).dump()));
  ASSERT_TRUE(old.ok()) << old.error().to_string();
  EXPECT_EQ(old.value(), f);
  auto none = failing_from_json(nlohmann::json(""));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none.value().empty());
  auto cut = failing_from_json(nlohmann::json(R"([{"check":"nvml_ecc","measu...])"));
  ASSERT_TRUE(cut.ok());
  EXPECT_TRUE(cut.value().empty());  // the only entry was cut: none is whole
  // A long list cut at 4 KiB keeps its complete entries.
  std::vector<FailingMeasurement> many(60, f[0]);
  const std::string whole = failing_to_json(many).dump();
  ASSERT_GT(whole.size(), 4096u);
  auto kept = failing_from_json(nlohmann::json(whole.substr(0, 4090) + "...]"));
  ASSERT_TRUE(kept.ok()) << kept.error().to_string();
  EXPECT_GT(kept.value().size(), 20u);
  EXPECT_LT(kept.value().size(), 60u);
  EXPECT_EQ(kept.value().back(), f[0]);
  // Anything else is no list this writer made: an error, not an empty list.
  EXPECT_FALSE(failing_from_json(nlohmann::json("not json")).ok());
}

TEST(Failing, a_wrong_entry_is_an_error_naming_it) {
  auto bad_status = failing_from_json(
      nlohmann::json::parse(R"([{"check":"a","status":"fail"},{"check":"b","status":"broken"}])"));
  ASSERT_FALSE(bad_status.ok());
  EXPECT_NE(bad_status.error().message.find("entry 1"), std::string::npos);
  EXPECT_NE(bad_status.error().message.find("broken"), std::string::npos);
  EXPECT_FALSE(
      failing_from_json(nlohmann::json::parse(R"([{"check":"a","status":"fail","remedy":"x"}])"))
          .ok());
  EXPECT_FALSE(failing_from_json(nlohmann::json::parse(R"({"check":"a"})")).ok());
  EXPECT_FALSE(failing_from_json(nlohmann::json::parse(R"([{"status":"fail"}])")).ok());
}

// Before, a long list was cut mid-entry into text that no JSON reader takes.
TEST(Failing, the_annotation_stays_valid_json_within_its_bound) {
  std::vector<FailingMeasurement> many;
  for (int i = 0; i < 200; ++i)
    many.push_back(entry("nvml_nvlink", Status::kFail, "nvlink_crc_errors", i % 8,
                         "nvlink" + std::to_string(i)));
  const std::string a = failing_annotation(many, 4096);
  ASSERT_LE(a.size(), 4096u);
  auto j = nlohmann::json::parse(a);
  ASSERT_GT(j.size(), 2u);
  const auto shown = j.size() - 1;
  EXPECT_EQ(j.back()["more"], 200 - shown);
  EXPECT_EQ(j[0]["port"], "nvlink0");
  EXPECT_EQ(failing_annotation({}), "");
  // Fails come first, so a warning cannot push what drains out of the annotation.
  std::vector<FailingMeasurement> mixed = many;
  for (auto& m : mixed) m.status = Status::kWarn;
  mixed.push_back(entry("nvml_ecc", Status::kFail, "dbe"));
  EXPECT_EQ(nlohmann::json::parse(failing_annotation(mixed, 4096))[0]["check"], "nvml_ecc");
  const std::string few = failing_annotation({many[0]});
  EXPECT_EQ(nlohmann::json::parse(few).size(), 1u);  // no "more" when everything fits
}
