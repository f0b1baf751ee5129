#pragma once
// MUNGE credentials for Vigil's HTTP requests (docs/security.md). A sender asks its local
// munged to encode a credential whose payload names the request: method, path and the SHA-256
// of the body. The credential travels in `Authorization: Munge <credential>`, the body stays
// the plain JSON. The receiver decodes it with its own munged, which says who encoded it (uid,
// gid), where (the origin IPv4 address munged stamps in, its --origin), when, and whether it
// is expired or replayed; the receiver recomputes the payload from what it got and compares.
//
// Why the body's hash and not the body: a credential is small enough for a header (a report
// of megabytes is not), the body is parsed once as before, and a changed byte changes the
// hash, so a credential cannot be moved to another body, path or method.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "vigil/base/enum_names.h"
#include "vigil/base/result.h"

namespace vigil::munge {

// The scheme word of the Authorization header: "Munge <credential>".
inline constexpr std::string_view kAuthScheme = "Munge";

// "vigil-request-v1 POST /v1/reports sha256=<64 hex digits>".
std::string request_payload(std::string_view method, std::string_view path, std::string_view body);

struct EncodeOptions {
  std::string socket;  // munged's socket; empty: libmunge's default (/run/munge/munge.socket.2)
  int ttl_s = 0;       // 0: munged's default (300 s unless configured)
};

// Asks munged for a credential carrying `payload`.
Result<std::string> encode(std::string_view payload, const EncodeOptions& opts);

enum class DecodeStatus {
  kOk,
  kExpired,      // older than its time-to-live
  kRewound,      // encoded in the future (clock skew beyond munged's tolerance)
  kReplayed,     // this munged decoded the same credential before
  kInvalid,      // not a credential of our key: malformed, wrong key, tampered
  kUnavailable,  // munged could not be asked (socket missing, daemon down): not the sender's fault
};
inline constexpr EnumName<DecodeStatus> kDecodeStatusNames[] = {
    {DecodeStatus::kOk, "ok"},           {DecodeStatus::kExpired, "expired"},
    {DecodeStatus::kRewound, "rewound"}, {DecodeStatus::kReplayed, "replayed"},
    {DecodeStatus::kInvalid, "invalid"}, {DecodeStatus::kUnavailable, "unavailable"}};
inline std::string_view to_string(DecodeStatus s) {
  return name_of(kDecodeStatusNames, s, "invalid");
}

struct Decoded {
  DecodeStatus status = DecodeStatus::kInvalid;
  std::string payload;
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::string origin;  // dotted IPv4 munged stamped in at encode time ("0.0.0.0": none)
  int64_t encode_time_unix = 0;
  std::string error;  // munged's words when status is not kOk
};

// What decodes a credential; the drainer takes one so that its checks can be tested without a
// munged (tests inject their own).
class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual Decoded decode(const std::string& credential) = 0;
};

// The real one: munge_decode through the munged at `socket` (empty: the default socket).
std::unique_ptr<Decoder> make_decoder(std::string socket);

}  // namespace vigil::munge
