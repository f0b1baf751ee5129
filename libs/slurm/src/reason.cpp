#include "vigil/slurm/reason.h"

namespace vigil::slurm {

std::string make_reason(std::string_view short_name, std::string_view detail, size_t max_len) {
  std::string raw(kReasonPrefix);
  raw += ' ';
  raw += short_name;
  raw += ' ';
  raw += detail;
  std::string out;
  bool space = false;
  for (char c : raw) {
    const bool printable = c >= 0x20 && c < 0x7f;
    if (!printable || c == ' ') {
      if (!out.empty() && !space) out += ' ';
      space = true;
      continue;
    }
    out += c;
    space = false;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.size() > max_len) out.resize(max_len);
  return out;
}

bool reason_is_vigil(std::string_view reason) { return reason.starts_with(kReasonPrefix); }
bool untouchable(const SlurmNodeInfo& n) { return n.down || n.fail || n.maint; }
bool is_reset_gpu_reason(std::string_view reason) {
  return reason.starts_with(std::string(kReasonPrefix) + " " + std::string(kResetGpuWord) + " ");
}

bool drained_by_vigil(const SlurmNodeInfo& n) { return n.drain && reason_is_vigil(n.reason); }
bool drained_by_other(const SlurmNodeInfo& n) { return n.drain && !reason_is_vigil(n.reason); }
bool held_by_vigil(const SlurmNodeInfo& n) { return n.vigil_hold && !n.drain; }
bool reboot_timed_out(const SlurmNodeInfo& n) {
  return n.down && reason_is_vigil(n.reason) &&
         n.reason.find("reboot timed out") != std::string::npos;
}

}  // namespace vigil::slurm
