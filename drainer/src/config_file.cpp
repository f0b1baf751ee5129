// The YAML configuration file: parse -> defaults -> validate. Errors: "<file>:<line>: <field>:
// <what>". Part of the program (yaml-cpp), not of the drainer core.
#include "vigil/drainer/config_file.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <type_traits>

#include "config_reader.h"
#include "tls_files.h"
#include "vigil/base/http_url.h"
#include "vigil/base/strings.h"
#include "vigil/config/strict_yaml.h"

namespace vigil::drainer {
namespace {

using config_detail::read_classes;
using config_detail::read_detection;
using config_detail::Reader;
using config_detail::Stop;

void read_check_policy(const Reader& rd, const YAML::Node& n, const std::string& field,
                       CheckPolicy& p) {
  rd.only_keys(n, field, {"drain_after", "resume_after"});
  rd.get(n, "drain_after", field + ".drain_after", p.drain_after);
  rd.get(n, "resume_after", field + ".resume_after", p.resume_after);
  if (p.drain_after < 1) rd.fail(n["drain_after"], field + ".drain_after", "must be >= 1");
  if (p.resume_after < 1) rd.fail(n["resume_after"], field + ".resume_after", "must be >= 1");
}

std::set<std::string> read_string_set(const Reader& rd, const YAML::Node& n,
                                      const std::string& field) {
  std::set<std::string> out;
  if (!n.IsDefined() || n.IsNull()) return out;
  if (!n.IsSequence()) rd.fail(n, field, "must be a list of strings");
  for (const auto& e : n) {
    if (!e.IsScalar() || e.Scalar().empty()) rd.fail(e, field, "entries must be non-empty strings");
    out.insert(e.Scalar());
  }
  return out;
}

// A bearer token file (auth.token_file, webhook.token_file): at least 16 characters.
std::string read_token(const Reader& rd, const YAML::Node& at, const std::string& field,
                       const std::string& path) {
  std::ifstream in(path);
  if (!in)
    rd.fail(at, field,
            "cannot read '" + path + "'" +
                (field == "auth.token_file" ? " (create it or set auth: disabled)" : ""));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string t = ss.str();
  t = std::string(trim(t));
  if (t.empty()) rd.fail(at, field, "'" + path + "' is empty");
  if (t.size() < 16) rd.fail(at, field, "token in '" + path + "' is shorter than 16 characters");
  return t;
}

void read_tls(const Reader& rd, const YAML::Node& n, std::optional<ListenTls>& out) {
  rd.only_keys(n, "listen.tls", {"cert_file", "key_file", "ca_file"});
  ListenTls t;
  rd.get(n, "cert_file", "listen.tls.cert_file", t.cert_file);
  rd.get(n, "key_file", "listen.tls.key_file", t.key_file);
  rd.get(n, "ca_file", "listen.tls.ca_file", t.ca_file);
  if (t.cert_file.empty()) rd.fail(n, "listen.tls.cert_file", "required (PEM certificate)");
  if (t.key_file.empty()) rd.fail(n, "listen.tls.key_file", "required (PEM private key)");
  if (auto p = load_tls_files(t)) rd.fail(n[p->field], "listen.tls." + p->field, p->what);
  out = std::move(t);
}

std::set<uint32_t> read_uids(const Reader& rd, const YAML::Node& n, const std::string& field) {
  std::set<uint32_t> out;
  if (!n.IsDefined() || n.IsNull() || !n.IsSequence() || n.size() == 0)
    rd.fail(n.IsDefined() ? n : YAML::Node(), field, "required: a non-empty list of numeric uids");
  for (const auto& e : n) {
    uint32_t v = 0;
    const std::string& t = e.IsScalar() ? e.Scalar() : std::string();
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || ec != std::errc() || p != t.data() + t.size())
      rd.fail(e, field, "entries must be numeric uids (e.g. 0), not '" + t + "'");
    out.insert(v);
  }
  return out;
}

void read_munge_auth(const Reader& rd, const YAML::Node& auth, MungeAuthSettings& m) {
  m.enabled = true;
  const YAML::Node n = auth["munge"];
  if (!n.IsDefined() || n.IsNull())
    rd.fail(auth, "auth.munge", "required with mode: munge (allowed_uids, admin_uids, socket)");
  rd.only_keys(n, "auth.munge",
               {"socket", "allowed_uids", "admin_uids", "address_refresh_s", "miss_refresh_min_s",
                "allow_loopback_origin"});
  rd.get(n, "socket", "auth.munge.socket", m.socket);
  if (!n["allowed_uids"].IsDefined()) rd.fail(n, "auth.munge.allowed_uids", "required");
  if (!n["admin_uids"].IsDefined()) rd.fail(n, "auth.munge.admin_uids", "required");
  m.allowed_uids = read_uids(rd, n["allowed_uids"], "auth.munge.allowed_uids");
  m.admin_uids = read_uids(rd, n["admin_uids"], "auth.munge.admin_uids");
  rd.get(n, "address_refresh_s", "auth.munge.address_refresh_s", m.address_refresh_s);
  rd.get(n, "miss_refresh_min_s", "auth.munge.miss_refresh_min_s", m.miss_refresh_min_s);
  rd.get(n, "allow_loopback_origin", "auth.munge.allow_loopback_origin", m.allow_loopback_origin);
  if (m.address_refresh_s < 1)
    rd.fail(n["address_refresh_s"], "auth.munge.address_refresh_s", "must be >= 1");
  if (m.miss_refresh_min_s < 0 || m.miss_refresh_min_s > m.address_refresh_s)
    rd.fail(n["miss_refresh_min_s"], "auth.munge.miss_refresh_min_s",
            "must be in [0, address_refresh_s]");
}

void read_policy(const Reader& rd, const YAML::Node& p, PolicyConfig& policy) {
  rd.only_keys(p, "policy",
               {"defaults", "checks", "fatal_checks", "fatal_fault_codes", "staleness_s",
                "requalify_after_s", "requalify_window_s"});
  if (auto d = p["defaults"]; d.IsDefined())
    read_check_policy(rd, d, "policy.defaults", policy.defaults);
  if (auto ch = p["checks"]; ch.IsDefined()) {
    if (!ch.IsMap()) rd.fail(ch, "policy.checks", "must be a mapping of check name to policy");
    for (const auto& kv : ch) {
      auto name = kv.first.as<std::string>();
      CheckPolicy cp = policy.defaults;
      if (auto it = policy.checks.find(name); it != policy.checks.end()) cp = it->second;
      read_check_policy(rd, kv.second, "policy.checks." + name, cp);
      policy.checks[name] = cp;
    }
  }
  if (p["fatal_checks"].IsDefined())
    policy.fatal_checks = read_string_set(rd, p["fatal_checks"], "policy.fatal_checks");
  if (p["fatal_fault_codes"].IsDefined())
    policy.fatal_fault_codes =
        read_string_set(rd, p["fatal_fault_codes"], "policy.fatal_fault_codes");
  rd.get(p, "staleness_s", "policy.staleness_s", policy.staleness_s);
  if (policy.staleness_s < 1) rd.fail(p["staleness_s"], "policy.staleness_s", "must be >= 1");
  rd.get(p, "requalify_after_s", "policy.requalify_after_s", policy.requalify_after_s);
  rd.get(p, "requalify_window_s", "policy.requalify_window_s", policy.requalify_window_s);
  if (policy.requalify_after_s < 0 || policy.requalify_window_s < policy.requalify_after_s)
    rd.fail(p[policy.requalify_after_s < 0 ? "requalify_after_s" : "requalify_window_s"],
            "policy.requalify_window_s", "must be >= policy.requalify_after_s >= 0");
}

void read_breaker(const Reader& rd, const YAML::Node& b, BreakerConfig& breaker) {
  rd.only_keys(b, "breaker", {"max_drains", "max_percent", "window_s"});
  rd.get(b, "max_drains", "breaker.max_drains", breaker.max_drains);
  rd.get(b, "max_percent", "breaker.max_percent", breaker.max_percent);
  rd.get(b, "window_s", "breaker.window_s", breaker.window_s);
  if (breaker.max_drains < 1) rd.fail(b["max_drains"], "breaker.max_drains", "must be >= 1");
  if (!(breaker.max_percent > 0 && breaker.max_percent <= 100))
    rd.fail(b["max_percent"], "breaker.max_percent", "must be in (0, 100]");
  if (breaker.window_s < 1) rd.fail(b["window_s"], "breaker.window_s", "must be >= 1");
}

void read_repair(const Reader& rd, const YAML::Node& r, RepairConfig& repair) {
  rd.only_keys(
      r, "repair",
      {"reboot", "reset_gpu", "max_in_repair", "max_per_window", "window_s", "max_reboots_per_node",
       "max_resets_per_node", "node_window_s", "reboot_timeout_s", "reset_timeout_s",
       "recheck_timeout_s", "evidence_dir", "part_drains", "part_window_s", "boot_time_s"});
  rd.get(r, "reboot", "repair.reboot", repair.reboot);
  rd.get(r, "reset_gpu", "repair.reset_gpu", repair.reset_gpu);
  rd.get(r, "evidence_dir", "repair.evidence_dir", repair.evidence_dir);
  // Counts: at least 1. Durations: at least a minute.
  for (const auto& [key, v] : {std::pair<const char*, int*>{"max_in_repair", &repair.max_in_repair},
                               {"max_per_window", &repair.max_per_window},
                               {"max_reboots_per_node", &repair.max_reboots_per_node},
                               {"max_resets_per_node", &repair.max_resets_per_node},
                               {"part_drains", &repair.part_drains}}) {
    rd.get(r, key, std::string("repair.") + key, *v);
    if (*v < 1) rd.fail(r[key], std::string("repair.") + key, "must be >= 1");
  }
  for (const auto& [key, v] : {std::pair<const char*, int64_t*>{"window_s", &repair.window_s},
                               {"node_window_s", &repair.node_window_s},
                               {"reboot_timeout_s", &repair.reboot_timeout_s},
                               {"boot_time_s", &repair.boot_time_s},
                               {"reset_timeout_s", &repair.reset_timeout_s},
                               {"recheck_timeout_s", &repair.recheck_timeout_s},
                               {"part_window_s", &repair.part_window_s}}) {
    rd.get(r, key, std::string("repair.") + key, *v);
    if (*v < 60) rd.fail(r[key], std::string("repair.") + key, "must be >= 60");
  }
}

void read_gate(const Reader& rd, const YAML::Node& g, GateConfig& gate) {
  rd.only_keys(g, "gate", {"new_nodes", "repaired", "suite", "learn_s", "retry_s"});
  rd.get(g, "new_nodes", "gate.new_nodes", gate.new_nodes);
  rd.get(g, "repaired", "gate.repaired", gate.repaired);
  rd.get(g, "suite", "gate.suite", gate.suite);
  if (gate.suite != "qualify" && gate.suite != "full")
    rd.fail(g["suite"], "gate.suite", "must be qualify or full");
  rd.get(g, "learn_s", "gate.learn_s", gate.learn_s);
  if (gate.learn_s < 0) rd.fail(g["learn_s"], "gate.learn_s", "must be >= 0");
  rd.get(g, "retry_s", "gate.retry_s", gate.retry_s);
  if (gate.retry_s < 60) rd.fail(g["retry_s"], "gate.retry_s", "must be >= 60");
}

void read_slurm_rest(const Reader& rd, const YAML::Node& r, slurm::RestSettings& rest) {
  rd.only_keys(r, "slurm.rest",
               {"url", "api_version", "user", "token_file", "token_command", "timeout_ms"});
  rd.get(r, "url", "slurm.rest.url", rest.url);
  rd.get(r, "api_version", "slurm.rest.api_version", rest.api_version);
  rd.get(r, "user", "slurm.rest.user", rest.user);
  rd.get(r, "token_file", "slurm.rest.token_file", rest.token_file);
  rd.get(r, "timeout_ms", "slurm.rest.timeout_ms", rest.timeout_ms);
  if (YAML::Node cmd = r["token_command"]; cmd.IsDefined() && !cmd.IsNull()) {
    if (!cmd.IsSequence() || cmd.size() == 0)
      rd.fail(cmd, "slurm.rest.token_command", "must be a list: [scontrol, token, lifespan=3600]");
    for (const auto& e : cmd) {
      if (!e.IsScalar() || e.Scalar().empty())
        rd.fail(e, "slurm.rest.token_command", "entries must be non-empty strings");
      rest.token_command.push_back(e.Scalar());
    }
  }
  if (rest.url.empty()) rd.fail(r, "slurm.rest.url", "required with backend: rest");
  if (!rest.token_file.empty() && !rest.token_command.empty())
    rd.fail(r, "slurm.rest", "give token_file or token_command, not both");
  // The REST client's own checks (URL scheme, version spelling, timeout), with its words.
  if (auto probe = slurm::make_rest_api(rest); !probe.ok())
    rd.fail(r[probe.error().where.substr(probe.error().where.rfind('.') + 1).c_str()],
            probe.error().where, probe.error().message);
}

void read_slurm(const Reader& rd, const YAML::Node& s, SlurmSettings& slurm) {
  rd.only_keys(s, "slurm",
               {"enabled", "backend", "conf", "rest", "retry_initial_ms", "retry_max_ms",
                "batch_window_ms", "view_max_age_s"});
  rd.get(s, "enabled", "slurm.enabled", slurm.enabled);
  std::string backend = "libslurm";
  rd.get(s, "backend", "slurm.backend", backend);
  if (backend == "libslurm")
    slurm.backend = SlurmBackend::kLibslurm;
  else if (backend == "rest")
    slurm.backend = SlurmBackend::kRest;
  else
    rd.fail(s["backend"], "slurm.backend", "must be libslurm or rest");
  if (slurm.backend == SlurmBackend::kRest) {
    if (!s["rest"].IsDefined()) rd.fail(s, "slurm.rest", "required with backend: rest (url: ...)");
    read_slurm_rest(rd, s["rest"], slurm.rest);
  } else if (s["rest"].IsDefined()) {
    rd.fail(s["rest"], "slurm.rest", "only read with backend: rest");
  }
  rd.get(s, "conf", "slurm.conf", slurm.conf);
  rd.get(s, "retry_initial_ms", "slurm.retry_initial_ms", slurm.retry_initial_ms);
  rd.get(s, "retry_max_ms", "slurm.retry_max_ms", slurm.retry_max_ms);
  rd.get(s, "batch_window_ms", "slurm.batch_window_ms", slurm.batch_window_ms);
  rd.get(s, "view_max_age_s", "slurm.view_max_age_s", slurm.view_max_age_s);
  if (slurm.retry_initial_ms < 1)
    rd.fail(s["retry_initial_ms"], "slurm.retry_initial_ms", "must be >= 1");
  if (slurm.retry_max_ms < slurm.retry_initial_ms)
    rd.fail(s["retry_max_ms"], "slurm.retry_max_ms", "must be >= retry_initial_ms");
  if (slurm.batch_window_ms < 0)
    rd.fail(s["batch_window_ms"], "slurm.batch_window_ms", "must be >= 0");
  if (slurm.view_max_age_s < 0)
    rd.fail(s["view_max_age_s"], "slurm.view_max_age_s", "must be >= 0");
}

void read_kubernetes(const Reader& rd, const YAML::Node& k, KubeSettings& kubernetes) {
  rd.only_keys(k, "kubernetes",
               {"enabled", "annotation_prefix", "condition", "condition_type", "taint",
                "node_mapping", "pod_namespace", "kubeconfig"});
  rd.get(k, "enabled", "kubernetes.enabled", kubernetes.enabled);
  rd.get(k, "annotation_prefix", "kubernetes.annotation_prefix", kubernetes.annotation_prefix);
  rd.get(k, "condition", "kubernetes.condition", kubernetes.condition);
  rd.get(k, "condition_type", "kubernetes.condition_type", kubernetes.condition_type);
  rd.get(k, "taint", "kubernetes.taint", kubernetes.taint);
  std::string mapping = "identity";
  rd.get(k, "node_mapping", "kubernetes.node_mapping", mapping);
  if (auto m = value_of(kNodeMappingNames, mapping))
    kubernetes.node_mapping = *m;
  else
    rd.fail(k["node_mapping"], "kubernetes.node_mapping",
            "must be one of " + joined_names(kNodeMappingNames));
  rd.get(k, "pod_namespace", "kubernetes.pod_namespace", kubernetes.pod_namespace);
  rd.get(k, "kubeconfig", "kubernetes.kubeconfig", kubernetes.kubeconfig);
  const auto& pre = kubernetes.annotation_prefix;
  if (pre.empty() || pre.back() != '/' || pre.find_first_of(" \t\n") != std::string::npos)
    rd.fail(k["annotation_prefix"], "kubernetes.annotation_prefix",
            "must be a DNS-style prefix ending in '/', e.g. vigil.dev/");
  if (kubernetes.node_mapping == NodeMapping::kPodLookup && kubernetes.pod_namespace.empty())
    rd.fail(k, "kubernetes.pod_namespace", "required when node_mapping is pod-lookup");
}
void read_webhook(const Reader& rd, const YAML::Node& w, WebhookSettings& hook) {
  rd.only_keys(w, "webhook",
               {"enabled", "url", "ca_file", "token_file", "source", "timeout_ms",
                "retry_initial_ms", "retry_max_ms", "max_attempts"});
  rd.get(w, "enabled", "webhook.enabled", hook.enabled);
  rd.get(w, "url", "webhook.url", hook.url);
  rd.get(w, "ca_file", "webhook.ca_file", hook.ca_file);
  rd.get(w, "token_file", "webhook.token_file", hook.token_file);
  rd.get(w, "source", "webhook.source", hook.source);
  rd.get(w, "timeout_ms", "webhook.timeout_ms", hook.timeout_ms);
  rd.get(w, "retry_initial_ms", "webhook.retry_initial_ms", hook.retry_initial_ms);
  rd.get(w, "retry_max_ms", "webhook.retry_max_ms", hook.retry_max_ms);
  rd.get(w, "max_attempts", "webhook.max_attempts", hook.max_attempts);
  if (!hook.enabled) return;
  auto url = parse_http_url(hook.url);
  if (!url.ok()) rd.fail(w["url"], "webhook.url", url.error().message);
  if (!hook.ca_file.empty() && url.ok() && !url->https)
    rd.fail(w["ca_file"], "webhook.ca_file", "set, but webhook.url is not https://");
  if (!hook.ca_file.empty() && !std::ifstream(hook.ca_file))
    rd.fail(w["ca_file"], "webhook.ca_file", "cannot read '" + hook.ca_file + "'");
  if (!hook.token_file.empty())
    hook.token = read_token(rd, w["token_file"], "webhook.token_file", hook.token_file);
  if (hook.source.empty()) rd.fail(w["source"], "webhook.source", "must not be empty");
  if (hook.timeout_ms < 1 || hook.timeout_ms > 600'000)
    rd.fail(w["timeout_ms"], "webhook.timeout_ms", "must be in [1, 600000] (ms)");
  if (hook.retry_initial_ms < 1)
    rd.fail(w["retry_initial_ms"], "webhook.retry_initial_ms", "must be >= 1");
  if (hook.retry_max_ms < hook.retry_initial_ms)
    rd.fail(w["retry_max_ms"], "webhook.retry_max_ms", "must be >= retry_initial_ms");
  if (hook.max_attempts < 1) rd.fail(w["max_attempts"], "webhook.max_attempts", "must be >= 1");
}
void read_listen(Reader& rd, const YAML::Node& l, DrainerConfig& c) {
  rd.only_keys(l, "listen",
               {"address", "port", "request_timeout_s", "max_connections",
                "max_connections_per_source", "workers", "queue_depth", "tls"});
  rd.get(l, "address", "listen.address", c.listen_address);
  rd.get(l, "port", "listen.port", c.listen_port);
  if (c.listen_port < 0 || c.listen_port > 65535)
    rd.fail(l["port"], "listen.port", "must be in [0, 65535]");
  if (c.listen_address.empty()) rd.fail(l["address"], "listen.address", "must not be empty");
  auto& m = c.limits;
  auto ranged = [&](const char* key, auto& v, long long lo, long long hi) {
    const std::string field = std::string("listen.") + key;
    rd.get(l, key, field, v);
    if (v < lo || v > hi)
      rd.fail(l[key], field, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  };
  ranged("request_timeout_s", m.request_timeout_s, 1, 3600);
  ranged("max_connections", m.max_connections, 16, 1000000);
  ranged("max_connections_per_source", m.max_connections_per_source, 1, 1000000);
  ranged("workers", m.workers, 1, 256);
  ranged("queue_depth", m.queue_depth, 1, 1000000);
  if (auto t = l["tls"]; t.IsDefined() && !t.IsNull()) read_tls(rd, t, c.tls);
}

// `auth`: required; a token file (the ingest token, and optionally an admin token), MUNGE, or
// `disabled` for local demos.
void read_auth(Reader& rd, const YAML::Node& root, DrainerConfig& c) {
  YAML::Node auth = root["auth"];
  if (!auth.IsDefined() || auth.IsNull()) {
    rd.fail(root, "auth", "missing: set auth.token_file, or `auth: disabled` for local demos");
  } else if (auth.IsScalar()) {
    if (auth.Scalar() != "disabled")
      rd.fail(auth, "auth", "must be a mapping with token_file, or the word 'disabled'");
    c.auth_enabled = false;
  } else {
    rd.only_keys(auth, "auth", {"mode", "token_file", "admin_token_file", "munge"});
    std::string mode = "token";
    rd.get(auth, "mode", "auth.mode", mode);
    if (mode == "munge") {
      read_munge_auth(rd, auth, c.munge);
      if (auth["token_file"].IsDefined())
        rd.fail(auth["token_file"], "auth.token_file",
                "not used with mode: munge (reports carry MUNGE credentials); remove it");
    } else if (mode == "token") {
      if (auth["munge"].IsDefined())
        rd.fail(auth["munge"], "auth.munge", "only read with mode: munge");
      rd.get(auth, "token_file", "auth.token_file", c.token_file);
      if (c.token_file.empty())
        rd.fail(auth, "auth.token_file", "required (or `auth: disabled`, or mode: munge)");
      c.token = read_token(rd, auth["token_file"], "auth.token_file", c.token_file);
    } else {
      rd.fail(auth["mode"], "auth.mode", "must be token or munge");
    }
    rd.get(auth, "admin_token_file", "auth.admin_token_file", c.admin_token_file);
    if (!c.admin_token_file.empty()) {
      c.admin_token =
          read_token(rd, auth["admin_token_file"], "auth.admin_token_file", c.admin_token_file);
      if (!c.munge.enabled && c.admin_token == c.token)
        rd.fail(auth["admin_token_file"], "auth.admin_token_file",
                "must differ from the ingest token (the ingest token is on every node)");
    }
  }
}

}  // namespace

Result<DrainerConfig> parse_config(std::string_view yaml, const std::string& source) {
  Reader rd(source);
  DrainerConfig c;
  c.source = source;
  c.policy = default_policy();
  try {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(yaml));
    } catch (const YAML::ParserException& e) {
      return Error{source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg, "parse_config"};
    }
    if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
    rd.only_keys(root, "",
                 {"listen", "auth", "max_body_bytes", "state_dir", "spool_dir", "spool_scan_s",
                  "dry_run", "snapshot_every", "audit", "policy", "breaker", "slurm", "kubernetes",
                  "webhook", "detection", "classes", "repair", "gate"});
    if (auto l = root["listen"]; l.IsDefined()) read_listen(rd, l, c);
    read_auth(rd, root, c);
    rd.get(root, "max_body_bytes", "max_body_bytes", c.max_body_bytes);
    if (c.max_body_bytes < 1024 || c.max_body_bytes > (int64_t{1} << 30))
      rd.fail(root["max_body_bytes"], "max_body_bytes", "must be in [1024, 1073741824]");
    rd.get(root, "state_dir", "state_dir", c.state_dir);
    if (c.state_dir.empty()) rd.fail(root["state_dir"], "state_dir", "must not be empty");
    rd.get(root, "spool_dir", "spool_dir", c.spool_dir);
    rd.get(root, "spool_scan_s", "spool_scan_s", c.spool_scan_s);
    if (c.spool_scan_s < 1) rd.fail(root["spool_scan_s"], "spool_scan_s", "must be >= 1");
    rd.get(root, "dry_run", "dry_run", c.dry_run);
    rd.get(root, "snapshot_every", "snapshot_every", c.snapshot_every);
    if (c.snapshot_every < 1) rd.fail(root["snapshot_every"], "snapshot_every", "must be >= 1");
    if (auto a = root["audit"]; a.IsDefined()) {
      rd.only_keys(a, "audit", {"max_mb", "keep"});
      rd.get(a, "max_mb", "audit.max_mb", c.audit.max_mb);
      if (c.audit.max_mb < 1 || c.audit.max_mb > 1024 * 1024)
        rd.fail(a["max_mb"], "audit.max_mb", "must be in [1, 1048576]");
      rd.get(a, "keep", "audit.keep", c.audit.keep);
      if (c.audit.keep < 0 || c.audit.keep > 1000)
        rd.fail(a["keep"], "audit.keep", "must be in [0, 1000]");
    }

    if (auto p = root["policy"]; p.IsDefined()) read_policy(rd, p, c.policy);
    if (auto b = root["breaker"]; b.IsDefined()) read_breaker(rd, b, c.breaker);
    if (auto s = root["slurm"]; s.IsDefined()) read_slurm(rd, s, c.slurm);
    if (auto dn = root["detection"]; dn.IsDefined()) read_detection(rd, dn, c.detection);
    if (auto cn = root["classes"]; cn.IsDefined()) read_classes(rd, cn, c.classes);
    c.policy.fault_code_drain_after[std::string(kSlowConfirmedFaultCode)] =
        c.detection.confirmed_drain_after;
    c.policy.fault_code_drain_after[std::string(kSlowFaultCode)] =
        c.detection.unconfirmed_drain_after;
    if (auto k = root["kubernetes"]; k.IsDefined()) read_kubernetes(rd, k, c.kubernetes);
    if (auto w = root["webhook"]; w.IsDefined()) read_webhook(rd, w, c.webhook);
    if (auto r = root["repair"]; r.IsDefined()) read_repair(rd, r, c.repair);
    if (auto g = root["gate"]; g.IsDefined()) read_gate(rd, g, c.policy.gate);
    if (c.policy.gate.on() && !c.slurm.enabled)
      rd.fail(root["gate"], "gate", "needs slurm.enabled (the gate holds a node with a drain)");
    if (c.repair.reboot && (!c.slurm.enabled || c.slurm.backend != SlurmBackend::kLibslurm))
      rd.fail(root["repair"]["reboot"], "repair.reboot",
              "needs slurm.backend libslurm (reboots go through scontrol of that installation; "
              "slurmrestd has no reboot operation)");
    if (c.repair.reset_gpu && !c.slurm.enabled)
      rd.fail(root["repair"]["reset_gpu"], "repair.reset_gpu",
              "needs slurm.enabled (the reset is asked for through the drain's Slurm reason, "
              "which vigil-submit reads)");
    if (c.munge.enabled && !c.spool_dir.empty())
      rd.fail(root["spool_dir"], "spool_dir",
              "not read with auth mode munge: a spooled file carries no credential, so whoever "
              "can write the directory could speak for any node; nodes resend their own spool "
              "with fresh credentials (docs/security.md)");
    if (c.munge.enabled && !c.slurm.enabled)
      rd.fail(root["slurm"], "slurm.enabled",
              "auth mode munge needs Slurm: the addresses a node may report from are Slurm's");
  } catch (const Stop&) {
    return Error{rd.first_error(), "parse_config"};
  } catch (const YAML::Exception& e) {
    return Error{source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg, "parse_config"};
  }
  return c;
}

Result<DrainerConfig> load_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{"cannot open config file '" + path + "'", "load_config"};
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str(), path);
}

}  // namespace vigil::drainer
