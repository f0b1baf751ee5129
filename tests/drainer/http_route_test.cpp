// The drainer's routes (drainer/src/http_route.cpp): each endpoint its method and path, the
// {node} and {sku} parts, 405 for a known path with the wrong method and 404 for anything else
// (the fuzzer, tests/fuzz/fuzz_http_route.cpp, only proves it never crashes).
#include "http_route.h"

#include <gtest/gtest.h>

namespace vigil::drainer {
namespace {

std::optional<Route> route(const std::string& method, const std::string& path, int* status) {
  *status = 0;
  return match_route(method, path, status);
}

TEST(HttpRoute, every_endpoint_has_its_method_and_path) {
  int st = 0;
  EXPECT_EQ(route("POST", "/v1/reports", &st)->kind, Route::kReports);
  EXPECT_EQ(route("GET", "/v1/nodes", &st)->kind, Route::kNodes);
  auto node = route("GET", "/v1/nodes/gpu-7", &st);
  ASSERT_TRUE(node);
  EXPECT_EQ(node->kind, Route::kNode);
  EXPECT_EQ(node->node, "gpu-7");
  auto resume = route("POST", "/v1/nodes/gpu-7/resume", &st);
  ASSERT_TRUE(resume);
  EXPECT_EQ(resume->kind, Route::kResume);
  EXPECT_EQ(resume->node, "gpu-7");
  EXPECT_EQ(route("GET", "/v1/breaker", &st)->kind, Route::kBreaker);
  EXPECT_EQ(route("POST", "/v1/breaker/reset", &st)->kind, Route::kBreakerReset);
  EXPECT_EQ(route("GET", "/healthz", &st)->kind, Route::kHealthz);
  EXPECT_EQ(route("GET", "/readyz", &st)->kind, Route::kReadyz);
  EXPECT_EQ(route("GET", "/metrics", &st)->kind, Route::kMetrics);
  auto cal = route("GET", "/v1/calibration/H100-SXM5-80GB", &st);
  ASSERT_TRUE(cal);
  EXPECT_EQ(cal->kind, Route::kCalibration);
  EXPECT_EQ(cal->node, "H100-SXM5-80GB");
  EXPECT_EQ(route("GET", "/v1/classes", &st)->kind, Route::kClasses);
  EXPECT_EQ(route("GET", "/v1/rechecks", &st)->kind, Route::kRechecks);
  EXPECT_FALSE(route("POST", "/v1/classes", &st));
  EXPECT_EQ(st, 405);
}

TEST(HttpRoute, a_wrong_method_is_405_and_an_unknown_path_404) {
  int st = 0;
  EXPECT_FALSE(route("GET", "/v1/reports", &st));
  EXPECT_EQ(st, 405);
  EXPECT_FALSE(route("DELETE", "/v1/nodes/gpu-7", &st));
  EXPECT_EQ(st, 405);
  EXPECT_FALSE(route("GET", "/v2/nodes", &st));
  EXPECT_EQ(st, 404);
  EXPECT_FALSE(route("GET", "/v1/nodes/gpu-7/reboot", &st));
  EXPECT_EQ(st, 404);
}

}  // namespace
}  // namespace vigil::drainer
