#include "vigil/report/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace vigil {

using nlohmann::json;

namespace {

json valid_report() {
  return json::parse(R"({
    "schema_version": 1, "node": "gpu-2", "k8s_node": "worker-2", "sku": "H100-SXM5-80GB",
    "job_id": "42", "run_id": "gpu-2-1763719200-77",
    "start_time": "2026-11-21T10:00:00Z", "end_time": "2026-11-21T10:00:30Z",
    "checks": [
      {"check": "nccl_allreduce_ib", "status": "fail", "message": "", "fault_code": "VIGIL-NCCL-BUSBW",
       "duration_s": 12.5,
       "measurements": [{"name": "busbw", "value": 151.2, "unit": "GB/s",
                         "threshold": {"op": ">=", "fail": 180, "warn": 189, "unit": "GB/s"}}]},
      {"check": "nvml_row_remap", "status": "pass", "message": "",
       "measurements": [{"name": "row_remap_pending", "value": 0, "unit": "count", "gpu": 3}]}
    ]})");
}

std::string error_of(const json& j) {
  auto p = parse_node_report(j);
  EXPECT_FALSE(p.value.has_value());
  return p.error;
}

}  // namespace

TEST(NodeReport, valid_report_round_trips) {
  auto p = parse_node_report(valid_report());
  ASSERT_TRUE(p) << p.error;
  EXPECT_EQ(p.value->node, "gpu-2");
  EXPECT_EQ(p.value->k8s_node, "worker-2");
  ASSERT_EQ(p.value->checks.size(), 2u);
  EXPECT_EQ(p.value->checks[1].measurements[0].gpu, 3);
  EXPECT_EQ(p.value->overall(), Status::kFail);
  auto again = parse_node_report(to_json(*p.value));
  ASSERT_TRUE(again) << again.error;
  EXPECT_EQ(to_json(*again.value), to_json(*p.value));
}

TEST(NodeReport, unknown_schema_version_is_rejected_naming_the_field) {
  json j = valid_report();
  j["schema_version"] = 2;
  EXPECT_NE(error_of(j).find("/schema_version"), std::string::npos);
}

TEST(NodeReport, missing_fields_are_named) {
  for (const char* field : {"node", "run_id", "start_time", "checks", "sku"}) {
    json j = valid_report();
    j.erase(field);
    EXPECT_EQ(error_of(j).rfind(std::string("/") + field + ": missing", 0), 0u) << field;
  }
  json j = valid_report();
  j["checks"][0]["measurements"][0].erase("unit");
  EXPECT_EQ(error_of(j), "/checks/0/measurements/0/unit: missing required field");
}

TEST(NodeReport, a_check_reported_twice_is_rejected) {
  json j = valid_report();
  j["checks"].push_back(j["checks"][0]);
  EXPECT_EQ(error_of(j),
            "/checks/2/check: duplicate check 'nccl_allreduce_ib' (also at /checks/0)");
}

TEST(NodeReport, negative_bandwidth_and_wrong_units_are_rejected) {
  json j = valid_report();
  j["checks"][0]["measurements"][0]["value"] = -1;
  EXPECT_EQ(error_of(j).rfind("/checks/0/measurements/0/value", 0), 0u);
  j = valid_report();
  j["checks"][0]["measurements"][0]["unit"] = "GiB/s";
  EXPECT_EQ(error_of(j).rfind("/checks/0/measurements/0/unit", 0), 0u);
  j = valid_report();
  j["checks"][0]["measurements"][0]["threshold"]["unit"] = "Gb/s";
  EXPECT_EQ(error_of(j).rfind("/checks/0/measurements/0/threshold/unit", 0), 0u);
}

TEST(NodeReport, nan_and_infinity_are_rejected) {
  // JSON has no NaN literal; a sender that writes one produces invalid JSON.
  auto p = parse_node_report(std::string_view(R"({"schema_version":1,"value":NaN})"));
  EXPECT_FALSE(p);
  json j = valid_report();
  j["checks"][0]["measurements"][0]["value"] = std::numeric_limits<double>::infinity();
  EXPECT_NE(error_of(j).find("finite"), std::string::npos);
}

TEST(NodeReport, unknown_fields_status_and_bad_times_are_rejected) {
  json j = valid_report();
  j["checks"][0]["extra"] = 1;
  EXPECT_EQ(error_of(j), "/checks/0/extra: unknown field");
  j = valid_report();
  j["checks"][1]["status"] = "ok";
  EXPECT_EQ(error_of(j).rfind("/checks/1/status", 0), 0u);
  j = valid_report();
  j["end_time"] = "2026-11-21T09:00:00Z";
  EXPECT_EQ(error_of(j).rfind("/end_time", 0), 0u);
  j = valid_report();
  j["node"] = "gpu 2; rm -rf";
  EXPECT_EQ(error_of(j).rfind("/node", 0), 0u);
}

TEST(NodeReport, node_names_slurm_would_expand_are_refused) {
  for (const char* bad : {"ALL", "all", "All", "DEFAULT", "default", "gpu-[0-3]", "gpu-1,gpu-2",
                          "gpu-1 gpu-2", "", "gpu^1", "gpu-1\\n", "u222222222222222222207"}) {
    SCOPED_TRACE(bad);
    EXPECT_TRUE(node_name_problem(bad));
    json j = valid_report();
    j["node"] = bad;
    EXPECT_EQ(error_of(j).rfind("/node", 0), 0u) << error_of(j);
  }
  EXPECT_NE(node_name_problem("ALL")->find("Slurm keyword"), std::string::npos);
  for (const char* good :
       {"gpu-2", "ALL1", "allgpu", "node.example.org", "n_1", "n123456789012345678"}) {
    SCOPED_TRACE(good);
    EXPECT_FALSE(node_name_problem(good));
  }
}

TEST(NodeReport, batch_parse_names_the_report_index) {
  json batch = json::array({valid_report(), valid_report()});
  batch[1]["checks"][0]["status"] = "bogus";
  auto p = parse_node_reports(batch.dump());
  EXPECT_FALSE(p);
  EXPECT_EQ(p.error.rfind("/1/checks/0/status", 0), 0u) << p.error;
  auto ok = parse_node_reports(json::array({valid_report()}).dump());
  ASSERT_TRUE(ok) << ok.error;
  EXPECT_EQ(ok.value->size(), 1u);
  EXPECT_FALSE(parse_node_reports("[]"));
  EXPECT_FALSE(parse_node_reports("{not json"));
}

TEST(ReasonDetail, shows_the_figure_that_breaks_its_bound_furthest) {
  auto p = parse_node_report(valid_report());
  ASSERT_TRUE(p);
  EXPECT_EQ(reason_detail(p.value->checks[0]), "busbw 151.2<180GB/s");
  // A report from a checker that stamps no short name is named by its check.
  EXPECT_EQ(reason_name(p.value->checks[0]), "nccl_allreduce_ib");
}

// An unconfirmed floor travels with the report, so the drainer judges what the check judged.
TEST(NodeReport, an_unconfirmed_threshold_round_trips_and_only_warns) {
  json j = valid_report();
  j["checks"][0]["status"] = "warn";
  j["checks"][0]["measurements"][0]["threshold"]["unconfirmed"] = true;
  auto p = parse_node_report(j);
  ASSERT_TRUE(p) << p.error;
  const Measurement& m = p.value->checks[0].measurements[0];
  ASSERT_TRUE(m.threshold);
  EXPECT_TRUE(m.threshold->unconfirmed);
  EXPECT_EQ(m.status(), Status::kWarn);
  EXPECT_EQ(reason_detail(p.value->checks[0]), "busbw 151.2<180GB/s (unconfirmed floor)");
  EXPECT_EQ(to_json(*p.value)["checks"][0]["measurements"][0]["threshold"]["unconfirmed"], true);
  j["checks"][0]["measurements"][0]["threshold"]["unconfirmed"] = "yes";
  EXPECT_NE(error_of(j).find("/threshold/unconfirmed: must be true or false"), std::string::npos)
      << error_of(j);
}

TEST(ReasonDetail, uses_the_check_message_for_counts) {
  CheckResult r;
  r.check = "nvml_row_remap";
  r.status = Status::kFail;
  r.message = "gpu3 row remap pending (1)";
  r.measurements.push_back({"row_remap_pending",
                            1,
                            "count",
                            3,
                            {},
                            Threshold{Op::kLe, 0, {}, "count", {}, false, {}},
                            {}});
  EXPECT_EQ(reason_detail(r), "gpu3 row remap pending (1)");
}

TEST(NodeReport, repeats_round_trip_and_bad_repeats_are_named) {
  json j = valid_report();
  j["checks"][0]["measurements"][0]["repeats"] = {150.0, 149.5};
  auto p = parse_node_report(j);
  ASSERT_TRUE(p) << p.error;
  EXPECT_EQ(p.value->checks[0].measurements[0].repeats, (std::vector<double>{150.0, 149.5}));
  EXPECT_EQ(to_json(*p.value)["checks"][0]["measurements"][0]["repeats"],
            j["checks"][0]["measurements"][0]["repeats"]);
  j["checks"][0]["measurements"][0]["repeats"] = {150.0, -1.0};
  auto neg = parse_node_report(j);
  ASSERT_FALSE(neg);
  EXPECT_NE(neg.error.find("/checks/0/measurements/0/repeats/1"), std::string::npos) << neg.error;
  j["checks"][0]["measurements"][0]["repeats"] = "150";
  EXPECT_FALSE(parse_node_report(j));
}

TEST(NodeReport, short_name_round_trips_and_is_validated) {
  json j = valid_report();
  j["checks"][0]["short_name"] = "nccl-ib";
  auto p = parse_node_report(j);
  ASSERT_TRUE(p) << p.error;
  EXPECT_EQ(p.value->checks[0].short_name, "nccl-ib");
  EXPECT_EQ(reason_name(p.value->checks[0]), "nccl-ib");
  EXPECT_EQ(to_json(*p.value)["checks"][0]["short_name"], "nccl-ib");
  j["checks"][0]["short_name"] = "no spaces allowed";
  auto bad = parse_node_report(j);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error.find("/checks/0/short_name"), std::string::npos) << bad.error;
}

// What clears a fault (docs/xid.md): optional, one of three words, carried through unchanged.
TEST(NodeReport, remedy_is_optional_round_trips_and_is_validated) {
  auto plain = parse_node_report(valid_report());
  ASSERT_TRUE(plain) << plain.error;
  EXPECT_FALSE(plain.value->checks[0].remedy);
  EXPECT_FALSE(to_json(*plain.value)["checks"][0].contains("remedy"));
  for (const char* r : {"reset_gpu", "reboot", "service"}) {
    json j = valid_report();
    j["checks"][0]["remedy"] = r;
    auto p = parse_node_report(j);
    ASSERT_TRUE(p) << p.error;
    EXPECT_EQ(to_string(*p.value->checks[0].remedy), r);
    EXPECT_EQ(to_json(*p.value)["checks"][0]["remedy"], r);
  }
  json bad = valid_report();
  bad["checks"][0]["remedy"] = "replace_node";
  EXPECT_EQ(error_of(bad).rfind("/checks/0/remedy: must be one of reset_gpu, reboot, service", 0),
            0u)
      << error_of(bad);
}

// A file the check kept on the node (the GPU reset's bug report, docs/repair.md): optional, an
// absolute path of printable characters, carried through unchanged.
TEST(NodeReport, evidence_is_optional_an_absolute_path_and_round_trips) {
  auto plain = parse_node_report(valid_report());
  ASSERT_TRUE(plain) << plain.error;
  EXPECT_FALSE(plain.value->checks[0].evidence);
  EXPECT_FALSE(to_json(*plain.value)["checks"][0].contains("evidence"));
  json j = valid_report();
  j["checks"][0]["evidence"] = "/var/lib/vigil/evidence/gpu-1-20261127T070000Z.log.gz";
  auto p = parse_node_report(j);
  ASSERT_TRUE(p) << p.error;
  EXPECT_EQ(*p.value->checks[0].evidence, j["checks"][0]["evidence"]);
  EXPECT_EQ(to_json(*p.value)["checks"][0]["evidence"], j["checks"][0]["evidence"]);
  const std::vector<std::string> bads = {"", "relative/file", "/a\nb",
                                         "/" + std::string(4096, 'x')};
  for (const std::string& bad : bads) {
    json b = valid_report();
    b["checks"][0]["evidence"] = bad;
    EXPECT_EQ(error_of(b).rfind("/checks/0/evidence: must be an absolute path", 0), 0u)
        << error_of(b);
  }
}

TEST(NodeReport, context_is_optional_round_trips_and_is_validated) {
  auto plain = parse_node_report(valid_report());
  ASSERT_TRUE(plain) << plain.error;
  EXPECT_FALSE(plain.value->context.has_value());
  EXPECT_FALSE(to_json(*plain.value).contains("context"));
  for (const char* ctx : {"job", "prolog", "epilog", "healthcheck"}) {
    json j = valid_report();
    j["context"] = ctx;
    auto p = parse_node_report(j);
    ASSERT_TRUE(p) << p.error;
    EXPECT_EQ(p.value->context, ctx);
    EXPECT_EQ(to_json(*p.value)["context"], ctx);
  }
  json bad = valid_report();
  bad["context"] = "cron";
  EXPECT_EQ(error_of(bad).rfind("/context: unknown context 'cron'", 0), 0u) << error_of(bad);
  bad["context"] = 3;
  EXPECT_EQ(error_of(bad).rfind("/context", 0), 0u) << error_of(bad);
}

// "gpus": which part sits in each slot (serial, UUID), for RMA and part history.
TEST(NodeReport, gpus_are_optional_round_trip_and_are_validated) {
  auto plain = parse_node_report(valid_report());
  ASSERT_TRUE(plain) << plain.error;
  EXPECT_TRUE(plain.value->gpus.empty());
  EXPECT_FALSE(to_json(*plain.value).contains("gpus"));
  json j = valid_report();
  j["gpus"] = json::parse(R"([{"index": 0, "serial": "1652823054320",
                               "uuid": "GPU-00000000-5a6b-4c7d-8e9f-0a1b2c3d4e5f"},
                              {"index": 1, "uuid": "GPU-00000001-5a6b-4c7d-8e9f-0a1b2c3d4e5f"}])");
  auto p = parse_node_report(j);
  ASSERT_TRUE(p) << p.error;
  ASSERT_EQ(p.value->gpus.size(), 2u);
  EXPECT_EQ(p.value->gpus[0].serial, "1652823054320");
  EXPECT_TRUE(p.value->gpus[1].serial.empty());  // a board without an inforom
  EXPECT_EQ(to_json(*p.value)["gpus"], j["gpus"]);
  auto error_with = [&](const char* gpus) {
    json bad = valid_report();
    bad["gpus"] = json::parse(gpus);
    return error_of(bad);
  };
  EXPECT_EQ(error_with(R"([{"index": -1}])").rfind("/gpus/0/index", 0), 0u);
  EXPECT_EQ(error_with(R"([{"index": 0}, {"index": 0}])").rfind("/gpus/1/index: duplicate", 0), 0u);
  EXPECT_EQ(error_with(R"([{"index": 0, "serial": "12 34"}])").rfind("/gpus/0/serial", 0), 0u);
  EXPECT_EQ(error_with(R"([{"index": 0, "slot": 3}])").rfind("/gpus/0/slot: unknown field", 0), 0u);
  EXPECT_EQ(error_with(R"({"index": 0})").rfind("/gpus: must be an array", 0), 0u);
}

// "driver", each GPU's "vbios" and "nics": what classes compare (docs/thresholds.md "Classes").
TEST(NodeReport, versions_are_optional_round_trip_and_are_validated) {
  json j = valid_report();
  j["driver"] = "550.54.15";
  j["gpus"] = json::parse(R"([{"index": 0, "vbios": "96.00.89.00.01"}])");
  j["nics"] = json::parse(R"([{"device": "mlx5_0", "firmware": "28.41.1000",
                               "board_id": "MT_0000000838"}, {"device": "mlx5_1"}])");
  auto p = parse_node_report(j);
  ASSERT_TRUE(p) << p.error;
  EXPECT_EQ(p.value->driver, "550.54.15");
  EXPECT_EQ(p.value->gpus[0].vbios, "96.00.89.00.01");
  ASSERT_EQ(p.value->nics.size(), 2u);
  EXPECT_EQ(p.value->nics[0].firmware, "28.41.1000");
  EXPECT_TRUE(p.value->nics[1].board_id.empty());
  const json out = to_json(*p.value);
  for (const char* key : {"driver", "gpus", "nics"}) EXPECT_EQ(out[key], j[key]) << key;
  auto error_with = [&](const char* key, const char* value) {
    json bad = j;
    bad[key] = json::parse(value);
    return parse_node_report(bad).error;
  };
  EXPECT_EQ(error_with("driver", R"("550 54")").rfind("/driver: must be", 0), 0u);
  EXPECT_EQ(error_with("driver", "550").rfind("/driver", 0), 0u);
  EXPECT_EQ(error_with("nics", R"([{"firmware": "1"}])").rfind("/nics/0/device: required", 0), 0u);
  EXPECT_EQ(error_with("nics", R"([{"device": "a"}, {"device": "a"}])")
                .rfind("/nics/1/device: duplicate", 0),
            0u);
  EXPECT_EQ(error_with("nics", R"([{"device": "a", "psid": "x"}])").rfind("/nics/0/psid", 0), 0u);
  EXPECT_EQ(error_with("gpus", R"([{"index": 0, "vbios": ""}])").rfind("/gpus/0/vbios", 0), 0u);
}

}  // namespace vigil
