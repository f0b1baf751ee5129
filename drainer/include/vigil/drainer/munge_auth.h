#pragma once
// auth.mode munge (docs/security.md): who sent a request, and may it speak for these nodes?
//
//   NodeAddresses  Slurm's node table (NodeAddr, NodeHostname) as IPv4 addresses per node,
//                  re-read when older than address_refresh_s and, rate-limited, on a miss.
//   MungeAuth      decodes the credential of `Authorization: Munge <cred>` with an injected
//                  munge::Decoder (real: libmunge and the drainer's munged), then checks the
//                  payload against the request, the uid against the allowed lists, and, for
//                  reports, the origin address against every report's node.
// A refusal names its reason, the label of vigil_reports_rejected_total.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "vigil/base/clock.h"
#include "vigil/base/result.h"
#include "vigil/drainer/config.h"
#include "vigil/munge/munge.h"
#include "vigil/report/report.h"
#include "vigil/slurm/slurm_api.h"

namespace vigil::drainer {

class NodeAddresses {
 public:
  using Loader = std::function<Result<std::vector<slurm::SlurmNodeInfo>>()>;
  // IPv4 addresses of a host name or address literal (empty when it does not resolve).
  using Resolver = std::function<std::vector<std::string>(const std::string& host)>;

  NodeAddresses(Loader load, const Clock& clock, int64_t refresh_s, int64_t miss_refresh_min_s,
                Resolver resolve = {});

  enum class Match { kYes, kNo, kUnknownNode, kUnavailable };
  struct Answer {
    Match match = Match::kUnavailable;
    std::string known;  // what Slurm has for the node, for messages: "NodeAddr x, NodeHostname y"
  };
  Answer check(const std::string& node, const std::string& ipv4);
  int refreshes() const;  // table loads so far (tests: the rate limit)

 private:
  struct Entry {
    std::string address, hostname;
    std::optional<std::vector<std::string>> resolved;  // resolved on first use after a load
  };
  bool refresh_locked(std::string* why);
  Answer lookup_locked(const std::string& node, const std::string& ipv4);

  Loader load_;
  const Clock& clock_;
  int64_t refresh_s_, miss_min_s_;
  Resolver resolve_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> nodes_;
  int64_t loaded_at_ = -1;
  int loads_ = 0;
};

// getaddrinfo(AF_INET) of a name or literal.
std::vector<std::string> resolve_ipv4(const std::string& host);

struct AuthRefusal {
  int status = 403;    // 401 no credential, 403 refused, 503 munged or Slurm unreachable
  std::string reason;  // metric label: forged_origin, replayed, expired, ...
  std::string message;
};

class MungeAuth {
 public:
  MungeAuth(MungeAuthSettings settings, std::unique_ptr<munge::Decoder> decoder,
            std::shared_ptr<NodeAddresses> addresses);

  // A POST /v1/reports: nullopt when every report may be accepted.
  std::optional<AuthRefusal> verify_reports(const std::string& authorization,
                                            const std::string& path, const std::string& body,
                                            const std::vector<NodeReport>& reports);
  // Any other /v1 request: admin (resume, breaker reset) needs auth.munge.admin_uids; reading
  // (GET) takes admin or allowed uids.
  std::optional<AuthRefusal> verify_request(const std::string& authorization,
                                            const std::string& method, const std::string& path,
                                            const std::string& body, bool admin);

 private:
  // Decodes and checks the payload; on success *uid and *origin are set.
  std::optional<AuthRefusal> authenticate(const std::string& authorization,
                                          const std::string& method, const std::string& path,
                                          const std::string& body, uint32_t* uid,
                                          std::string* origin);

  MungeAuthSettings s_;
  std::unique_ptr<munge::Decoder> decoder_;
  std::shared_ptr<NodeAddresses> addresses_;
};

// The real one for a configuration: libmunge on auth.munge.socket, addresses from `slurm`.
std::shared_ptr<MungeAuth> make_munge_auth(const DrainerConfig& cfg,
                                           std::shared_ptr<slurm::SlurmApi> slurm,
                                           const Clock& clock);

// Every reason MungeAuth can give (the metric's label values, declared up front).
const std::vector<std::string>& munge_refusal_reasons();

}  // namespace vigil::drainer
