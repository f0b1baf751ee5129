#pragma once
// vigil-drainer configuration: the settings the core runs with and their defaults. The YAML file
// is read by config_file.h (parse -> defaults -> validate, every error naming the file, line and
// field). Reference: docs/drainer.md.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "vigil/base/enum_names.h"
#include "vigil/base/result.h"
#include "vigil/detect/config.h"
#include "vigil/drainer/repair.h"
#include "vigil/report/drain_decision.h"
#include "vigil/slurm/slurm_rest.h"

namespace vigil::drainer {

struct CheckPolicy {
  int drain_after = 2;   // consecutive fail reports before the node is drained
  int resume_after = 2;  // consecutive passing reports before a vigil drain is lifted
};

// The qualify gate (docs/qualify.md "The gate"): a node held drained, with Vigil's own reason,
// until a report of `suite` passes. Off unless a site turns it on (the shipped configs do).
struct GateConfig {
  // A node first heard from once the drainer's state is learn_s old: held as new. The first
  // learn_s are for hearing from the fleet Vigil was deployed on, which is not new.
  bool new_nodes = false;
  // A node back from the repair ladder's reboot or GPU reset (its `rechecking` stage): resumed on
  // a pass of `suite` only, not on resume_after ordinary re-checks (NVSentinel #1427: "a node
  // reboot or GPU reset completes, but the GPU is still unstable").
  bool repaired = false;
  std::string suite = "qualify";  // a report of this suite or one holding it passes the gate
  int64_t learn_s = 86400;
  // GET /v1/rechecks lists a held node at once, then again after retry_s while it stays held.
  int64_t retry_s = 3600;
  bool on() const { return new_nodes || repaired; }
};

struct PolicyConfig {
  GateConfig gate;  // read from the file's top-level `gate:` section
  CheckPolicy defaults;
  std::map<std::string, CheckPolicy> checks;  // by check name (e.g. "nccl_allreduce_ib")
  // Checks (and fault codes) whose failure is a fatal hardware finding: drain_after 1.
  std::set<std::string> fatal_checks;
  std::set<std::string> fatal_fault_codes;
  // drain_after by fault code, over the check's own (the fail-slow verdicts: a confirmed slow
  // figure drains after detection.confirmed_drain_after reports, an unconfirmed one after
  // detection.unconfirmed_drain_after).
  std::map<std::string, int> fault_code_drain_after;
  int64_t staleness_s = 6 * 3600;  // no report for longer -> node state "stale" (never drained)
  // A drain on performance alone is listed for a held re-check this long after it (GET
  // /v1/rechecks, requalify.h) until it is requalify_window_s old. 0: never.
  int64_t requalify_after_s = 60;
  int64_t requalify_window_s = 6 * 3600;

  // drain_after / resume_after for one failing result.
  CheckPolicy for_check(std::string_view check, std::string_view fault_code = {}) const;
};

// What of `policy` drains after one report, for the hooks (SharedDrainPolicy's fatal_checks,
// fatal_fault_codes, lenient_fault_codes): for every catalog check (the hooks run no other)
// and fault code, out.is_fatal(check, code) == (policy.for_check(check, code).drain_after <= 1).
void shared_fatal_rule(const PolicyConfig& policy, SharedDrainPolicy& out);

struct BreakerConfig {
  int max_drains = kDefaultBreakerMaxDrains;       // new drains per window per partition/SKU group
  double max_percent = kDefaultBreakerMaxPercent;  // ... and at most this percent of its nodes
  int64_t window_s = kDefaultBreakerWindowS;       // sliding window
};

enum class NodeMapping { kIdentity, kReport, kPodLookup };
inline constexpr EnumName<NodeMapping> kNodeMappingNames[] = {
    {NodeMapping::kIdentity, "identity"},
    {NodeMapping::kReport, "report"},
    {NodeMapping::kPodLookup, "pod-lookup"}};
inline std::string_view to_string(NodeMapping m) {
  return name_of(kNodeMappingNames, m, "identity");
}

struct KubeSettings {
  bool enabled = false;
  std::string annotation_prefix = "vigil.dev/";
  bool condition = true;  // set Node condition type condition_type
  std::string condition_type = "VigilHealthy";
  bool taint = false;  // add NoSchedule taint key <prefix>unhealthy when drained
  NodeMapping node_mapping = NodeMapping::kIdentity;
  std::string pod_namespace;  // for kPodLookup
  std::string kubeconfig;     // empty: in-cluster service account
};

// How the Slurm sink reaches slurmctld (docs/slurm-compat.md): libslurm (built for one Slurm
// release) or slurmrestd (REST + JWT, any release that serves v0.0.40 or newer).
enum class SlurmBackend { kLibslurm, kRest };

struct SlurmSettings {
  bool enabled = true;
  SlurmBackend backend = SlurmBackend::kLibslurm;
  std::string conf;                // libslurm: slurm.conf path; empty: SLURM_CONF / default
  slurm::RestSettings rest;        // rest: slurmrestd URL, JWT source, API version
  int64_t retry_initial_ms = 500;  // backoff while slurmctld is unreachable
  int64_t retry_max_ms = 30000;
  int64_t batch_window_ms = 200;  // collect decisions for this long into one RPC per reason
  // Decision passes reuse Slurm's node table while it is at most this old (0: read it for every
  // pass). The Slurm sink always re-reads it right before acting, and that read refreshes it.
  int64_t view_max_age_s = 5;
};

// Fail-slow detection (docs/detection.md): every performance figure of every report is judged
// against its peers, its own history and the SKU's fleet by vigil::detect.
inline constexpr std::string_view kSlowFaultCode = "VIGIL-SLOW";
inline constexpr std::string_view kSlowConfirmedFaultCode = "VIGIL-SLOW-CONFIRMED";

struct DetectionSettings {
  bool enabled = true;
  int confirmed_drain_after = 1;    // a slow figure its repeats confirmed
  int unconfirmed_drain_after = 2;  // consecutive reports with an unconfirmed slow figure
  bool reset_on_resume = true;      // a resumed (repaired) node starts a new history
  detect::DetectConfig engine = detect::DetectConfig::defaults();
};

// Hardware classes learned from Slurm and the fleet (classes.h, docs/thresholds.md "Classes").
struct ClassSettings {
  bool enabled = true;
  // A figure is judged once this many OTHER nodes of the class have it (>= 3: fewer cannot
  // outvote one node's own fault)...
  int min_nodes = 5;
  // ... and at least this share of them agree on one value: a real fault is rare (a few in a
  // hundred nodes), a split class is two configurations Slurm does not tell apart yet.
  double min_share = 0.8;
  // A node not heard from for a week leaves its class (fixed: not a config file key).
  std::int64_t forget_after_s = 7 * 86400;
  // What the site declares (confirms) a class has, docs/thresholds.md "Classes": class name
  // ("H100-SXM5-80GB gpu:h100:8 [ib,ndr]") -> its figures as GET /v1/classes names them
  // ("ib_port/active_ports" -> 8) and its versions ("vbios" -> "96.00.89.00.01"). A declared
  // figure is judged from the first report, without a consensus, and wins over one.
  struct Declared {
    std::map<std::string, double> figures;
    std::map<std::string, std::string> versions;
  };
  std::map<std::string, Declared> declared;
};

// How the HTTP listener (libmicrohttpd, event-driven) bounds what clients can hold: no number
// of idle or trickling connections can keep a legitimate report from being answered.
struct ListenLimits {
  int64_t request_timeout_s = 10;       // headers + body of one request, from connect or last reply
  int max_connections = 10000;          // open connections in all (raise RLIMIT_NOFILE to match)
  int max_connections_per_source = 64;  // per client address; more are refused at accept
  int workers = 4;                      // threads that run requests (journal fsync included)
  int queue_depth = 1024;               // requests waiting for a worker; beyond: 503 + Retry-After
};

// HTTPS for the listener (`listen.tls`): PEM files read and checked at validation, so a bad
// or unreadable file is a startup error naming the field, and the service serves TLS only.
struct ListenTls {
  std::string cert_file;  // server certificate (chain), PEM; its names must match the URL host
  std::string key_file;   // its private key, PEM, not encrypted
  std::string ca_file;    // optional: CA the operator commands verify the service with
  std::string cert_pem;   // contents, loaded at validation
  std::string key_pem;
};

// auth.mode munge (docs/security.md): each request carries a MUNGE credential; a report is
// accepted only when munged vouches for it (not expired, not replayed, our key), the payload
// matches the request, the encoding uid is allowed, and the origin address munged stamped in is
// one Slurm knows for the report's node (NodeAddr / NodeHostname).
struct MungeAuthSettings {
  bool enabled = false;
  std::string socket;               // the drainer's munged; empty: /run/munge/munge.socket.2
  std::set<uint32_t> allowed_uids;  // who may post reports (vigil-check, the hooks); required
  std::set<uint32_t> admin_uids;    // who may resume and reset the breaker; required
  int64_t address_refresh_s = 300;  // Slurm's node table is re-read when older than this
  int64_t miss_refresh_min_s = 10;  // ... and on an unknown node or address, at most this often
  // Origins in 127.0.0.0/8 are refused unless set (tests on one host): a munged whose hostname
  // maps to 127.0.1.1 (Debian's /etc/hosts) stamps the same origin on every node.
  bool allow_loopback_origin = false;
};

// The audit log's size rotation (audit_log.h): audit.jsonl, then audit.jsonl.1 .. .<keep>.
struct AuditSettings {
  int64_t max_mb = 100;
  int keep = 5;  // rotated files kept besides the current one; 0: the full file is deleted
};

// The webhook sink (docs/drainer.md "Webhook sink"): every drain, resume, would-drain, breaker
// and skipped-drain event POSTed as one CloudEvents 1.0 JSON document, in order per node.
struct WebhookSettings {
  bool enabled = false;
  std::string url;                        // http(s)://host[:port]/path
  std::string ca_file;                    // https: the CA the receiver must chain to
  std::string token_file;                 // bearer token for the receiver; empty: none
  std::string token;                      // loaded from token_file at validation
  std::string source = "/vigil/drainer";  // the CloudEvents "source" attribute
  int64_t timeout_ms = 5000;              // connect, write and read, per attempt
  int64_t retry_initial_ms = 500;         // backoff after a failed attempt, doubled up to ...
  int64_t retry_max_ms = 30000;
  int max_attempts = 10;  // then the event is given up: vigil_sink_given_up_total{sink="webhook"}
};

struct DrainerConfig {
  std::string source;  // file the config came from ("<string>" for tests)
  std::string listen_address = "127.0.0.1";
  int listen_port = 8480;
  ListenLimits limits;
  std::optional<ListenTls> tls;  // unset: plain HTTP
  bool auth_enabled = true;
  std::string token_file;  // required unless `auth: disabled`
  std::string token;       // loaded from token_file at validation
  // Optional: when set, operator endpoints (resume, breaker reset) need this token and refuse
  // the ingest token, which sits on every compute node. It is accepted on every /v1 endpoint.
  std::string admin_token_file;
  std::string admin_token;
  MungeAuthSettings munge;  // auth.mode: munge (token_file is then not used)
  int64_t max_body_bytes = 8 * 1024 * 1024;
  std::string state_dir = "/var/lib/vigil-drainer";  // journal, snapshot, audit log
  std::string spool_dir;                             // ingested on start and periodically
  int64_t spool_scan_s = 30;
  bool dry_run = false;
  int64_t snapshot_every = 10000;  // journal records between snapshots
  AuditSettings audit;
  PolicyConfig policy;
  BreakerConfig breaker;
  SlurmSettings slurm;
  KubeSettings kubernetes;
  WebhookSettings webhook;
  DetectionSettings detection;
  ClassSettings classes;
  RepairConfig repair;  // the repair ladder (repair.h, docs/repair.md); off by default
};

// Built-in defaults for fatal checks and per-check overrides (documented in docs/drainer.md).
PolicyConfig default_policy();

}  // namespace vigil::drainer
