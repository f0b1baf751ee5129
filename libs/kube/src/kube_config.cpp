// Loading a KubeConfig: in-cluster (service-account mount + KUBERNETES_SERVICE_HOST/PORT) or from
// a kubeconfig file. Every error names the missing or unsupported field and what to do next.
#include "vigil/kube/kube_config.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <sys/mman.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>

#include "vigil/base/strings.h"
#include "vigil/kube/kube_api.h"

namespace vigil::kube {
namespace {

namespace fs = std::filesystem;

Result<std::string> read_text_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error{"cannot read " + what + " " + path + ": " + std::strerror(errno), ""};
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<std::string> base64_decode(const std::string& in) {
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  bool padding = false;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') {
      v = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      v = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      v = c - '0' + 52;
    } else if (c == '+') {
      v = 62;
    } else if (c == '/') {
      v = 63;
    } else if (c == '=') {
      padding = true;
      continue;
    } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      continue;
    } else {
      return std::nullopt;
    }
    if (padding) return std::nullopt;  // data after '='
    buffer = (buffer << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  if (bits >= 6) return std::nullopt;  // a dangling single character is not valid base64
  return out;
}

int count_pem_certificates(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return 0;
  int n = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    X509_free(cert);
    ++n;
  }
  BIO_free(bio);
  return n;
}

// KubeConfig carries the CA as a file path (cpp-httplib loads it lazily on first connect), so
// certificate-authority-data is put into an anonymous in-memory file (memfd) that lives as long
// as the process and leaves nothing on disk. Identical data reuses the same memfd.
Result<std::string> materialize_ca_pem(const std::string& pem) {
  static std::mutex mu;
  static std::map<std::string, std::string> by_digest;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(pem.data()), pem.size(), digest);
  const std::string key(reinterpret_cast<const char*>(digest), sizeof(digest));
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = by_digest.find(key); it != by_digest.end()) return it->second;
  const int fd = memfd_create("vigil-kube-ca", MFD_CLOEXEC);
  if (fd < 0) {
    return Error{std::string("cannot create an in-memory CA file: ") + std::strerror(errno),
                 "memfd_create"};
  }
  size_t off = 0;
  while (off < pem.size()) {
    const ssize_t n = ::write(fd, pem.data() + off, pem.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string err = std::strerror(errno);
      ::close(fd);
      return Error{"cannot write the in-memory CA file: " + err, "write(memfd)"};
    }
    off += static_cast<size_t>(n);
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  by_digest.emplace(key, path);
  return path;
}

// A relative path in a kubeconfig is relative to the kubeconfig's own directory (as in kubectl).
std::string resolve_relative(const std::string& path, const std::string& kubeconfig_path) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  return (fs::path(kubeconfig_path).parent_path() / path).lexically_normal().string();
}

// Finds the entry `name: <name>` in a kubeconfig list (clusters, contexts, users) and returns its
// inner map (`cluster:`, `context:`, `user:`).
std::optional<YAML::Node> find_named(const YAML::Node& root, const std::string& list,
                                     const std::string& inner, const std::string& name) {
  const YAML::Node seq = root[list];
  if (!seq || !seq.IsSequence()) return std::nullopt;
  for (const auto& entry : seq) {
    if (entry.IsMap() && entry["name"] && entry["name"].IsScalar() &&
        entry["name"].Scalar() == name) {
      YAML::Node body = entry[inner];
      if (!body || body.IsNull()) return YAML::Node(YAML::NodeType::Map);
      return body;
    }
  }
  return std::nullopt;
}

std::string scalar_or_empty(const YAML::Node& map, const char* key) {
  // operator[] on a scalar throws (found by fuzz_kubeconfig: `cluster: <text>`).
  if (!map.IsMap()) return "";
  const YAML::Node v = map[key];
  if (!v || !v.IsScalar()) return "";
  return v.Scalar();
}

// The CA of `cluster` (at `field`) as a file path, empty when the kubeconfig names none.
Result<std::string> cluster_ca_file(const YAML::Node& cluster, const std::string& field,
                                    const std::string& path) {
  const auto fail = [&](const std::string& msg) { return Error{msg, "kubeconfig " + path}; };
  const std::string ca_data = scalar_or_empty(cluster, "certificate-authority-data");
  const std::string ca_path = scalar_or_empty(cluster, "certificate-authority");
  if (!ca_data.empty()) {
    const auto pem = base64_decode(ca_data);
    if (!pem) return fail(field + ".certificate-authority-data is not valid base64");
    if (count_pem_certificates(*pem) == 0) {
      return fail(field +
                  ".certificate-authority-data does not hold a PEM certificate after base64 "
                  "decoding");
    }
    return materialize_ca_pem(*pem);
  }
  if (ca_path.empty()) return std::string();
  const std::string ca_file = resolve_relative(ca_path, path);
  auto pem = read_text_file(ca_file, field + ".certificate-authority");
  if (!pem.ok()) return fail(pem.error().message);
  if (count_pem_certificates(pem.value()) == 0) {
    return fail(field + ".certificate-authority " + ca_file + " does not hold a PEM certificate");
  }
  return ca_file;
}

// The connection settings of `cluster` (at `field`): server, TLS verification and CA.
Result<KubeConfig> read_cluster(const YAML::Node& cluster, const std::string& field,
                                const std::string& path) {
  const auto fail = [&](const std::string& msg) { return Error{msg, "kubeconfig " + path}; };
  KubeConfig cfg;
  cfg.server = scalar_or_empty(cluster, "server");
  if (cfg.server.empty()) return fail(field + ".server is not set");
  if (cfg.server.rfind("https://", 0) != 0 && cfg.server.rfind("http://", 0) != 0) {
    return fail(field + ".server \"" + cfg.server +
                "\" must start with https:// (or http:// for `kubectl proxy`)");
  }
  for (const char* unsupported : {"tls-server-name", "proxy-url"}) {
    if (!scalar_or_empty(cluster, unsupported).empty()) {
      return fail(field + "." + unsupported +
                  " is not supported by vigil-drainer; point server at the API server directly");
    }
  }
  if (const YAML::Node insecure = cluster["insecure-skip-tls-verify"]; insecure) {
    try {
      cfg.insecure_skip_verify = insecure.as<bool>();
    } catch (const YAML::Exception&) {
      return fail(field + ".insecure-skip-tls-verify must be true or false");
    }
  }
  VIGIL_TRY(cfg.ca_file, cluster_ca_file(cluster, field, path));
  return cfg;
}

// Adds the bearer token of `user` (at `field`) to `cfg`; every other way to authenticate is
// refused with what to use instead.
Result<KubeConfig> with_user_token(KubeConfig cfg, const YAML::Node& user, const std::string& field,
                                   const std::string& path) {
  const auto fail = [&](const std::string& msg) { return Error{msg, "kubeconfig " + path}; };
  if (!user.IsMap()) return fail(field + " must be a map (token, tokenFile, ...)");
  if (const YAML::Node exec = user["exec"]; exec) {
    std::string command = exec.IsMap() ? scalar_or_empty(exec, "command") : "";
    return fail(field + ".exec: exec credential plugins" +
                (command.empty() ? "" : " (command \"" + command + "\")") +
                " are not supported; give vigil-drainer a service-account token (token or "
                "tokenFile) instead");
  }
  if (user["auth-provider"]) {
    return fail(field + ".auth-provider is not supported; use a service-account token");
  }
  for (const char* cert_field :
       {"client-certificate", "client-certificate-data", "client-key", "client-key-data"}) {
    if (user[cert_field]) {
      return fail(field + "." + cert_field +
                  ": client-certificate authentication is not supported; use a "
                  "service-account token (token or tokenFile)");
    }
  }
  if (user["username"] || user["password"]) {
    return fail(field + ".username/password (basic auth) is not supported; use a token");
  }
  cfg.token = std::string(trim(scalar_or_empty(user, "token")));
  if (cfg.token.empty()) {
    const std::string token_file = scalar_or_empty(user, "tokenFile");
    if (!token_file.empty()) {
      const std::string resolved = resolve_relative(token_file, path);
      auto token = read_text_file(resolved, field + ".tokenFile");
      if (!token.ok()) return fail(token.error().message);
      cfg.token = std::string(trim(token.value()));
      if (cfg.token.empty()) return fail(field + ".tokenFile " + resolved + " is empty");
      cfg.token_file = resolved;
    }
  }
  if (cfg.token.empty()) {
    return fail(field +
                " has neither token nor tokenFile; vigil-drainer authenticates with "
                "a bearer token");
  }
  return cfg;
}

Result<KubeConfig> parse_kubeconfig(const YAML::Node& root, const std::string& path) {
  const auto fail = [&](const std::string& msg) { return Error{msg, "kubeconfig " + path}; };
  if (!root.IsMap()) return fail("not a kubeconfig (the top level is not a YAML map)");

  const std::string context_name = scalar_or_empty(root, "current-context");
  if (context_name.empty()) {
    return fail("current-context is not set; select one with `kubectl config use-context NAME`");
  }
  const auto context = find_named(root, "contexts", "context", context_name);
  if (!context) return fail("current-context \"" + context_name + "\" is not listed in contexts");
  const std::string cluster_name = scalar_or_empty(*context, "cluster");
  if (cluster_name.empty()) {
    return fail("contexts[" + context_name + "].context.cluster is not set");
  }
  const std::string user_name = scalar_or_empty(*context, "user");

  const auto cluster = find_named(root, "clusters", "cluster", cluster_name);
  if (!cluster)
    return fail("cluster \"" + cluster_name + "\" (from context \"" + context_name +
                "\") is not listed in clusters");
  VIGIL_TRY(KubeConfig cfg, read_cluster(*cluster, "clusters[" + cluster_name + "].cluster", path));

  if (user_name.empty()) {
    if (cfg.server.rfind("http://", 0) == 0) return cfg;  // kubectl proxy adds credentials
    return fail("contexts[" + context_name + "].context.user is not set; a bearer token is needed");
  }
  const auto user = find_named(root, "users", "user", user_name);
  if (!user)
    return fail("user \"" + user_name + "\" (from context \"" + context_name +
                "\") is not listed in users");
  return with_user_token(std::move(cfg), *user, "users[" + user_name + "].user", path);
}

}  // namespace

Result<KubeConfig> kube_config_in_cluster(const std::string& sa_dir) {
  const char* where = "kube_config_in_cluster";
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0') {
    return Error{
        "KUBERNETES_SERVICE_HOST is not set: not running in a Kubernetes pod; use a "
        "kubeconfig file outside the cluster",
        where};
  }
  if (port == nullptr || *port == '\0') {
    return Error{
        "KUBERNETES_SERVICE_PORT is not set: not running in a Kubernetes pod; use a "
        "kubeconfig file outside the cluster",
        where};
  }
  int port_number = 0;
  const std::string port_text = port;
  const auto [ptr, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port_number);
  if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port_number <= 0 ||
      port_number > 65535) {
    return Error{"KUBERNETES_SERVICE_PORT=\"" + port_text + "\" is not a TCP port", where};
  }

  KubeConfig cfg;
  const std::string host_text = host;
  const bool ipv6 = host_text.find(':') != std::string::npos;
  cfg.server = "https://" + (ipv6 ? "[" + host_text + "]" : host_text) + ":" + port_text;

  const std::string token_path = (fs::path(sa_dir) / "token").string();
  auto token = read_text_file(token_path, "service-account token");
  if (!token.ok()) {
    return Error{
        token.error().message + " (is automountServiceAccountToken disabled for this pod?)", where};
  }
  cfg.token = std::string(trim(token.value()));
  if (cfg.token.empty()) return Error{"service-account token " + token_path + " is empty", where};
  cfg.token_file = token_path;

  cfg.ca_file = (fs::path(sa_dir) / "ca.crt").string();
  auto ca = read_text_file(cfg.ca_file, "service-account CA bundle");
  if (!ca.ok()) return Error{ca.error().message, where};
  if (count_pem_certificates(ca.value()) == 0) {
    return Error{"service-account CA bundle " + cfg.ca_file + " holds no PEM certificate", where};
  }
  return cfg;
}

Result<std::string> kube_in_cluster_namespace(const std::string& sa_dir) {
  const std::string path = (fs::path(sa_dir) / "namespace").string();
  auto ns = read_text_file(path, "service-account namespace");
  if (!ns.ok()) return Error{ns.error().message, "kube_in_cluster_namespace"};
  std::string value(trim(ns.value()));
  if (value.empty()) return Error{path + " is empty", "kube_in_cluster_namespace"};
  return value;
}

Result<KubeConfig> kube_config_from_file(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return Error{std::string("cannot read the file: ") + std::strerror(errno),
                 "kubeconfig " + path};
  } catch (const YAML::Exception& e) {
    return Error{"invalid YAML at line " + std::to_string(e.mark.line + 1) + ": " + e.msg,
                 "kubeconfig " + path};
  }
  try {
    return parse_kubeconfig(root, path);
  } catch (const YAML::Exception& e) {
    // parse_kubeconfig checks each node's type before it reads it; this is the net under that
    // (as in load_sku_file), so a shape nobody foresaw is a named error, never a crash.
    return Error{"unreadable value at line " + std::to_string(e.mark.line + 1) + ": " + e.msg,
                 "kubeconfig " + path};
  }
}

}  // namespace vigil::kube
