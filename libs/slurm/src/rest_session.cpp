#include "rest_session.h"

#include <httplib.h>
#include <openssl/evp.h>
#include <slurm/slurm_errno.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "vigil/base/http_client.h"
#include "vigil/base/process.h"
#include "vigil/base/strings.h"

namespace vigil::slurm {
namespace {

// `scontrol token` prints "SLURM_JWT=<token>"; a token file may hold either form.
std::string token_text(const std::string& raw) {
  std::string t(trim(raw));
  constexpr std::string_view kPrefix = "SLURM_JWT=";
  if (t.starts_with(kPrefix)) t = std::string(trim(t.substr(kPrefix.size())));
  return t;
}

std::string file_stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ":" +
         std::to_string(st.st_size);
}

// The user a Slurm JWT was issued for: its payload's "sun" claim (what `scontrol token` writes).
// slurmrestd before 23.x wants it again in X-SLURM-USER-NAME. "" when the token does not say.
std::string jwt_user(const std::string& token) {
  const size_t a = token.find('.');
  const size_t b = a == std::string::npos ? a : token.find('.', a + 1);
  if (b == std::string::npos) return "";
  std::string payload = token.substr(a + 1, b - a - 1);  // base64url, unpadded
  for (char& c : payload) c = c == '-' ? '+' : c == '_' ? '/' : c;
  while (payload.size() % 4 != 0) payload += '=';
  std::string raw(payload.size() / 4 * 3 + 1, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(raw.data()),
                                reinterpret_cast<const unsigned char*>(payload.data()),
                                static_cast<int>(payload.size()));
  if (n < 0) return "";
  raw.resize(static_cast<size_t>(n));
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();  // padding decodes to zero bytes
  const auto claims = nlohmann::json::parse(raw, nullptr, false);
  if (!claims.is_object() || !claims.contains("sun") || !claims["sun"].is_string()) return "";
  return claims["sun"].get<std::string>();
}

std::string join(const std::set<std::string>& items) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : ", ") + i;
  return out.empty() ? "none" : out;
}

}  // namespace

const std::vector<std::string>& rest_api_versions() {
  // 24.11's versions first, newest first; then the 25.x versions (tested against 26.05 only).
  static const std::vector<std::string> versions = {"v0.0.42", "v0.0.41", "v0.0.40", "v0.0.44",
                                                    "v0.0.43"};
  return versions;
}

bool RestReply::ok() const {
  if (status < 200 || status >= 300) return false;
  const auto it = body.find("errors");
  return it == body.end() || !it->is_array() || it->empty();
}

bool RestReply::has_error_number(int number) const {
  const auto it = body.find("errors");
  if (it == body.end() || !it->is_array()) return false;
  for (const auto& e : *it) {
    for (const char* key : {"error_number", "errno"}) {
      if (e.contains(key) && e[key].is_number_integer() && e[key].get<int>() == number) return true;
    }
  }
  return false;
}

std::string RestReply::describe() const {
  std::string out = "HTTP " + std::to_string(status);
  const auto it = body.find("errors");
  if (it == body.end() || !it->is_array()) return out;
  for (const auto& e : *it) {
    std::string text;
    for (const char* key : {"description", "error"}) {
      if (e.contains(key) && e[key].is_string() && !e[key].get<std::string>().empty()) {
        text += (text.empty() ? "" : ": ") + e[key].get<std::string>();
      }
    }
    for (const char* key : {"error_number", "errno"}) {
      if (e.contains(key) && e[key].is_number_integer())
        text += " [slurm errno " + std::to_string(e[key].get<int>()) + "]";
    }
    out += "; " + (text.empty() ? e.dump() : text);
  }
  return out;
}

RestSession::RestSession(RestSettings settings) : settings_(std::move(settings)) {}
RestSession::~RestSession() = default;

Result<std::shared_ptr<RestSession>> RestSession::create(const RestSettings& in) {
  RestSettings s = in;
  while (!s.url.empty() && s.url.back() == '/') s.url.pop_back();
  if (!s.url.starts_with("http://") && !s.url.starts_with("https://")) {
    return Error{"slurmrestd URL '" + in.url + "' must start with http:// or https://",
                 "slurm.rest.url"};
  }
  if (!s.api_version.empty() && !std::regex_match(s.api_version, std::regex("v0\\.0\\.[0-9]+"))) {
    return Error{"'" + s.api_version + "' is not a slurmrestd API version (like v0.0.42)",
                 "slurm.rest.api_version"};
  }
  if (s.timeout_ms < 1) return Error{"must be >= 1", "slurm.rest.timeout_ms"};
  std::shared_ptr<RestSession> session(new RestSession(std::move(s)));
  session->http_ =
      make_http_client({session->settings_.url, "", session->settings_.timeout_ms, true});
  return session;
}

Result<std::string> RestSession::token_locked(bool refresh) {
  if (!settings_.token_file.empty()) {
    const std::string stamp = file_stamp(settings_.token_file);
    if (stamp.empty()) {
      return Error{"cannot read the JWT file " + settings_.token_file, "slurm.rest.token_file"};
    }
    if (refresh || token_.empty() || stamp != token_file_stamp_) {
      std::ifstream in(settings_.token_file);
      std::stringstream text;
      text << in.rdbuf();
      token_ = token_text(text.str());
      token_file_stamp_ = stamp;
    }
  } else if (!settings_.token_command.empty()) {
    if (refresh || token_.empty()) {
      LaunchOptions opts;
      opts.timeout = std::chrono::milliseconds(20000);
      auto run = run_command(settings_.token_command, opts);
      if (!run.ok()) return run.error();
      if (run->exit_code != 0) {
        return Error{"the JWT command exited " + std::to_string(shell_status(*run)) + ": " +
                         std::string(trim(run->err)),
                     "slurm.rest.token_command (" + settings_.token_command.front() + ")"};
      }
      token_ = token_text(run->out);
    }
  } else if (const char* env = std::getenv("SLURM_JWT"); env != nullptr) {
    token_ = token_text(env);
  }
  if (token_.empty()) {
    return Error{
        "no JWT for slurmrestd: set slurm.rest.token_file or slurm.rest.token_command, "
        "or export SLURM_JWT (see `scontrol token`)",
        "slurmrestd auth"};
  }
  return token_;
}

Result<httplib::Headers> RestSession::headers_locked(bool refresh_token) {
  VIGIL_TRY(const std::string token, token_locked(refresh_token));
  httplib::Headers headers = {{"X-SLURM-USER-TOKEN", token}, {"Accept", "application/json"}};
  const std::string user = settings_.user.empty() ? jwt_user(token) : settings_.user;
  if (!user.empty()) headers.emplace("X-SLURM-USER-NAME", user);
  return headers;
}

httplib::Result RestSession::get_once_more_on_a_stale_connection(const std::string& path,
                                                                 const httplib::Headers& headers) {
  // slurmrestd may close a kept-alive connection between requests; the next request on it then
  // fails to read a reply ("Failed to read connection"; seen on 24.11 in about one test in 18).
  // A GET changes nothing, so it is sent once more on a fresh connection. POSTs (node updates)
  // are not repeated: the caller re-reads Slurm before acting again.
  httplib::Result res = http_->Get(path, headers);
  if (!res && (res.error() == httplib::Error::Read || res.error() == httplib::Error::Write)) {
    http_->stop();  // drop the stale socket
    res = http_->Get(path, headers);
  }
  return res;
}

Result<RestReply> RestSession::send_locked(const char* method, const std::string& full_path,
                                           const nlohmann::json* body, bool refresh_token) {
  const std::string where = std::string(method) + " " + settings_.url + full_path;
  VIGIL_TRY(httplib::Headers headers, headers_locked(refresh_token));
  httplib::Result res = body != nullptr
                            ? http_->Post(full_path, headers, body->dump(), "application/json")
                            : get_once_more_on_a_stale_connection(full_path, headers);
  if (!res) {
    return Error{"cannot reach slurmrestd (" + httplib::to_string(res.error()) +
                     "); is it running and is slurm.rest.url right?",
                 where};
  }
  RestReply reply;
  reply.status = res->status;
  reply.body = nlohmann::json::parse(res->body, nullptr, false);
  // slurmrestd itself answers 401/403; a token it passes on and slurmctld refuses comes back as
  // Slurm's authentication error (HTTP 511 on 24.11).
  if (reply.status == 401 || reply.status == 403 ||
      (reply.body.is_object() && reply.has_error_number(SLURM_PROTOCOL_AUTHENTICATION_ERROR))) {
    return Error{"slurmrestd rejected the JWT (" + reply.describe() +
                     "): expired, for another user, or slurmctld lacks AuthAltTypes=auth/jwt",
                 where};
  }
  if (reply.body.is_discarded() || !reply.body.is_object()) {
    std::string text(trim(std::string_view(res->body).substr(0, 200)));
    return Error{"slurmrestd answered HTTP " + std::to_string(reply.status) +
                     " without a JSON object: " + (text.empty() ? "(empty)" : text),
                 where};
  }
  return reply;
}

std::optional<std::set<std::string>> served_api_versions(const std::string& openapi_body) {
  const auto doc = nlohmann::json::parse(openapi_body, nullptr, false);
  if (!doc.is_object() || !doc.contains("paths") || !doc["paths"].is_object()) return std::nullopt;
  static const std::regex kPath("^/slurm/(v0\\.0\\.[0-9]+)/nodes/?$");
  std::set<std::string> offered;
  for (const auto& [path, ops] : doc["paths"].items()) {
    std::smatch m;
    if (std::regex_match(path, m, kPath)) offered.insert(m[1]);
  }
  return offered;
}

Result<std::string> RestSession::negotiate_locked() {
  if (!version_.empty()) return version_;
  // The OpenAPI document lists every path the server serves: "/slurm/v0.0.42/nodes/", ...
  // (/openapi/v3 on 22.05 through 25.x).
  const std::string where = "GET " + settings_.url + "/openapi/v3";
  VIGIL_TRY(httplib::Headers headers, headers_locked(false));
  httplib::Result res = get_once_more_on_a_stale_connection("/openapi/v3", headers);
  if (!res) {
    return Error{"cannot reach slurmrestd (" + httplib::to_string(res.error()) +
                     "); is it running and is slurm.rest.url right?",
                 where};
  }
  const auto served = res->status == 200 ? served_api_versions(res->body) : std::nullopt;
  if (!served) {
    return Error{"no OpenAPI document (HTTP " + std::to_string(res->status) +
                     "); set slurm.rest.api_version to skip the discovery",
                 where};
  }
  const std::set<std::string>& offered = *served;
  if (!settings_.api_version.empty()) {
    if (!offered.count(settings_.api_version)) {
      return Error{"slurmrestd does not serve " + settings_.api_version + " (it offers " +
                       join(offered) + ")",
                   "slurm.rest.api_version"};
    }
    version_ = settings_.api_version;
    return version_;
  }
  for (const std::string& v : rest_api_versions()) {
    if (offered.count(v)) {
      version_ = v;
      return version_;
    }
  }
  std::set<std::string> ours(rest_api_versions().begin(), rest_api_versions().end());
  return Error{
      "slurmrestd offers " + join(offered) + " and Vigil's REST backend speaks " + join(ours) +
          " (Slurm 23.11 and newer; 22.05's v0.0.38 cannot update nodes); use "
          "slurm.backend: libslurm with a Vigil built for this Slurm (docs/slurm-compat.md)",
      where};
}

Result<std::string> RestSession::version() {
  std::lock_guard<std::mutex> lock(mu_);
  return negotiate_locked();
}

Result<RestReply> RestSession::request(const char* method, const std::string& path,
                                       const nlohmann::json* body) {
  std::lock_guard<std::mutex> lock(mu_);
  VIGIL_TRY(const std::string v, negotiate_locked());
  const std::string full = "/slurm/" + v + "/" + path;
  auto reply = send_locked(method, full, body, false);
  // A rotated or expired token: read the file or run the command once more and retry.
  const bool refreshable = !settings_.token_file.empty() || !settings_.token_command.empty();
  if (!reply.ok() && refreshable && reply.error().message.starts_with("slurmrestd rejected")) {
    reply = send_locked(method, full, body, true);
  }
  return reply;
}

Result<RestReply> RestSession::get(const std::string& path) {
  return request("GET", path, nullptr);
}

Result<RestReply> RestSession::post(const std::string& path, const nlohmann::json& body) {
  return request("POST", path, &body);
}

}  // namespace vigil::slurm
