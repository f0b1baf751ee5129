// The request payload a credential carries, and munged being unreachable (no daemon needed).
#include "vigil/munge/munge.h"

#include <gtest/gtest.h>

#include "temp_dir.h"

namespace vigil::munge {
namespace {

TEST(RequestPayload, names_method_path_and_the_bodys_sha256) {
  // SHA-256 of the empty string and of "abc" (FIPS 180-2 test vectors).
  EXPECT_EQ(request_payload("POST", "/v1/reports", ""),
            "vigil-request-v1 POST /v1/reports "
            "sha256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(request_payload("GET", "/v1/nodes", "abc"),
            "vigil-request-v1 GET /v1/nodes "
            "sha256=ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(RequestPayload, any_change_of_body_path_or_method_changes_it) {
  const std::string base = request_payload("POST", "/v1/reports", R"({"node":"gpu-1"})");
  EXPECT_NE(base, request_payload("POST", "/v1/reports", R"({"node":"gpu-2"})"));
  EXPECT_NE(base, request_payload("POST", "/v1/nodes/gpu-1/resume", R"({"node":"gpu-1"})"));
  EXPECT_NE(base, request_payload("PUT", "/v1/reports", R"({"node":"gpu-1"})"));
}

TEST(Munge, unreachable_munged_is_an_error_naming_the_socket_and_unavailable_to_decode) {
  testing::TempDir dir;
  const std::string socket = dir.str() + "/no-munged.socket";
  auto cred = encode("x", {socket, 0});
  ASSERT_FALSE(cred.ok());
  EXPECT_NE(cred.error().to_string().find(socket), std::string::npos) << cred.error().to_string();
  auto d = make_decoder(socket)->decode("MUNGE:AwQFAAA=:");
  EXPECT_EQ(d.status, DecodeStatus::kUnavailable) << d.error;
  EXPECT_EQ(to_string(d.status), "unavailable");
}

}  // namespace
}  // namespace vigil::munge
