// Ingest: reports become durable journal records (idempotent on node + run id) before they
// are acknowledged; the spool directory is read the same way.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "audit_log.h"
#include "commit.h"
#include "ingest_log.h"
#include "outbox.h"
#include "records.h"
#include "vigil/base/time.h"
#include "vigil/drainer/drainer.h"

namespace fs = std::filesystem;

namespace vigil::drainer {

Result<IngestOutcome> Drainer::ingest(const std::vector<NodeReport>& reports,
                                      std::vector<nlohmann::json>* received) {
  if (!ready_) return Error{"drainer not ready", "Drainer::ingest"};
  if (journal_failed_) return Error{"the journal failed; restart vigil-drainer", "ingest"};
  const int64_t now = clock_.now_unix();
  std::vector<nlohmann::json> all;  // serialised outside the lock
  all.reserve(reports.size());
  const bool as_received = received && received->size() == reports.size();
  for (size_t k = 0; k < reports.size(); ++k)
    all.push_back(as_received ? report_record(now, reports[k], std::move((*received)[k]))
                              : report_record(now, reports[k]));
  auto taken = ingest_->accept(reports, std::move(all), *journal_);
  if (!committed(taken, "append (reports)")) return taken.error();
  // Also for duplicates: the first copy may still be in flight; 202 means durable.
  if (auto s = journal_->sync(); !committed(s, "sync (reports)")) return s.error();
  metrics_.on_ingest("accepted", taken->accepted);
  if (taken->duplicates) metrics_.on_ingest("duplicate", taken->duplicates);
  if (taken->accepted) ingest_->notify();
  return IngestOutcome{taken->accepted, taken->duplicates};
}

Result<int> Drainer::ingest_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Error{"not a directory", "ingest_dir(" + dir + ")"};
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  int taken = 0;
  for (const auto& f : files) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    std::vector<nlohmann::json> received;  // journaled as it came, like a POST's
    auto parsed = parse_node_reports(ss.str(), &received);
    if (!parsed) {
      metrics_.on_ingest("invalid");
      fs::create_directories(fs::path(dir) / "rejected", ec);
      fs::rename(f, fs::path(dir) / "rejected" / f.filename(), ec);
      audit_->write({{"time", rfc3339_utc(clock_.now_unix())},
                     {"event", "spool_rejected"},
                     {"file", f.string()},
                     {"error", parsed.error}});
      continue;
    }
    VIGIL_TRY(auto o, ingest(*parsed.value, &received));
    (void)o;
    fs::remove(f, ec);  // durable in the journal now
    taken++;
  }
  return taken;
}

}  // namespace vigil::drainer
