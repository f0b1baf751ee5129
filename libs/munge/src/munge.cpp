// libmunge wrappers and the request payload; see munge.h.
#include "vigil/munge/munge.h"

#include <arpa/inet.h>
#include <munge.h>
#include <openssl/sha.h>

#include <cstdlib>
#include <ctime>

namespace vigil::munge {
namespace {

// One munge_ctx per call: contexts are not thread-safe, and creating one is cheap (no I/O).
struct Ctx {
  munge_ctx_t ctx = munge_ctx_create();
  ~Ctx() {
    if (ctx) munge_ctx_destroy(ctx);
  }
  Ctx() = default;
  Ctx(const Ctx&) = delete;
  Ctx& operator=(const Ctx&) = delete;
  std::string why() const {
    const char* e = ctx ? munge_ctx_strerror(ctx) : nullptr;
    return e ? e : "unknown munge error";
  }
};

DecodeStatus status_of(munge_err_t e) {
  switch (e) {
    case EMUNGE_SUCCESS:
      return DecodeStatus::kOk;
    case EMUNGE_CRED_EXPIRED:
      return DecodeStatus::kExpired;
    case EMUNGE_CRED_REWOUND:
      return DecodeStatus::kRewound;
    case EMUNGE_CRED_REPLAYED:
      return DecodeStatus::kReplayed;
    case EMUNGE_SOCKET:
    case EMUNGE_TIMEOUT:
    case EMUNGE_NO_MEMORY:
    case EMUNGE_SNAFU:
      return DecodeStatus::kUnavailable;
    default:
      return DecodeStatus::kInvalid;
  }
}

class LibMungeDecoder final : public Decoder {
 public:
  explicit LibMungeDecoder(std::string socket) : socket_(std::move(socket)) {}

  Decoded decode(const std::string& credential) override {
    Decoded d;
    Ctx c;
    if (!c.ctx) {
      d.status = DecodeStatus::kUnavailable;
      d.error = "munge_ctx_create failed";
      return d;
    }
    if (!socket_.empty() &&
        munge_ctx_set(c.ctx, MUNGE_OPT_SOCKET, socket_.c_str()) != EMUNGE_SUCCESS) {
      d.status = DecodeStatus::kUnavailable;
      d.error = c.why();
      return d;
    }
    void* buf = nullptr;
    int len = 0;
    uid_t uid = 0;
    gid_t gid = 0;
    const munge_err_t e = munge_decode(credential.c_str(), c.ctx, &buf, &len, &uid, &gid);
    d.status = status_of(e);
    if (buf) {
      d.payload.assign(static_cast<const char*>(buf), static_cast<size_t>(len));
      std::free(buf);
    }
    if (e != EMUNGE_SUCCESS) d.error = c.why();
    // For expired, rewound and replayed credentials munge still fills in the metadata.
    d.uid = uid;
    d.gid = gid;
    in_addr addr{};
    if (munge_ctx_get(c.ctx, MUNGE_OPT_ADDR4, &addr) == EMUNGE_SUCCESS) {
      char text[INET_ADDRSTRLEN] = {};
      if (inet_ntop(AF_INET, &addr, text, sizeof text)) d.origin = text;
    }
    time_t t = 0;
    if (munge_ctx_get(c.ctx, MUNGE_OPT_ENCODE_TIME, &t) == EMUNGE_SUCCESS) d.encode_time_unix = t;
    return d;
  }

 private:
  std::string socket_;
};

}  // namespace

std::string request_payload(std::string_view method, std::string_view path, std::string_view body) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(body.data()), body.size(), md);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "vigil-request-v1 ";
  out.append(method);
  out += ' ';
  out.append(path);
  out += " sha256=";
  for (unsigned char b : md) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

Result<std::string> encode(std::string_view payload, const EncodeOptions& opts) {
  const std::string where =
      "munge_encode(" + (opts.socket.empty() ? "default socket" : opts.socket) + ")";
  Ctx c;
  if (!c.ctx) return Error{"munge_ctx_create failed", where};
  if (!opts.socket.empty() &&
      munge_ctx_set(c.ctx, MUNGE_OPT_SOCKET, opts.socket.c_str()) != EMUNGE_SUCCESS)
    return Error{c.why(), where};
  if (opts.ttl_s > 0 && munge_ctx_set(c.ctx, MUNGE_OPT_TTL, opts.ttl_s) != EMUNGE_SUCCESS)
    return Error{c.why(), where};
  char* cred = nullptr;
  const munge_err_t e =
      munge_encode(&cred, c.ctx, payload.data(), static_cast<int>(payload.size()));
  if (e != EMUNGE_SUCCESS) {
    std::free(cred);
    return Error{c.why(), where};  // munge says what to do ("Did you start munged?")
  }
  std::string out(cred);
  std::free(cred);
  return out;
}

std::unique_ptr<Decoder> make_decoder(std::string socket) {
  return std::make_unique<LibMungeDecoder>(std::move(socket));
}

}  // namespace vigil::munge
