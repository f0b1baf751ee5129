#pragma once
// Replacing a file so that a reader sees the old content or the new, never a torn one: write a
// temporary beside it (pid-unique), fsync it, rename it over the target, fsync the directory.
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "vigil/base/result.h"

namespace vigil {

struct ReplaceOptions {
  unsigned mode = 0644;  // of a new file
  bool sync = true;      // fsync the file and its directory (off: tests that measure no disk)
};

// The one atomic file write of Vigil (reports, spooled reports, state and cursor files, caches,
// the drainer's snapshot). Errors name the system call and the path.
VoidResult replace_file_atomically(const std::string& path, const std::string& content,
                                   ReplaceOptions opts = {});

// A site's map file: one "<node> <value>" per line (a leaf switch, an NVLink domain); blank lines
// and '#' comments are ignored. Errors name the file and line ("topo.txt:3: expected '<node>
// <switch>'"), a node listed twice included; `value` names the second column in them.
Result<std::map<std::string, std::string>> load_node_map(const std::string& path,
                                                         std::string_view value);

// The whole of a file, or nullopt when it cannot be opened or read. Never throws, unlike reading
// through std::ifstream: libstdc++'s filebuf throws when read(2) fails, which a /proc/<pid> file
// does (ESRCH) once its process exits between the directory listing and the read.
std::optional<std::string> read_whole_file(const std::string& path);

}  // namespace vigil
