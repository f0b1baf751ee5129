// Append-only JSON-lines journal with group commit; see journal.h.
#include "vigil/drainer/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "vigil/base/files.h"

namespace fs = std::filesystem;

namespace vigil::drainer {
namespace {

Error sys_error(const std::string& what, const std::string& path) {
  return Error{std::string(std::strerror(errno)), what + "(" + path + ")"};
}

VoidResult write_all(int fd, const std::string& data, const std::string& path) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return sys_error("write", path);
    }
    off += static_cast<size_t>(n);
  }
  return ok_result();
}

VoidResult fsync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return sys_error("open", dir);
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return sys_error("fsync", dir);
  return ok_result();
}

std::optional<uint64_t> segment_first_seq(const std::string& name) {
  constexpr std::string_view pre = "journal-", suf = ".jsonl";
  if (!name.starts_with(pre) || !name.ends_with(suf)) return std::nullopt;
  std::string_view num(name.data() + pre.size(), name.size() - pre.size() - suf.size());
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
  if (ec != std::errc() || p != num.data() + num.size()) return std::nullopt;
  return v;
}

// Records are serialised before the journal lock is taken; "seq" is spliced in front under
// the lock: {"seq":N,<rest of the object>}. A record arrives here as a JSON string holding
// the serialised object (see Journal::prepare).
std::string pre_dumped(const nlohmann::json& r, uint64_t seq) {
  const std::string& body = r.get_ref<const std::string&>();
  std::string out = "{\"seq\":" + std::to_string(seq);
  if (body.size() > 2) out += ",";
  out.append(body, 1, std::string::npos);
  out += '\n';
  return out;
}

std::string segment_name(uint64_t first_seq) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "journal-%020llu.jsonl",
                static_cast<unsigned long long>(first_seq));
  return buf;
}

// The snapshot, if there is one, into `out`.
VoidResult load_snapshot(const std::string& path, Recovered& out) {
  if (!fs::exists(path)) return ok_result();
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    auto j = nlohmann::json::parse(ss.str());
    out.snapshot_seq = j.at("last_seq").get<uint64_t>();
    out.snapshot = std::move(j);
  } catch (const std::exception& e) {
    return Error{std::string("corrupt snapshot: ") + e.what() +
                     " (move it away to rebuild state from the journal segments)",
                 "Journal::recover(" + path + ")"};
  }
  return ok_result();
}

}  // namespace

Result<std::unique_ptr<Journal>> Journal::open(const std::string& dir, bool fsync) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{ec.message(), "create_directories(" + dir + ")"};
  return std::unique_ptr<Journal>(new Journal(dir, fsync));
}

Journal::~Journal() {
  if (fd_ >= 0) {
    if (fsync_) ::fdatasync(fd_);
    ::close(fd_);
  }
}

Result<Recovered> Journal::recover() {
  std::unique_lock lk(mu_);
  Recovered out;
  VIGIL_TRY(auto loaded, load_snapshot(dir_ + "/snapshot.json", out));
  (void)loaded;
  std::vector<std::pair<uint64_t, std::string>> segs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_)) {
    auto name = e.path().filename().string();
    if (auto s = segment_first_seq(name)) segs.emplace_back(*s, e.path().string());
    // A snapshot write a crash interrupted (replace_file_atomically's temporary): never read.
    if (name.starts_with("snapshot.json.tmp")) fs::remove(e.path(), ec);
  }
  std::sort(segs.begin(), segs.end());
  uint64_t max_seq = out.snapshot_seq;
  for (size_t i = 0; i < segs.size(); ++i) {
    const auto& path = segs[i].second;
    std::ifstream in(path, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t pos = 0, good_end = 0, line_no = 0;
    while (pos < data.size()) {
      size_t nl = data.find('\n', pos);
      line_no++;
      bool last = (nl == std::string::npos);
      std::string_view line(data.data() + pos, (last ? data.size() : nl) - pos);
      nlohmann::json j;
      bool ok = !last;
      if (ok) {
        try {
          j = nlohmann::json::parse(line);
          ok = j.contains("seq");
        } catch (const std::exception&) {
          ok = false;
        }
      }
      if (!ok) {
        if (i + 1 == segs.size() && (last || data.find('\n', nl + 1) == std::string::npos)) {
          out.dropped_torn_lines++;  // torn tail: never acknowledged
          break;
        }
        return Error{"corrupt record at line " + std::to_string(line_no),
                     "Journal::recover(" + path + ")"};
      }
      uint64_t seq = j.at("seq").get<uint64_t>();
      max_seq = std::max(max_seq, seq);
      if (seq > out.snapshot_seq) {
        out.records.push_back(std::move(j));
        out.positions.push_back(fs::path(path).filename().string() + " line " +
                                std::to_string(line_no));
      }
      pos = nl + 1;
      good_end = pos;
    }
    if (i + 1 == segs.size() && good_end < data.size()) {
      if (::truncate(path.c_str(), static_cast<off_t>(good_end)) != 0)
        return sys_error("truncate", path);
    }
  }
  next_seq_ = max_seq + 1;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!segs.empty()) {
    segment_path_ = segs.back().second;
    fd_ = ::open(segment_path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd_ < 0) return sys_error("open", segment_path_);
  } else {
    VIGIL_TRY(auto r, open_segment(next_seq_));
    (void)r;
  }
  since_snapshot_ = out.records.size();
  recovered_ = true;
  return out;
}

VoidResult Journal::open_segment(uint64_t first_seq) {
  const std::string path = dir_ + "/" + segment_name(first_seq);
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return sys_error("open", path);
  if (fsync_) {
    VIGIL_TRY(auto r, fsync_dir(dir_));
    (void)r;
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  segment_path_ = path;
  return ok_result();
}

VoidResult Journal::refuse_if_broken() const {
  if (broken_.empty()) return ok_result();
  return Error{"an earlier write or sync failed (" + broken_ + "); restart to recover", "journal"};
}

Result<std::vector<uint64_t>> Journal::write_locked(std::vector<nlohmann::json>& records,
                                                    std::unique_lock<std::mutex>&) {
  if (!recovered_) return Error{"recover() must run before append", "Journal::append"};
  VIGIL_TRY(auto ok, refuse_if_broken());
  (void)ok;
  std::vector<uint64_t> seqs;
  std::string buf;
  for (auto& r : records) {
    seqs.push_back(next_seq_++);
    buf += pre_dumped(r, seqs.back());
  }
  if (auto w = write_all(fd_, buf, segment_path_); !w.ok()) {
    broken_ = w.error().to_string();
    return w.error();
  }
  written_ += buf.size();
  since_snapshot_ += records.size();
  if (!fsync_) synced_ = written_;
  return seqs;
}

VoidResult Journal::sync_until(uint64_t offset, std::unique_lock<std::mutex>& lk) {
  for (;;) {
    VIGIL_TRY(auto ok, refuse_if_broken());  // also for a waiter whose syncer failed
    (void)ok;
    if (synced_ >= offset) break;
    if (syncing_) {
      cv_.wait(lk);
      continue;
    }
    syncing_ = true;
    const uint64_t target = written_;
    const int fd = fd_;
    lk.unlock();
    int rc = ::fdatasync(fd);
    int err = errno;
    lk.lock();
    syncing_ = false;
    cv_.notify_all();
    if (rc != 0) {
      errno = err;
      Error e = sys_error("fdatasync", segment_path_);
      broken_ = e.to_string();
      return e;
    }
    synced_ = std::max(synced_, target);
  }
  return ok_result();
}

Result<std::vector<uint64_t>> Journal::append_durable(std::vector<nlohmann::json> records) {
  prepare(records);
  std::unique_lock lk(mu_);
  VIGIL_TRY(auto seqs, write_locked(records, lk));
  VIGIL_TRY(auto s, sync_until(written_, lk));
  (void)s;
  return seqs;
}

void Journal::prepare(std::vector<nlohmann::json>& records) {
  for (auto& r : records) {
    if (!r.is_object()) r = nlohmann::json{{"value", r}};
    r.erase("seq");
    r = r.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
}

VoidResult Journal::sync() {
  std::unique_lock lk(mu_);
  return sync_until(written_, lk);
}

Result<std::vector<uint64_t>> Journal::append(std::vector<nlohmann::json> records) {
  prepare(records);
  std::unique_lock lk(mu_);
  return write_locked(records, lk);
}

Result<uint64_t> Journal::cut() {
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return !syncing_; });
  VIGIL_TRY(auto ok, refuse_if_broken());
  (void)ok;
  if (fsync_ && fd_ >= 0 && ::fdatasync(fd_) != 0) {
    Error e = sys_error("fdatasync", segment_path_);
    broken_ = e.to_string();
    return e;
  }
  synced_ = written_;
  const uint64_t last = next_seq_ - 1;
  // Later records go to a segment of their own, which the snapshot will not cover.
  VIGIL_TRY(auto r, open_segment(last + 1));
  (void)r;
  since_snapshot_ = 0;
  return last;
}

VoidResult Journal::write_snapshot(const nlohmann::json& snapshot, uint64_t last) {
  nlohmann::json snap = snapshot;
  snap["last_seq"] = last;
  VIGIL_TRY(auto w, replace_file_atomically(
                        dir_ + "/snapshot.json",
                        snap.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                        {0600, fsync_}));
  (void)w;
  // The segments below go only once the rename is durable: a directory fsync that fails is an
  // error here (replace_file_atomically tolerates one for its other callers).
  if (fsync_) {
    VIGIL_TRY(auto r, fsync_dir(dir_));
    (void)r;
  }
  // Segments that start at or before `last` hold only records the snapshot covers (cut()
  // started a new one after them).
  for (const auto& e : fs::directory_iterator(dir_)) {
    auto first = segment_first_seq(e.path().filename().string());
    if (first && *first <= last) {
      std::error_code ec;
      fs::remove(e.path(), ec);
    }
  }
  return ok_result();
}

VoidResult Journal::write_snapshot(const nlohmann::json& snapshot) {
  VIGIL_TRY(uint64_t last, cut());
  return write_snapshot(snapshot, last);
}

uint64_t Journal::last_seq() const {
  std::lock_guard lk(mu_);
  return next_seq_ - 1;
}

uint64_t Journal::records_since_snapshot() const {
  std::lock_guard lk(mu_);
  return since_snapshot_;
}

}  // namespace vigil::drainer
