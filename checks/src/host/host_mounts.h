#pragma once
// host_mounts' mount table reader, apart from the check so that it is tested on captured files.
//
// /proc/<pid>/mountinfo (proc(5), "/proc/pid/mountinfo"): one line per mount, "36 35 98:0 /mnt1
// /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue": mount ID, parent ID,
// major:minor, root, mount point, per-mount options, zero or more optional fields, a "-", then
// the filesystem type, the source and the superblock options. Space, tab, newline and backslash
// in a path are written as octal escapes (\040 ...). A later line for the same mount point is a
// mount on top of an earlier one. Captured from Linux 6.18 (tests/fixtures/mounts).
#include <string>
#include <string_view>
#include <vector>

namespace vigil::mounts {

struct Mount {
  std::string point;   // unescaped
  std::string fstype;  // "tmpfs", "nfs4", "lustre", "fuse.sshfs" ...
  std::string source;
  bool read_only = false;  // "ro" in the per-mount or the superblock options
};

// Every well-formed line, in order; malformed lines are left out.
std::vector<Mount> parse_mountinfo(std::string_view text);

}  // namespace vigil::mounts
