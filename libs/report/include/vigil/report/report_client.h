#pragma once
// Check-side delivery of NodeReports to vigil-drainer: POST with retries and exponential
// backoff; when every attempt failed, the report is spooled to a directory (tmp + fsync +
// rename) that the drainer ingests later (`vigil-drainer apply --reports-dir`, or the
// service's spool_dir). A report is never silently dropped. docs/drainer.md "Report client".
#include <functional>
#include <string>

#include "vigil/base/result.h"
#include "vigil/report/report.h"

namespace vigil {

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
};

struct PostOutcome {
  bool delivered = false;  // 2xx from the drainer
  int attempts = 0;
  int last_http_status = 0;  // 0: no HTTP answer (connection error)
  std::string last_error;
  std::string spooled_path;  // set when spooled
};

// Delivers or spools. Errors only when the report could neither be delivered nor spooled.
// 4xx answers other than 408/429 are not retried (they would fail the same way) but the
// report is still spooled so that nothing is lost.
Result<PostOutcome> post_report(const NodeReport& report, const ReportClientOptions& opts);

// Writes the report as <dir>/<node>-<run_id>.json atomically (tmp + fsync + rename + dir fsync).
Result<std::string> spool_report(const NodeReport& report, const std::string& dir);

}  // namespace vigil
