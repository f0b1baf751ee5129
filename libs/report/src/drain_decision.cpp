#include "vigil/report/drain_decision.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "vigil/report/check_catalog.h"

namespace vigil {

const std::set<std::string>& default_fatal_checks() {
  static const std::set<std::string> kFatal = [] {
    const auto names = catalog_check_names(CheckSeverity::kFatal);
    return std::set<std::string>(names.begin(), names.end());
  }();
  return kFatal;
}

const std::set<std::string>& default_noisy_checks() {
  static const std::set<std::string> kNoisy = [] {
    const auto names = catalog_check_names(CheckSeverity::kNoisy);
    return std::set<std::string>(names.begin(), names.end());
  }();
  return kNoisy;
}

bool SharedDrainPolicy::is_fatal(std::string_view check, std::string_view fault_code) const {
  if (!fault_code.empty()) {
    const std::string code(fault_code);
    if (lenient_fault_codes.count(code)) return false;
    if (fatal_fault_codes.count(code)) return true;
  }
  return fatal_checks.count(std::string(check)) > 0;
}

int breaker_cap(int max_drains, double max_percent, int group_size) {
  const int pct_cap = std::max(
      1, static_cast<int>(std::floor(std::max(group_size, 1) * max_percent / 100.0 + 1e-9)));
  return std::min(max_drains, pct_cap);
}

nlohmann::json to_json(const SharedDrainPolicy& p) {
  return {{"fatal_checks", p.fatal_checks},
          {"fatal_fault_codes", p.fatal_fault_codes},
          {"lenient_fault_codes", p.lenient_fault_codes},
          {"dry_run", p.dry_run},
          {"breaker",
           {{"max_drains", p.breaker_max_drains},
            {"max_percent", p.breaker_max_percent},
            {"window_s", p.breaker_window_s}}},
          {"breaker_open", p.breaker_open},
          {"source", p.source}};
}

namespace {

// Sets out from j[key] when present; nullopt, or an error naming `where<key>` for a wrong type.
// Numbers are checked before conversion: nlohmann converts a boolean or a fraction to an int
// silently, and an out-of-range double to an int is undefined behaviour.
template <typename T>
std::optional<Error> take(const nlohmann::json& j, const char* key, const std::string& where,
                          T& out) {
  if (!j.is_object() || !j.contains(key)) return std::nullopt;
  const nlohmann::json& v = j.at(key);
  bool ok = false;
  if constexpr (std::is_same_v<T, bool>) {
    ok = v.is_boolean();
  } else if constexpr (std::is_integral_v<T>) {
    ok = v.is_number_integer() &&
         (v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max())
                                 : v.get<int64_t>() >= int64_t(std::numeric_limits<T>::min()) &&
                                       v.get<int64_t>() <= int64_t(std::numeric_limits<T>::max()));
  } else if constexpr (std::is_floating_point_v<T>) {
    ok = v.is_number();
  } else if constexpr (std::is_same_v<T, std::string>) {
    ok = v.is_string();
  } else {  // std::set<std::string>
    ok = v.is_array() &&
         std::all_of(v.begin(), v.end(), [](const auto& e) { return e.is_string(); });
  }
  if (!ok) return Error{"wrong type or out of range", where + key};
  out = v.get<T>();
  return std::nullopt;
}

#define VIGIL_TAKE(...) \
  if (auto e = take(__VA_ARGS__)) return *e

}  // namespace

Result<SharedDrainPolicy> shared_policy_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return Error{"not an object", "policy"};
  SharedDrainPolicy p;
  VIGIL_TAKE(j, "fatal_checks", "policy.", p.fatal_checks);
  VIGIL_TAKE(j, "fatal_fault_codes", "policy.", p.fatal_fault_codes);  // absent before 2026-11-27
  VIGIL_TAKE(j, "lenient_fault_codes", "policy.", p.lenient_fault_codes);
  VIGIL_TAKE(j, "dry_run", "policy.", p.dry_run);
  VIGIL_TAKE(j, "source", "policy.", p.source);
  if (j.contains("breaker")) {
    const auto& b = j.at("breaker");
    if (!b.is_object()) return Error{"not an object", "policy.breaker"};
    VIGIL_TAKE(b, "max_drains", "policy.breaker.", p.breaker_max_drains);
    VIGIL_TAKE(b, "max_percent", "policy.breaker.", p.breaker_max_percent);
    VIGIL_TAKE(b, "window_s", "policy.breaker.", p.breaker_window_s);
  }
  VIGIL_TAKE(j, "breaker_open", "policy.", p.breaker_open);
  if (p.breaker_max_drains < 1 || !(p.breaker_max_percent > 0) || p.breaker_max_percent > 100 ||
      p.breaker_window_s < 1)
    return Error{"out of range", "policy.breaker"};
  return p;
}

nlohmann::json to_json(const ReportReply& r) {
  nlohmann::json j = {{"accepted", r.accepted}, {"duplicates", r.duplicates}};
  if (!r.decisions.empty() || r.policy) {
    nlohmann::json ds = nlohmann::json::array();
    for (const auto& d : r.decisions)
      ds.push_back({{"node", d.node},
                    {"run_id", d.run_id},
                    {"verdict", to_string(d.verdict)},
                    {"reason", d.reason},
                    {"why", d.why}});
    j["decisions"] = std::move(ds);
  }
  if (r.policy) j["policy"] = to_json(*r.policy);
  return j;
}

Result<ReportReply> report_reply_from_json(std::string_view body) {
  const auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Error{"not a JSON object", "reply"};
  ReportReply r;
  VIGIL_TAKE(j, "accepted", "reply.", r.accepted);
  VIGIL_TAKE(j, "duplicates", "reply.", r.duplicates);
  if (j.contains("decisions")) {
    if (!j["decisions"].is_array()) return Error{"not an array", "reply.decisions"};
    for (const auto& d : j["decisions"]) {
      ReportDecision x;
      std::string verdict;
      VIGIL_TAKE(d, "node", "reply.decisions[].", x.node);
      VIGIL_TAKE(d, "run_id", "reply.decisions[].", x.run_id);
      VIGIL_TAKE(d, "verdict", "reply.decisions[].", verdict);
      VIGIL_TAKE(d, "reason", "reply.decisions[].", x.reason);
      VIGIL_TAKE(d, "why", "reply.decisions[].", x.why);
      x.verdict = value_of(kDrainVerdictNames, verdict).value_or(DrainVerdict::kUnknown);
      r.decisions.push_back(std::move(x));
    }
  }
  if (j.contains("policy")) {
    if (auto p = shared_policy_from_json(j["policy"]))
      r.policy = std::move(*p);
    else
      r.policy_error = p.error().to_string();
  }
  return r;
}

}  // namespace vigil
