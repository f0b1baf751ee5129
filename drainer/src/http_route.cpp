// Which route a request names; see http_route.h.
#include "http_route.h"

namespace vigil::drainer {

std::optional<Route> match_route(const std::string& method, const std::string& path,
                                 int* status_if_none) {
  auto want = [&](const char* m, Route r) -> std::optional<Route> {
    if (method == m) return r;
    *status_if_none = 405;
    return std::nullopt;
  };
  *status_if_none = 404;
  if (path == "/v1/reports") return want("POST", {Route::kReports, ""});
  if (path == "/v1/nodes") return want("GET", {Route::kNodes, ""});
  if (path == "/v1/breaker") return want("GET", {Route::kBreaker, ""});
  if (path == "/v1/breaker/reset") return want("POST", {Route::kBreakerReset, ""});
  if (path == "/healthz") return want("GET", {Route::kHealthz, ""});
  if (path == "/readyz") return want("GET", {Route::kReadyz, ""});
  if (path == "/metrics") return want("GET", {Route::kMetrics, ""});
  if (path == "/v1/classes") return want("GET", {Route::kClasses, ""});
  if (path == "/v1/rechecks") return want("GET", {Route::kRechecks, ""});
  constexpr std::string_view kCalibration = "/v1/calibration/";
  if (path.size() > kCalibration.size() &&
      path.compare(0, kCalibration.size(), kCalibration) == 0 &&
      path.find('/', kCalibration.size()) == std::string::npos)
    return want("GET", {Route::kCalibration, path.substr(kCalibration.size())});
  constexpr std::string_view kNodes = "/v1/nodes/";
  if (path.size() > kNodes.size() && path.compare(0, kNodes.size(), kNodes) == 0) {
    std::string rest = path.substr(kNodes.size());
    constexpr std::string_view kResume = "/resume";
    if (rest.size() > kResume.size() &&
        rest.compare(rest.size() - kResume.size(), kResume.size(), kResume) == 0) {
      rest.resize(rest.size() - kResume.size());
      if (rest.find('/') == std::string::npos) return want("POST", {Route::kResume, rest});
    } else if (rest.find('/') == std::string::npos) {
      return want("GET", {Route::kNode, rest});
    }
  }
  return std::nullopt;
}

}  // namespace vigil::drainer
