#include "vigil/checks/findings.h"

#include <algorithm>

#include "vigil/base/strings.h"
#include "vigil/checks/check.h"

namespace vigil {

void Findings::add(Status s, std::string text, std::string fault_code) {
  findings_.push_back({s, std::move(text), std::move(fault_code)});
}

void Findings::prepend(Status s, std::string text, std::string fault_code) {
  findings_.insert(findings_.begin(), {s, std::move(text), std::move(fault_code)});
}

bool Findings::conclude(CheckResult& r, std::string_view fault_prefix, size_t shown,
                        std::string_view sep) const {
  if (r.status == Status::kError || r.status == Status::kSkipped) return false;
  Status worst = r.status;
  for (const Measurement& m : r.measurements) worst = combine(worst, m.status());
  for (const Finding& f : findings_) worst = combine(worst, f.status);
  std::vector<std::string> texts;
  std::string fault;
  for (const Finding& f : findings_) {
    if (f.status != worst || worst == Status::kPass) continue;
    // One text once: several figures may share a description (nvml_xid's per-GPU ones).
    if (std::find(texts.begin(), texts.end(), f.text) == texts.end()) texts.push_back(f.text);
    if (fault.empty()) fault = f.fault_code;
  }
  if (texts.empty()) {
    finalize(r, fault_prefix);  // the worst is a measurement's (or a pass)
  } else {
    r.status = worst;
    // "a, b +2 more" after commas; "a; b; +2 more" after semicolons.
    r.message = short_list(texts, shown, sep, sep == ", " ? " " : sep);
    r.fault_code = fault;
  }
  return r.status == Status::kPass;
}

void add_unjudged(CheckResult& r, const std::vector<std::string>& unjudged,
                  std::string_view fault_code, size_t shown) {
  if (unjudged.empty()) return;
  const std::string what = short_list(unjudged, shown, "; ", " ");
  if (r.status == Status::kFail) {
    r.message += "; also " + what;
    return;
  }
  // A warn keeps its words: "error" (nothing unjudged counts as a pass for resume_after or the
  // qualify gate) would otherwise hide it.
  const std::string warned = r.status == Status::kWarn ? "; warn: " + r.message : "";
  r.status = Status::kError;
  r.message = what + warned;
  r.fault_code = std::string(fault_code);
}

}  // namespace vigil
