#include "vigil/report/status.h"

namespace vigil {

namespace {
// Higher wins when results are combined. skipped ranks with pass: not applicable is not unhealthy.
int rank(Status s) {
  switch (s) {
    case Status::kPass:
    case Status::kSkipped:
      return 0;
    case Status::kWarn:
      return 1;
    case Status::kError:
      return 2;
    case Status::kFail:
      return 3;
  }
  return 2;
}
}  // namespace

Status combine(Status a, Status b) {
  if (rank(a) != rank(b)) return rank(a) > rank(b) ? a : b;
  // Equal rank: pass beats skipped so a run with one passing check reports pass.
  return a == Status::kPass ? a : b;
}

int exit_code_for(Status overall) {
  switch (overall) {
    case Status::kPass:
    case Status::kSkipped:
      return 0;
    case Status::kFail:
      return 1;
    case Status::kWarn:
      return 2;
    case Status::kError:
      return 3;
  }
  return 3;
}

}  // namespace vigil
