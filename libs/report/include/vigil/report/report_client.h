#pragma once
// Check-side delivery of NodeReports to vigil-drainer: POST with retries and exponential
// backoff; when every attempt failed, the report is spooled to a directory (tmp + fsync +
// rename) that the drainer ingests later (`vigil-drainer apply --reports-dir`, or the
// service's spool_dir). A report is never silently dropped. docs/drainer.md "Report client".
#include <functional>
#include <optional>
#include <string>

#include "vigil/base/result.h"
#include "vigil/report/report.h"

namespace vigil {

// How a report proves where it comes from (docs/security.md). kToken: the shared bearer token
// (token_file), which every node holds, so any node can speak for any other: for demos. kMunge:
// each request carries a MUNGE credential from the node's own munged, bound to the body; the
// drainer accepts it only from an address Slurm knows for the report's node.
enum class ReportAuthMode { kToken, kMunge };

struct ReportAuth {
  ReportAuthMode mode = ReportAuthMode::kToken;
  std::string munge_socket;  // empty: libmunge's default socket
  int munge_ttl_s = 0;       // 0: munged's default (300 s)
};
// "token" or "munge"; nullopt for anything else.
std::optional<ReportAuthMode> parse_report_auth_mode(std::string_view s);

struct ReportClientOptions {
  std::string url;  // http(s)://host:port[/path]; path defaults to /v1/reports
  // https: the CA (PEM) the drainer's certificate must chain to; empty: the system's CAs. The
  // certificate and its host name are always verified. Set with an http:// URL it is an
  // error (the report would travel in clear text).
  std::string ca_file;
  std::string token_file;  // bearer token file; empty: no Authorization header
  std::string spool_dir;   // where to spool on final failure; empty: no spool (error instead)
  int max_attempts = 5;
  int initial_backoff_ms = 500;  // doubles per attempt
  int max_backoff_ms = 8000;
  int timeout_ms = 10000;  // connect + read timeout per attempt
  // Injectable for tests; default std::this_thread::sleep_for.
  std::function<void(int ms)> sleep;
  // kMunge: a fresh credential for every attempt (munged refuses a credential it has decoded
  // once, so a retry cannot reuse one), and after a delivery the spool is resent (below).
  ReportAuth auth;
  int resend_max_files = 16;  // spooled files resent after a delivery (kMunge); 0: none
  // Ask the drainer to decide the report before it answers (kDecisionHeader,
  // vigil/report/drain_decision.h); the verdict comes back in PostOutcome::reply_body.
  bool want_decision = false;
};

struct SpoolResend {
  int delivered = 0;  // files delivered and removed
  int rejected = 0;   // files the drainer refused for good (4xx), moved to <dir>/rejected/
  int left = 0;       // files still spooled (drainer unreachable or busy, or over the limit)
  std::string last_error;
};

struct PostOutcome {
  bool delivered = false;  // 2xx from the drainer
  int attempts = 0;
  int last_http_status = 0;  // 0: no HTTP answer (connection error)
  // The drainer was reached: an attempt got an HTTP answer, or failed after the connection was
  // made (read/write error or timeout, so the report may have been taken). False: nothing could
  // connect (refused, unreachable, connect timeout, TLS handshake or certificate).
  bool reached = false;
  std::string last_error;
  std::string reply_body;    // the drainer's 2xx body (report_reply_from_json reads it)
  std::string spooled_path;  // set when spooled
  SpoolResend resent;        // auth munge: what the resend after a delivery did
};

// Delivers or spools. Errors only when the report could neither be delivered nor spooled.
// 4xx answers other than 408/429 are not retried (they would fail the same way) but the
// report is still spooled so that nothing is lost.
Result<PostOutcome> post_report(const NodeReport& report, const ReportClientOptions& opts);

// What one delivery did, for every sender of reports (vigil-check run and fabric, the Slurm
// hooks): one function, one wording.
struct Delivery {
  enum class Kind {
    kNone,       // neither a URL nor a spool directory: nothing to do
    kDelivered,  // 2xx from the drainer (reply_body holds its answer)
    kSpooled,    // kept in the spool directory for a later delivery
    kFailed,     // neither delivered nor spooled: the report is lost, an error
  };
  Kind kind = Kind::kNone;
  std::string text;  // "delivered to URL", "spooled to PATH (why)", "not spooled: ..."
  // The drainer answered, or the connection was made (it may hold the report).
  bool reached = false;
  std::string reply_body;
};

// With opts.url: post_report (retries, then the spool). Without one: spool_report into
// opts.spool_dir. With neither: kNone.
Delivery deliver_report(const NodeReport& report, const ReportClientOptions& opts);

// Resends up to max_files spooled reports from dir, each with a fresh credential from this
// node's munged (a credential spooled with the file would have expired: munge's default
// time-to-live is 300 s), one attempt each; stops at the first connection error. Under auth
// munge a node resends only its own spool, so the origin is right; the drainer does not read
// node spools itself (a file carries no credential).
SpoolResend resend_spool(const std::string& dir, const ReportClientOptions& opts,
                         int max_files = 16);

// GET `path` (e.g. "/v1/rechecks") of the drainer at opts.url (its path is replaced), with the
// same authentication and TLS settings as a report; one attempt. The 200 body, or an error
// naming the URL and the answer.
Result<std::string> get_from_drainer(const std::string& path, ReportClientOptions opts);

// Writes the report as <dir>/<node>-<run_id>.json atomically (tmp + fsync + rename + dir fsync).
Result<std::string> spool_report(const NodeReport& report, const std::string& dir);

}  // namespace vigil
