// auth.mode munge: credential checks and Slurm's node addresses; see munge_auth.h.
#include "vigil/drainer/munge_auth.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <algorithm>

namespace vigil::drainer {
namespace {

bool is_loopback(const std::string& ipv4) { return ipv4.rfind("127.", 0) == 0; }

std::string uid_list(const std::set<uint32_t>& uids) {
  std::string out;
  for (uint32_t u : uids) out += (out.empty() ? "" : ",") + std::to_string(u);
  return out;
}

AuthRefusal refuse(int status, std::string reason, std::string message) {
  return {status, std::move(reason), std::move(message)};
}

}  // namespace

const std::vector<std::string>& munge_refusal_reasons() {
  static const std::vector<std::string> r = {
      "missing_credential", "invalid_credential", "expired",           "rewound",
      "replayed",           "payload_mismatch",   "uid_not_allowed",   "loopback_origin",
      "unknown_node",       "forged_origin",      "munge_unavailable", "slurm_unavailable"};
  return r;
}

std::vector<std::string> resolve_ipv4(const std::string& host) {
  std::vector<std::string> out;
  if (host.empty()) return out;
  in_addr literal{};
  if (inet_pton(AF_INET, host.c_str(), &literal) == 1) return {host};
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return out;
  for (addrinfo* a = res; a; a = a->ai_next) {
    char text[INET_ADDRSTRLEN] = {};
    const auto* sin = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
    if (inet_ntop(AF_INET, &sin->sin_addr, text, sizeof text) &&
        std::find(out.begin(), out.end(), text) == out.end())
      out.emplace_back(text);
  }
  freeaddrinfo(res);
  return out;
}

// ---- NodeAddresses ----

NodeAddresses::NodeAddresses(Loader load, const Clock& clock, int64_t refresh_s,
                             int64_t miss_refresh_min_s, Resolver resolve)
    : load_(std::move(load)),
      clock_(clock),
      refresh_s_(refresh_s),
      miss_min_s_(miss_refresh_min_s),
      resolve_(resolve ? std::move(resolve) : Resolver(resolve_ipv4)) {}

int NodeAddresses::refreshes() const {
  std::lock_guard lk(mu_);
  return loads_;
}

bool NodeAddresses::refresh_locked(std::string* why) {
  auto table = load_();
  loaded_at_ = clock_.now_unix();  // a failed load waits its turn too: no storm on slurmctld
  loads_++;
  if (!table.ok()) {
    if (why) *why = table.error().to_string();
    return false;
  }
  nodes_.clear();
  for (const auto& n : table.value()) nodes_[n.name] = Entry{n.address, n.hostname, std::nullopt};
  return true;
}

NodeAddresses::Answer NodeAddresses::lookup_locked(const std::string& node,
                                                   const std::string& ipv4) {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return {Match::kUnknownNode, ""};
  Entry& e = it->second;
  Answer a{Match::kNo, "NodeAddr " + (e.address.empty() ? "-" : e.address) + ", NodeHostname " +
                           (e.hostname.empty() ? "-" : e.hostname)};
  if (ipv4 == e.address || ipv4 == e.hostname) {
    a.match = Match::kYes;
    return a;
  }
  if (!e.resolved) {
    std::vector<std::string> all = resolve_(e.address);
    if (e.hostname != e.address)
      for (auto& ip : resolve_(e.hostname))
        if (std::find(all.begin(), all.end(), ip) == all.end()) all.push_back(ip);
    e.resolved = std::move(all);
  }
  if (std::find(e.resolved->begin(), e.resolved->end(), ipv4) != e.resolved->end())
    a.match = Match::kYes;
  return a;
}

NodeAddresses::Answer NodeAddresses::check(const std::string& node, const std::string& ipv4) {
  std::lock_guard lk(mu_);
  const int64_t now = clock_.now_unix();
  std::string why;
  if (loaded_at_ < 0 || now - loaded_at_ >= refresh_s_) {
    if (!refresh_locked(&why) && nodes_.empty()) return {Match::kUnavailable, why};
  }
  Answer a = lookup_locked(node, ipv4);
  // A node added or readdressed since the last load: read the table again, but not more often
  // than miss_refresh_min_s, so forged reports cannot turn into a flood of RPCs to slurmctld.
  if (a.match != Match::kYes && now - loaded_at_ >= miss_min_s_) {
    if (refresh_locked(&why)) a = lookup_locked(node, ipv4);
  }
  return a;
}

// ---- MungeAuth ----

MungeAuth::MungeAuth(MungeAuthSettings settings, std::unique_ptr<munge::Decoder> decoder,
                     std::shared_ptr<NodeAddresses> addresses)
    : s_(std::move(settings)), decoder_(std::move(decoder)), addresses_(std::move(addresses)) {}

std::optional<AuthRefusal> MungeAuth::authenticate(const std::string& authorization,
                                                   const std::string& method,
                                                   const std::string& path, const std::string& body,
                                                   uint32_t* uid, std::string* origin) {
  const std::string scheme = std::string(munge::kAuthScheme) + " ";
  if (authorization.size() <= scheme.size() || authorization.compare(0, scheme.size(), scheme) != 0)
    return refuse(401, "missing_credential",
                  "missing MUNGE credential (Authorization: Munge <credential>); this drainer "
                  "runs auth mode munge: give vigil-check --auth munge");
  const munge::Decoded d = decoder_->decode(authorization.substr(scheme.size()));
  const std::string from = d.origin.empty() ? "" : " (encoded at " + d.origin + ")";
  switch (d.status) {
    case munge::DecodeStatus::kOk:
      break;
    case munge::DecodeStatus::kUnavailable:
      return refuse(503, "munge_unavailable",
                    "the drainer cannot reach its munged (" + d.error + "); retry");
    case munge::DecodeStatus::kExpired:
      return refuse(403, "expired",
                    "credential expired" + from + ": encode a fresh one for every request");
    case munge::DecodeStatus::kRewound:
      return refuse(403, "rewound",
                    "credential encoded in the future" + from +
                        ": check the clocks of the sender and the drainer");
    case munge::DecodeStatus::kReplayed:
      return refuse(403, "replayed", "credential replayed" + from + ": it was used before");
    case munge::DecodeStatus::kInvalid:
      return refuse(403, "invalid_credential",
                    "credential not valid for this drainer's munge key: " + d.error);
  }
  if (d.payload != munge::request_payload(method, path, body))
    return refuse(403, "payload_mismatch",
                  "credential was not made for this request (method, path or body differ)" + from);
  *uid = d.uid;
  *origin = d.origin;
  return std::nullopt;
}

std::optional<AuthRefusal> MungeAuth::verify_reports(const std::string& authorization,
                                                     const std::string& path,
                                                     const std::string& body,
                                                     const std::vector<NodeReport>& reports) {
  uint32_t uid = 0;
  std::string origin;
  if (auto r = authenticate(authorization, "POST", path, body, &uid, &origin)) return r;
  if (!s_.allowed_uids.count(uid))
    return refuse(
        403, "uid_not_allowed",
        "uid " + std::to_string(uid) +
            " may not post reports (auth.munge.allowed_uids: " + uid_list(s_.allowed_uids) + ")");
  if (origin.empty() || origin == "0.0.0.0")
    return refuse(403, "forged_origin",
                  "credential carries no origin address: start the node's munged with "
                  "--origin=<its address>");
  if (is_loopback(origin) && !s_.allow_loopback_origin)
    return refuse(403, "loopback_origin",
                  "credential origin " + origin +
                      " is a loopback address, the same on every node: start the node's munged "
                      "with --origin=<its address or interface>");
  for (const auto& r : reports) {
    const auto a = addresses_->check(r.node, origin);
    switch (a.match) {
      case NodeAddresses::Match::kYes:
        continue;
      case NodeAddresses::Match::kUnavailable:
        return refuse(
            503, "slurm_unavailable",
            "cannot read Slurm's node table to check the origin (" + a.known + "); retry");
      case NodeAddresses::Match::kUnknownNode:
        return refuse(403, "unknown_node",
                      "report for node '" + r.node + "', which Slurm does not know");
      case NodeAddresses::Match::kNo:
        return refuse(403, "forged_origin",
                      "report for " + r.node + " was signed at " + origin +
                          ", which is not an address of " + r.node + " in Slurm (" + a.known + ")");
    }
  }
  return std::nullopt;
}

std::optional<AuthRefusal> MungeAuth::verify_request(const std::string& authorization,
                                                     const std::string& method,
                                                     const std::string& path,
                                                     const std::string& body, bool admin) {
  uint32_t uid = 0;
  std::string origin;
  if (auto r = authenticate(authorization, method, path, body, &uid, &origin)) return r;
  if (s_.admin_uids.count(uid) || (!admin && s_.allowed_uids.count(uid))) return std::nullopt;
  return refuse(403, "uid_not_allowed",
                "uid " + std::to_string(uid) + " may not " +
                    (admin ? "resume nodes or reset the breaker (auth.munge.admin_uids: " +
                                 uid_list(s_.admin_uids) + ")"
                           : "read the drainer's state"));
}

std::shared_ptr<MungeAuth> make_munge_auth(const DrainerConfig& cfg,
                                           std::shared_ptr<slurm::SlurmApi> slurm,
                                           const Clock& clock) {
  NodeAddresses::Loader load = [slurm]() -> Result<std::vector<slurm::SlurmNodeInfo>> {
    if (!slurm) return Error{"Slurm is disabled", "NodeAddresses"};
    return slurm->load_nodes();
  };
  auto addresses = std::make_shared<NodeAddresses>(
      std::move(load), clock, cfg.munge.address_refresh_s, cfg.munge.miss_refresh_min_s);
  return std::make_shared<MungeAuth>(cfg.munge, munge::make_decoder(cfg.munge.socket),
                                     std::move(addresses));
}

}  // namespace vigil::drainer
