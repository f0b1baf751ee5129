// NodeReport delivery: POST with retry/backoff, spool on final failure. See report_client.h.
#include "vigil/report/report_client.h"

#include <fcntl.h>
#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "vigil/base/backoff.h"
#include "vigil/base/files.h"
#include "vigil/base/http_client.h"
#include "vigil/base/http_url.h"
#include "vigil/base/strings.h"
#include "vigil/munge/munge.h"
#include "vigil/report/drain_decision.h"

namespace vigil {
namespace {

// The report URL: a missing path means /v1/reports.
Result<HttpUrl> parse_url(const std::string& url) {
  auto u = parse_http_url(url);
  if (!u.ok()) return Error{"report " + u.error().message, "parse_url"};
  if (u->path.empty() || u->path == "/") u->path = "/v1/reports";
  return u;
}

std::string safe_name(const std::string& s) {
  std::string out;
  for (char c : s)
    out +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  return out.empty() ? "_" : out;
}

Result<std::string> read_token(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{"cannot read token file", "read_token(" + path + ")"};
  std::stringstream ss;
  ss << in.rdbuf();
  std::string t = ss.str();
  return std::string(trim(t));
}

// Checks the TLS settings before anything is sent; empty when they are usable.
std::string tls_setup_problem(const HttpUrl& u, const std::string& ca_file) {
  if (ca_file.empty()) return "";
  if (!u.https)
    return "a CA file is set but the report URL is not https:// (the report would travel in "
           "clear text): use https://";
  std::ifstream in(ca_file);
  if (!in) return "cannot read the CA file '" + ca_file + "': " + std::strerror(errno);
  return "";
}

bool retryable(int status) {
  return status == 0 || status == 408 || status == 429 || status >= 500;
}

}  // namespace

Result<std::string> spool_report(const NodeReport& report, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{ec.message(), "create_directories(" + dir + ")"};
  const std::string base = safe_name(report.node) + "-" + safe_name(report.run_id) + ".json";
  const std::string final_path = dir + "/" + base;
  // The temporary's name does not end in .json: the drainer's spool scan never takes it.
  VIGIL_TRY(auto w, replace_file_atomically(final_path, to_json(report).dump(), {0640, true}));
  (void)w;
  return final_path;
}

std::optional<ReportAuthMode> parse_report_auth_mode(std::string_view s) {
  if (s == "token") return ReportAuthMode::kToken;
  if (s == "munge") return ReportAuthMode::kMunge;
  return std::nullopt;
}

namespace {

// One connection to the drainer as `opts` says: its URL, the token read, the TLS settings
// checked. Every request to the drainer (a report's POST, a GET of its state) starts here.
struct DrainerConnection {
  HttpUrl url;
  std::string token;
  std::unique_ptr<httplib::Client> client;
};

Result<DrainerConnection> connect_drainer(const ReportClientOptions& opts) {
  DrainerConnection c;
  if (!opts.token_file.empty() && opts.auth.mode == ReportAuthMode::kToken) {
    VIGIL_TRY(c.token, read_token(opts.token_file));
  }
  VIGIL_TRY(c.url, parse_url(opts.url));
  if (auto problem = tls_setup_problem(c.url, opts.ca_file); !problem.empty())
    return Error{problem, "connect_drainer"};
  c.client = make_http_client({c.url.scheme_host_port, opts.ca_file, opts.timeout_ms});
  c.client->set_tcp_nodelay(true);
  return c;
}

// The Authorization header of one request, if any: the bearer token, or a fresh MUNGE
// credential bound to the method, path and body (munged refuses a credential twice).
Result<std::optional<std::string>> authorization(const DrainerConnection& c,
                                                 const ReportClientOptions& opts,
                                                 const std::string& method,
                                                 const std::string& body) {
  if (opts.auth.mode == ReportAuthMode::kMunge) {
    VIGIL_TRY(auto cred, munge::encode(munge::request_payload(method, c.url.path, body),
                                       {opts.auth.munge_socket, opts.auth.munge_ttl_s}));
    return std::optional<std::string>(std::string(munge::kAuthScheme) + " " + cred);
  }
  if (!c.token.empty()) return std::optional<std::string>("Bearer " + c.token);
  return std::optional<std::string>();
}

// POSTs one body with retries; fills out (attempts, status, error). Sets out.delivered on 2xx.
void post_body(const std::string& body, const ReportClientOptions& opts, int max_attempts,
               PostOutcome& out) {
  auto sleep = opts.sleep ? opts.sleep : [](int ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  };
  auto conn = connect_drainer(opts);
  if (!conn.ok()) {
    out.last_error = conn.error().to_string();
    return;
  }
  httplib::Client& cli = *conn->client;
  int backoff = std::max(1, opts.initial_backoff_ms);
  for (int attempt = 1; attempt <= std::max(1, max_attempts); ++attempt) {
    out.attempts = attempt;
    httplib::Headers headers;
    if (opts.want_decision) headers.emplace(std::string(kDecisionHeader), "1");
    auto auth = authorization(*conn, opts, "POST", body);
    if (!auth.ok()) {  // munged down: no attempt can succeed, spool
      out.last_http_status = 0;
      out.last_error = auth.error().to_string();
      return;
    }
    if (*auth) headers.emplace("Authorization", **auth);
    auto res = cli.Post(conn->url.path.c_str(), headers, body, "application/json");
    if (res) {
      out.reached = true;
      out.last_http_status = res->status;
      if (res->status >= 200 && res->status < 300) {
        out.delivered = true;
        out.reply_body = res->body;
        return;
      }
      out.last_error = "HTTP " + std::to_string(res->status) + ": " + res->body.substr(0, 300);
      if (!retryable(res->status)) return;
      if (res->has_header("Retry-After")) {
        int ra = std::atoi(res->get_header_value("Retry-After").c_str());
        if (ra > 0) backoff = std::max(backoff, std::min(ra * 1000, opts.max_backoff_ms));
      }
    } else {
      out.last_http_status = 0;
      out.last_error = http_failure_text(cli, res.error(), "the drainer", opts.ca_file);
      if (res.error() == httplib::Error::Read || res.error() == httplib::Error::Write)
        out.reached = true;
      // An untrusted certificate stays untrusted: spool at once instead of retrying.
      if (tls_verify_failure(cli, res.error()) || res.error() == httplib::Error::SSLLoadingCerts)
        return;
    }
    if (attempt < max_attempts) {
      sleep(backoff);
      backoff = static_cast<int>(next_backoff(backoff, backoff, std::max(opts.max_backoff_ms, 1)));
    }
  }
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Result<std::string> get_from_drainer(const std::string& path, ReportClientOptions opts) {
  auto base = parse_http_url(opts.url);
  if (!base.ok()) return Error{"drainer " + base.error().message, "get_from_drainer"};
  opts.url = base->scheme_host_port + path;
  VIGIL_TRY(auto conn, connect_drainer(opts));
  VIGIL_TRY(auto auth, authorization(conn, opts, "GET", ""));
  httplib::Headers headers;
  if (auth) headers.emplace("Authorization", *auth);
  auto res = conn.client->Get(path.c_str(), headers);
  if (!res)
    return Error{http_failure_text(*conn.client, res.error(), "the drainer", opts.ca_file),
                 "GET " + opts.url};
  if (res->status != 200)
    return Error{"HTTP " + std::to_string(res->status) + ": " + res->body.substr(0, 300),
                 "GET " + opts.url};
  return res->body;
}

SpoolResend resend_spool(const std::string& dir, const ReportClientOptions& opts, int max_files) {
  namespace fs = std::filesystem;
  SpoolResend r;
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".json" &&
        e.path().filename().string()[0] != '.')
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (size_t i = 0; i < files.size(); ++i) {
    if (static_cast<int>(i) >= max_files) {
      r.left += static_cast<int>(files.size() - i);
      break;
    }
    PostOutcome one;
    post_body(slurp(files[i]), opts, 1, one);
    if (one.delivered) {
      fs::remove(files[i], ec);
      r.delivered++;
    } else if (one.last_http_status >= 400 && !retryable(one.last_http_status)) {
      fs::create_directories(fs::path(dir) / "rejected", ec);
      fs::rename(files[i], fs::path(dir) / "rejected" / files[i].filename(), ec);
      r.rejected++;
      r.last_error = files[i].filename().string() + ": " + one.last_error;
    } else {  // drainer unreachable or busy: keep this one and the rest for the next run
      r.left += static_cast<int>(files.size() - i);
      r.last_error = one.last_error;
      break;
    }
  }
  return r;
}

Result<PostOutcome> post_report(const NodeReport& report, const ReportClientOptions& opts) {
  PostOutcome out;
  post_body(to_json(report).dump(), opts, opts.max_attempts, out);
  if (out.delivered) {
    if (opts.auth.mode == ReportAuthMode::kMunge && !opts.spool_dir.empty() &&
        opts.resend_max_files > 0) {
      // Old spooled reports are only delivered: a verdict on stale evidence helps nobody and
      // costs the drainer a decision pass inside slurmd's time budget.
      ReportClientOptions resend = opts;
      resend.want_decision = false;
      out.resent = resend_spool(opts.spool_dir, resend, opts.resend_max_files);
    }
    return out;
  }
  if (opts.spool_dir.empty())
    return Error{"not delivered and no spool dir: " + out.last_error,
                 "post_report(" + opts.url + ")"};
  VIGIL_TRY(out.spooled_path, spool_report(report, opts.spool_dir));
  return out;
}

Delivery deliver_report(const NodeReport& report, const ReportClientOptions& opts) {
  Delivery d;
  if (opts.url.empty()) {
    if (opts.spool_dir.empty()) {
      d.text = "not posted: neither --report-url nor --spool-dir given";
    } else if (auto s = spool_report(report, opts.spool_dir); s) {
      d.kind = Delivery::Kind::kSpooled;
      d.text = "spooled to " + *s;
    } else {
      d.kind = Delivery::Kind::kFailed;
      d.text = "not spooled: " + s.error().to_string();
    }
    return d;
  }
  auto posted = post_report(report, opts);
  if (!posted) {
    d.kind = Delivery::Kind::kFailed;
    d.text = "neither delivered nor spooled: " + posted.error().to_string();
    return d;
  }
  d.reached = posted->reached;
  if (!posted->delivered) {
    d.kind = Delivery::Kind::kSpooled;
    d.text = "spooled to " + posted->spooled_path + " (" + posted->last_error + ")";
    return d;
  }
  d.kind = Delivery::Kind::kDelivered;
  d.reached = true;
  d.text = "delivered to " + opts.url;
  d.reply_body = std::move(posted->reply_body);
  return d;
}

}  // namespace vigil
