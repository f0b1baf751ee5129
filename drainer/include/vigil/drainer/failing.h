#pragma once
// What was failing or warning in a node's latest report, typed: one entry per measurement
// outside its bounds, or one per check whose verdict broke no bound (a fail-slow verdict, a
// count). The repair ladder reads `remedy`; the Kubernetes annotation `vigil.dev/failing`, the
// journal, `/v1/nodes` and webhook events carry it as a JSON array (docs/drainer.md). Before
// 2026-11-27 the journal held this array as a JSON string; both forms still read.
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "vigil/base/result.h"
#include "vigil/report/report.h"

namespace vigil::drainer {

struct FailingMeasurement {
  std::string check;
  Status status = Status::kFail;
  std::string measurement;  // empty: the check's verdict broke no bound (see `message`)
  double value = 0;         // with a measurement
  std::string unit;         // with a measurement
  std::optional<int> gpu;
  std::optional<std::string> port;
  std::optional<double> fail;  // the measurement's fail bound, when it has one
  std::string message;         // without a measurement: the check's own words
  std::optional<Remedy> remedy;
  bool operator==(const FailingMeasurement&) const = default;
};

// The failing and warning entries of a report, in report order.
std::vector<FailingMeasurement> failing_of(const NodeReport& r);

nlohmann::json to_json(const FailingMeasurement& f);
nlohmann::json failing_to_json(const std::vector<FailingMeasurement>& failing);
// An array, or the string the journal held before (empty string: none; one the old writer cut at
// 4 KiB keeps its complete entries). A wrong type, a string that is no such array, an unknown
// status or remedy is an error naming the entry.
Result<std::vector<FailingMeasurement>> failing_from_json(const nlohmann::json& j);

// The annotation's value: the JSON array, fails first, at most `max_bytes` long (at least 64).
// Entries that do not fit are left out and counted in a last `{"more": N}` entry, so the value
// is always valid JSON (a Kubernetes object's annotations share 256 KiB). Empty when nothing is
// failing.
std::string failing_annotation(const std::vector<FailingMeasurement>& failing,
                               size_t max_bytes = 4096);

}  // namespace vigil::drainer
