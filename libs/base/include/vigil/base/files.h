#pragma once
// Replacing a file so that a reader sees the old content or the new, never a torn one: write a
// temporary beside it (pid-unique), fsync it, rename it over the target, fsync the directory.
#include <string>

#include "vigil/base/result.h"

namespace vigil {

VoidResult replace_file_atomically(const std::string& path, const std::string& content);

}  // namespace vigil
