#include "vigil/base/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace vigil {

namespace {
Error os_error(const char* what, const std::string& path) {
  return Error{std::strerror(errno), std::string(what) + " " + path};
}
}  // namespace

VoidResult replace_file_atomically(const std::string& path, const std::string& content,
                                   ReplaceOptions opts) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, opts.mode);
  if (fd < 0) return os_error("open", tmp);
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Error e = os_error("write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return e;
    }
    done += static_cast<std::size_t>(n);
  }
  if (opts.sync && ::fsync(fd) != 0) {
    Error e = os_error("fsync", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return e;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Error e = os_error("rename", path);
    ::unlink(tmp.c_str());
    return e;
  }
  if (!opts.sync) return ok_result();
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  if (const int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); d >= 0) {
    ::fsync(d);
    ::close(d);
  }
  return ok_result();
}

Result<std::map<std::string, std::string>> load_node_map(const std::string& path,
                                                         std::string_view value) {
  std::ifstream in(path);
  if (!in) return Error{"cannot read the map file", path};
  std::map<std::string, std::string> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::string node, second, extra;
    if (!(words >> node)) continue;
    const std::string where = path + ":" + std::to_string(n);
    if (!(words >> second) || (words >> extra))
      return Error{"expected '<node> <" + std::string(value) + ">', got '" + line + "'", where};
    if (!out.emplace(node, second).second) return Error{"node " + node + " listed twice", where};
  }
  return out;
}

std::optional<std::string> read_whole_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      ::close(fd);
      return std::nullopt;
    }
  }
  ::close(fd);
  return out;
}

}  // namespace vigil
