// Typed failing entries and their one JSON codec (failing.h).
#include "vigil/drainer/failing.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace vigil::drainer {

std::vector<FailingMeasurement> failing_of(const NodeReport& r) {
  std::vector<FailingMeasurement> out;
  for (const auto& c : r.checks) {
    if (c.status != Status::kFail && c.status != Status::kWarn) continue;
    bool any = false;
    for (const auto& m : c.measurements) {
      const Status ms = m.status();
      if (ms != Status::kFail && ms != Status::kWarn) continue;
      FailingMeasurement f;
      f.check = c.check;
      f.status = ms;
      f.measurement = m.name;
      f.value = m.value;
      f.unit = m.unit;
      f.gpu = m.gpu;
      f.port = m.port;
      if (m.threshold) f.fail = m.threshold->fail;
      f.remedy = c.remedy;  // what clears it (docs/xid.md)
      out.push_back(std::move(f));
      any = true;
    }
    // No bound broken: a fail-slow verdict (or a count) whose message says what and against
    // which baseline ("gpu3 gemm_bf16_tflops 704 TFLOP/s, 12% below its 7 peers (803)").
    if (!any) {
      FailingMeasurement f;
      f.check = c.check;
      f.status = c.status;
      f.message = c.message;
      f.remedy = c.remedy;
      out.push_back(std::move(f));
    }
  }
  return out;
}

nlohmann::json to_json(const FailingMeasurement& f) {
  nlohmann::json e{{"check", f.check}};
  if (!f.measurement.empty()) {
    e["measurement"] = f.measurement;
    e["value"] = f.value;
    e["unit"] = f.unit;
  }
  e["status"] = std::string(to_string(f.status));
  if (f.gpu) e["gpu"] = *f.gpu;
  if (f.port) e["port"] = *f.port;
  if (f.fail) e["fail"] = *f.fail;
  if (!f.message.empty()) e["message"] = f.message;
  if (f.remedy) e["remedy"] = std::string(to_string(*f.remedy));
  return e;
}

nlohmann::json failing_to_json(const std::vector<FailingMeasurement>& failing) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& f : failing) arr.push_back(to_json(f));
  return arr;
}

namespace {

Result<FailingMeasurement> entry_from_json(const nlohmann::json& e) {
  FailingMeasurement f;
  f.check = e.at("check").get<std::string>();
  const std::string status = e.at("status").get<std::string>();
  auto st = value_of(kStatusNames, status);
  if (!st) return Error{"unknown status '" + status + "' of " + f.check, "failing"};
  f.status = *st;
  if (e.contains("measurement")) {
    f.measurement = e.at("measurement").get<std::string>();
    f.value = e.at("value").get<double>();
    f.unit = e.at("unit").get<std::string>();
  }
  if (e.contains("gpu")) f.gpu = e.at("gpu").get<int>();
  if (e.contains("port")) f.port = e.at("port").get<std::string>();
  if (e.contains("fail")) f.fail = e.at("fail").get<double>();
  if (e.contains("message")) f.message = e.at("message").get<std::string>();
  if (e.contains("remedy")) {
    const std::string r = e.at("remedy").get<std::string>();
    f.remedy = value_of(kRemedyNames, r);
    if (!f.remedy) return Error{"unknown remedy '" + r + "' of " + f.check, "failing"};
  }
  return f;
}

}  // namespace

Result<std::vector<FailingMeasurement>> failing_from_json(const nlohmann::json& j) {
  try {
    if (j.is_string()) {  // the journal's form before the type: a JSON array as a string
      const auto& s = j.get_ref<const std::string&>();
      if (s.empty()) return std::vector<FailingMeasurement>{};
      auto parsed = nlohmann::json::parse(s, nullptr, /*allow_exceptions=*/false);
      // The old writer cut a long list at 4 KiB: s.substr(0, 4090) + "...]", no JSON any more.
      // Its complete entries are kept: up to the last "},{" before the cut, closed again.
      if (parsed.is_discarded() && s.starts_with("[{") && s.ends_with("...]")) {
        const auto last = s.rfind("},{");
        if (last == std::string::npos) return std::vector<FailingMeasurement>{};  // none whole
        parsed = nlohmann::json::parse(s.substr(0, last + 1) + "]", nullptr, false);
      }
      if (parsed.is_discarded())
        return Error{"not the JSON array it was written as: " + s.substr(0, 80), "failing"};
      return failing_from_json(parsed);
    }
    if (!j.is_array()) return Error{"must be an array", "failing"};
    std::vector<FailingMeasurement> out;
    for (size_t i = 0; i < j.size(); ++i) {
      auto f = entry_from_json(j[i]);
      if (!f.ok()) return Error{"entry " + std::to_string(i) + ": " + f.error().message, "failing"};
      out.push_back(std::move(f.value()));
    }
    return out;
  } catch (const std::exception& e) {
    return Error{e.what(), "failing"};
  }
}

std::string failing_annotation(const std::vector<FailingMeasurement>& failing, size_t max_bytes) {
  if (failing.empty()) return {};
  // Fails before warnings (each in report order): when not all fit, what drains is what shows.
  std::vector<FailingMeasurement> ordered = failing;
  std::stable_partition(ordered.begin(), ordered.end(),
                        [](const FailingMeasurement& f) { return f.status == Status::kFail; });
  std::vector<std::string> entries;
  for (const auto& f : ordered) entries.push_back(to_json(f).dump());
  // All of them when they fit; otherwise the longest prefix that fits and {"more": N}.
  auto with_more = [&](size_t kept) {
    std::string s = "[";
    for (size_t i = 0; i < kept; ++i) s += (i ? "," : "") + entries[i];
    if (kept < entries.size())
      s +=
          std::string(kept ? "," : "") + "{\"more\":" + std::to_string(entries.size() - kept) + "}";
    return s + "]";
  };
  std::string all = with_more(entries.size());
  if (all.size() <= max_bytes) return all;
  const size_t more_room = 32;  // ,{"more":N} with N up to 20 digits (a 64-bit count): 31
  size_t kept = 0, bytes = 2 + more_room;
  while (kept < entries.size() && bytes + entries[kept].size() + 1 <= max_bytes)
    bytes += entries[kept++].size() + 1;
  return with_more(kept);
}

}  // namespace vigil::drainer
