#include "vigil/report/output.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace vigil {

namespace {

// Left-aligned columns sized to their widest cell; the last column is not padded.
std::string render(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::ostringstream os;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      os << row[i];
      if (i + 1 < row.size()) os << std::string(width[i] - row[i].size() + 2, ' ');
    }
    os << '\n';
  }
  return os.str();
}

std::string upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::toupper(c); });
  return out;
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fs", s);
  return buf;
}

}  // namespace

std::string format_report_table(const NodeReport& r) {
  std::vector<std::vector<std::string>> rows = {{"CHECK", "STATUS", "TIME", "DETAIL"}};
  for (const auto& c : r.checks) {
    rows.push_back({c.check, upper(to_string(c.status)), seconds(c.duration_s), c.message});
  }
  std::ostringstream os;
  os << "node " << r.node << "  sku " << r.sku << "  run " << r.run_id;
  if (r.job_id) os << "  job " << *r.job_id;
  os << "\n" << render(rows) << "overall: " << upper(to_string(r.overall())) << "\n";
  return os.str();
}

std::string format_fleet_table(const std::vector<NodeReport>& reports) {
  std::vector<std::vector<std::string>> rows = {{"NODE", "SKU", "STATUS", "CHECKS", "FINDINGS"}};
  for (const auto& r : reports) {
    int counted = 0;
    std::string findings;
    for (const auto& c : r.checks) {
      if (c.status == Status::kPass || c.status == Status::kSkipped) continue;
      if (!findings.empty()) findings += "; ";
      findings += c.check + " " + std::string(to_string(c.status)) + ": " + c.message;
    }
    for (const auto& c : r.checks) counted += c.status != Status::kSkipped;
    rows.push_back({r.node, r.sku, upper(to_string(r.overall())),
                    std::to_string(counted) + "/" + std::to_string(r.checks.size()) + " ran",
                    findings.empty() ? "-" : findings});
  }
  return render(rows);
}

}  // namespace vigil
