#pragma once
// What a check found besides its measurements' own verdicts, and how the two become the result's
// status, message and fault code: one rule for every check (NVML, InfiniBand ports and counters).
#include <string>
#include <string_view>
#include <vector>

#include "vigil/report/report.h"

namespace vigil {

class Findings {
 public:
  // "mlx5_3/1 down", VIGIL-IB-PORT-DOWN.
  void add(Status s, std::string text, std::string fault_code);
  // Before the others: the finding that explains them (ib_port's missing ports).
  void prepend(Status s, std::string text, std::string fault_code);
  bool empty() const { return findings_.empty(); }

  // The result's status becomes the worst of its own, its measurements' verdicts and these
  // findings (error and skipped stay as they are). When that is warn or fail, the message lists
  // the findings of that status in order (each text once, at most `shown`, joined by `sep`) and
  // the fault code is the first's; without a finding of that status, finalize() speaks for the
  // worst measurement. Returns whether the result passed: the check then says what passed.
  bool conclude(CheckResult& r, std::string_view fault_prefix, size_t shown = 3,
                std::string_view sep = ", ") const;

 private:
  struct Finding {
    Status status;
    std::string text;
    std::string fault_code;
  };
  std::vector<Finding> findings_;
};

// What a check could not judge (a file it could not read, a query that hung), after conclude():
// a fail still stands, with the first `shown` of them added to its message ("; also ...");
// any other result becomes an error with `fault_code` and them as its message, a warn's words
// kept after them ("; warn: ...") so that Vigil's own trouble with some parts does not hide
// what it found on the others. An error, not a warn: a result with parts unjudged must not count
// as a pass (resume_after, the qualify gate). Nothing when empty.
void add_unjudged(CheckResult& r, const std::vector<std::string>& unjudged,
                  std::string_view fault_code, size_t shown = 1);

}  // namespace vigil
