// Site checks (vigil/checks/site_check.h, docs/site-checks.md): the check that runs one (its
// file is read by site_check_file.cpp). What a result means is the site's word; what Vigil
// guarantees is the rule every check keeps: a command that cannot start, crashes, hangs past its
// timeout, exits with a code the file does not name, or prints a measurement line that does not
// parse is an `error`, never a `fail`, so it never drains a node.
#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <sstream>

#include "check_factories.h"
#include "vigil/base/process.h"
#include "vigil/base/strings.h"
#include "vigil/checks/findings.h"
#include "vigil/checks/sku.h"

namespace vigil {
namespace {

// "site_lustre_rw" -> "VIGIL-SITE-LUSTRE-RW".
std::string fault_code_of(const std::string& name) {
  std::string code = "VIGIL-SITE-" + name.substr(5);
  for (char& c : code) c = c == '_' ? '-' : static_cast<char>(std::toupper(c));
  return code;
}

// The last line of `text` that is not blank nor a measurement line, at most 200 characters,
// bytes outside printable ASCII as '?': the message goes into JSON (which must be UTF-8) and a
// Slurm reason.
std::string last_line(const std::string& text) {
  std::istringstream lines(text);
  std::string line, last;
  while (std::getline(lines, line))
    if (auto t = trim(line); !t.empty() && !t.starts_with("{")) last = std::string(t);
  for (char& c : last)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return last.size() > 200 ? last.substr(0, 197) + "..." : last;
}

class SiteCheck final : public Check {
 public:
  explicit SiteCheck(SiteCheckSpec spec) : s_(std::move(spec)) {}
  std::string_view name() const override { return s_.name; }
  std::string_view short_name() const override { return s_.short_name; }
  // The runner's limit is a little longer than the command's, so the command's own timeout
  // speaks first, with the check's words.
  std::chrono::seconds timeout() const override { return s_.timeout + std::chrono::seconds(5); }
  Applies applies(const CheckContext&) const override { return {}; }

  CheckResult run(const CheckContext& ctx) override {
    LaunchOptions o;
    o.timeout = s_.timeout;
    // Inside a time box (the hooks'), the command's own timeout ends first, with room for
    // run_command's SIGTERM-then-SIGKILL of the command's process group and the reap.
    if (ctx.time_limit.count() > 0)
      o.timeout = std::clamp(ctx.time_limit - std::chrono::milliseconds(4500),
                             std::chrono::milliseconds(500), o.timeout);
    o.env = s_.env;
    o.env.emplace_back("VIGIL_NODE", ctx.node);
    o.env.emplace_back("VIGIL_SKU", ctx.sku ? ctx.sku->name : "unknown");
    o.max_output = 1u << 20;
    const auto ran = run_command(s_.command, o);
    if (!ran)
      return error(s_.name, s_.command[0] + " could not start: " + ran.error().to_string(),
                   "VIGIL-SITE-SETUP");
    const LaunchResult& p = ran.value();
    const std::string said = last_line(p.out).empty() ? last_line(p.err) : last_line(p.out);
    auto with_said = [&](std::string what) { return said.empty() ? what : what + ": " + said; };
    if (p.timed_out)
      return error(
          s_.name,
          "killed after " + std::to_string(o.timeout.count()) + " ms (timeout): " + s_.command[0],
          "VIGIL-SITE-TIMEOUT");
    if (p.term_signal != 0)
      return error(s_.name,
                   with_said(s_.command[0] + " died of signal " + std::to_string(p.term_signal)),
                   "VIGIL-SITE-CRASH");
    if (p.exit_code == 126 || p.exit_code == 127)
      return error(s_.name, with_said("cannot run " + s_.command[0]), "VIGIL-SITE-SETUP");
    Status st = Status::kPass;
    if (std::ranges::count(s_.fail_codes, p.exit_code))
      st = Status::kFail;
    else if (std::ranges::count(s_.warn_codes, p.exit_code))
      st = Status::kWarn;
    else if (p.exit_code != 0)
      return error(s_.name,
                   with_said(s_.command[0] + " exited " + std::to_string(p.exit_code) + ", which " +
                             s_.file + " does not name"),
                   "VIGIL-SITE-EXIT");
    CheckResult r;
    r.check = s_.name;
    if (s_.measurements) {
      if (std::string bad = read_measurements(r, ctx, p.out); !bad.empty())
        return error(s_.name, bad, "VIGIL-SITE-OUTPUT");
      if (r.measurements.empty())
        return error(s_.name, with_said(s_.command[0] + " printed no measurement line"),
                     "VIGIL-SITE-OUTPUT");
    }
    Findings found;
    if (st != Status::kPass)
      found.add(st, said.empty() ? "exit " + std::to_string(p.exit_code) : said,
                fault_code_of(s_.name));
    if (found.conclude(r, fault_code_of(s_.name))) r.message = said.empty() ? "exit 0" : said;
    return r;
  }

 private:
  // The lines of `out` that start with '{', each one measurement as a NodeReport writes it
  // (docs/node-report.md), its own threshold optional; the SKU file's bound wins. "" or why not.
  std::string read_measurements(CheckResult& r, const CheckContext& ctx, const std::string& out) {
    std::istringstream lines(out);
    std::string line;
    for (int n = 1; std::getline(lines, line); ++n) {
      if (!trim(line).starts_with("{")) continue;
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded()) return "stdout line " + std::to_string(n) + " is not JSON";
      auto parsed =
          parse_check_result(nlohmann::json{{"check", s_.name},
                                            {"status", "pass"},
                                            {"message", ""},
                                            {"measurements", nlohmann::json::array({j})}});
      if (!parsed) return "stdout line " + std::to_string(n) + ": " + parsed.error;
      Measurement m = parsed.value->measurements.front();
      Measurement& added = add_measurement(r, ctx, m.name, m.value, m.unit, m.gpu, m.port);
      if (!added.threshold) added.threshold = m.threshold;
    }
    return "";
  }

  SiteCheckSpec s_;
};

}  // namespace

std::unique_ptr<Check> make_site_check(const SiteCheckSpec& spec) {
  return std::make_unique<SiteCheck>(spec);
}

}  // namespace vigil
