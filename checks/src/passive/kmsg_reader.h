#pragma once
// Reads the kernel log's records (/dev/kmsg) after a saved cursor, so kmsg_xid sees every XID
// the driver logged since the last run, not only the ones delivered while it listens.
//
// /dev/kmsg (Documentation/ABI/testing/dev-kmsg): one read() returns one record
//   "<prio>,<seq>,<usec since boot>,<flags>[,...];<message>\n" followed by continuation lines
//   that start with a space (" SUBSYSTEM=pci"). Sequence numbers grow by one per record; when
//   the ring buffer overwrote records a reader has not seen, read() fails once with EPIPE and
//   the next read returns the oldest record still there. With O_NONBLOCK the end of the log is
//   EAGAIN. Tests give a regular file holding records one per line (EOF ends it); the same
//   parser reads both, and a last line without '\n' (a record being written) is left for the
//   next run.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/result.h"
#include "vigil/checks/xid_catalogue.h"

namespace vigil::kmsg {

struct Record {
  std::uint64_t seq = 0;
  std::string message;  // the text after ';'
  // The syslog priority, facility << 3 | level: the kernel's own records are facility 0
  // (LOG_KERN); a line user space writes into /dev/kmsg is LOG_USER (1) unless it says
  // otherwise (Documentation/ABI/testing/dev-kmsg), so it cannot pose as the driver's.
  unsigned prio = 0;
  std::uint64_t usec = 0;  // when the kernel logged it: microseconds since boot
  bool from_kernel() const { return (prio >> 3) == 0; }
};

// One record line (without its '\n'); nullopt when it is not "<int>,<int>,<int>,...;text".
std::optional<Record> parse_record(std::string_view line);

struct Xid {
  std::string device;  // "0000:18:00" (from "PCI:0000:18:00"; a MIG line's " GPU-I:05" dropped)
  unsigned long long xid = 0;
  std::string detail;  // what the driver said after the number, may be empty
};

// "NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the bus." with
// whatever a log put before it (dmesg's "[  219.470994] ", journald's "May 18 19:02:39 host
// kernel: ", Talos's "kern: warning: [...]: "), and every driver era's form: "(0000:01:00)"
// without "PCI:", "pid='<unknown>', name=<unknown>", "pid=N" alone, none at all. nullopt for
// any other message. Genuine lines: tests/fixtures/kmsg/xid-lines.txt.
std::optional<Xid> parse_xid(std::string_view message);

// "nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 Minion Link DLREQ
// interrupt": one NVSwitch error. The driver follows it with "22013, Severity 0 Engine instance
// 44 Sub-engine instance 00" and "22013, Data {...}" lines of the same SXid
// (open-gpu-kernel-modules src/common/nvswitch/kernel/error_nvswitch.c; headers:
// intr_nvswitch.h "Non-fatal, Link %02d %s%s", "Fatal, %s, instance=%d, chiplet=%d"). A
// Severity line is returned too, marked, because a log can hold it without its first line (a
// rotated ring buffer, an excerpt: tests/fixtures/kmsg, issue 446); the number is
// NVSWITCH_ERROR_SEVERITY_TYPE (ctrl_dev_nvswitch.h: NONFATAL 0, FATAL 1). Data lines: nullopt.
struct Sxid {
  std::string device;  // "0000:04:00.0", the switch's
  unsigned long long sxid = 0;
  bool fatal = false;                // "Fatal" (the driver's word), or "Severity 1"
  std::optional<unsigned> instance;  // "Link 44", "instance=3", "Engine instance 44"
  bool severity_line = false;        // "Severity N Engine instance ...", not the first line
  std::optional<unsigned> severity;  // its N; a value other than 0 and 1 is not judged fatal
};
std::optional<Sxid> parse_sxid(std::string_view message);

// A device's own health line outside the XID catalogue, which the device cannot recover from
// by itself (docs/xid.md "Device health lines"):
//  - a ConnectX NIC's firmware health (Linux drivers/net/ethernet/mellanox/mlx5/core/health.c,
//    lines "mlx5_core <BDF>: <function>:<line>:(pid N): <text>"): poll_health's "device's health
//    compromised - reached miss count" (the firmware's health counter stopped: NVSentinel judges
//    it fatal) and "Fatal error N detected" (the device state becomes INTERNAL_ERROR),
//    print_health_info's "synd 0x..: <text>" (hsynd_str) and "PCI slot is unavailable",
//    mlx5_health_try_recover's "health recovery flow aborted" / "health recovery failed";
//    "health recovery succeeded" is the driver saying the device is back (`recovered`);
//  - an NVLink link-mask failure of the NVIDIA driver ("NVRM: knvlinkDiscoverPostRxDetLinks_GH100:
//    Getting peer0's postRxDetLinkMask failed!", "NVRM: knvlinkUpdatePostRxDetectLinkMask_IMPL:
//    Failed to update Rx Detect Link mask!", open-gpu-kernel-modules kernel_nvlink_gh100.c and
//    kernel_nvlink.c), which GPUd judges Unhealthy with RebootSystem (leptonai/gpud
//    components/accelerator/nvidia/nvlink/kmsg.go, post_rx_detect_failure.go).
// The record's text must begin with "mlx5_core " or "NVRM: knvlink" (as /dev/kmsg gives it,
// without dmesg's or journald's prefix): a kernel line quoting user text cannot pose as one.
// nullopt for any other message. Genuine lines: tests/fixtures/kmsg/device-health-lines.txt.
struct DeviceFault {
  std::string device;  // "NIC 0000:0d:00.0" (its PCI function), or "NVLINK" (no device named)
  std::string what;    // "mlx5 health compromised", "mlx5 synd 0x1 firmware internal error", ...
  bool recovered = false;
  std::string item() const { return device + " " + what; }
};
std::optional<DeviceFault> parse_device_fault(std::string_view message);

// The action a remembered item states: "XID 48 0000:18:00 (reset_gpu)". An item a Vigil
// before the catalogue wrote ("XID 48 0000:18:00", "XID 154 0000:18:00 (gpu reset required)")
// is judged again by `catalogue` from its number.
XidAction remembered_action(std::string_view item, const XidCatalogue& catalogue);

struct Scan {
  std::vector<Record> records;  // with seq > after_seq, in log order
  std::uint64_t first_seq = 0;  // oldest record still in the log (0: log empty)
  std::uint64_t last_seq = 0;   // newest complete record read (0: none)
  int malformed = 0;            // lines that are not records (skipped)
  int overwritten = 0;          // EPIPE answers: records lost to the ring buffer while reading
};

// Reads every complete record of `path` and keeps those with seq > after_seq. Errors only when
// the file cannot be opened or read.
Result<Scan> read_records(const std::string& path, std::uint64_t after_seq);

// Where the last run stopped, per boot: <state_dir>/kmsg_xid.<node>.json.
struct Cursor {
  std::string boot_id;                    // /proc/sys/kernel/random/boot_id of that run
  std::optional<std::uint64_t> last_seq;  // nullopt: no run yet in this boot
  // XIDs and SXIDs seen in this boot whose action drains ("XID 79 0000:18:00 (reboot)"): they
  // keep failing until the boot id changes, or, for those whose action is reset_gpu, until
  // clear_after_gpu_reset is told the GPU was reset (`vigil-check xid-clear`).
  std::vector<std::string> fatal;
};

// <state_dir>/kmsg_xid.<node>.json ("" when state_dir is empty: no cursor).
std::string cursor_path(const std::string& state_dir, const std::string& node);

// After a GPU reset (nvidia-smi -r, the repair ladder): forget the remembered fatal XIDs of
// `device` ("0000:18:00"; "0000:18:00.0" and upper case are accepted) whose action is reset_gpu
// (remembered_action); those needing a reboot or a person are kept.
// Takes the cursor's lock. A cursor from an earlier boot holds nothing to clear.
struct ResetCleared {
  std::vector<std::string> cleared, kept;  // kept: this device's, a reset does not clear them
};
Result<ResetCleared> clear_after_gpu_reset(const std::string& cursor_path, std::string device);

// The saved cursor; a missing file is a first run (empty cursor). A malformed file is an error
// naming it (the check then reads the whole log, as on a first run, and says why).
Result<Cursor> load_cursor(const std::string& path);
// Atomically (temp file + rename).
VoidResult save_cursor(const std::string& path, const Cursor& c);

// An exclusive flock on <path>.lock held for the object's life: prolog, epilog and
// HealthCheckProgram may run at once and share one cursor.
class CursorLock {
 public:
  static Result<CursorLock> acquire(const std::string& path);
  CursorLock(CursorLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  CursorLock& operator=(CursorLock&&) = delete;
  ~CursorLock();

 private:
  explicit CursorLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace vigil::kmsg
