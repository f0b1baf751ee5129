// The one timing harness for every collective and backend. See harness.h.
#include "vigil/ncclbench/harness.h"

#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "backend.h"
#include "collective.h"
#include "vigil/base/files.h"
#include "vigil/base/time.h"
#include "vigil/ncclbench/text_format.h"
#include "watchdog.h"

extern char** environ;

#ifndef VIGIL_VERSION
#define VIGIL_VERSION "0.0.0"
#endif

#define NB_TRY_VOID(expr)                           \
  do {                                              \
    auto nb_r_ = (expr);                            \
    if (!nb_r_.ok()) {                              \
      ::vigil::Error nb_e_ = nb_r_.error();         \
      if (nb_e_.where.empty()) nb_e_.where = #expr; \
      return nb_e_;                                 \
    }                                               \
  } while (0)

namespace vigil::ncclbench {
namespace {

constexpr std::size_t kChunk = std::size_t{1} << 22;  // elements per host staging chunk
constexpr std::size_t kLine = 512;

// Set once the watchdog fired: the main thread then stops reporting its own errors (the
// watchdog is about to MPI_Abort with the timeout exit code).
std::atomic<bool> g_timed_out{false};

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::optional<int> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0') return std::nullopt;
  return static_cast<int>(x);
}

std::vector<std::string> allgather_strings(const std::string& mine) {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  std::vector<char> local(kLine, '\0');
  std::memcpy(local.data(), mine.data(), std::min(mine.size(), kLine - 1));
  std::vector<char> all(kLine * static_cast<std::size_t>(n), '\0');
  MPI_Allgather(local.data(), kLine, MPI_CHAR, all.data(), kLine, MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (int r = 0; r < n; ++r) out.emplace_back(all.data() + static_cast<std::size_t>(r) * kLine);
  return out;
}

RankInfo rank_info() {
  RankInfo info;
  MPI_Comm_rank(MPI_COMM_WORLD, &info.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &info.ranks);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, info.rank, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &info.local_rank);
  MPI_Comm_size(local, &info.local_ranks);
  MPI_Comm_free(&local);
  // Slurm's node name first: several simulated nodes may share one host.
  if (const char* n = std::getenv("SLURMD_NODENAME"); n && *n) {
    info.hostname = n;
  } else {
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    MPI_Get_processor_name(name, &len);
    info.hostname.assign(name, static_cast<std::size_t>(len));
  }
  return info;
}

std::string mpi_version() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(v, &len);
  std::string s(v, static_cast<std::size_t>(len));
  if (auto nl = s.find_first_of(",\n"); nl != std::string::npos) s.resize(nl);
  return s;
}

std::map<std::string, std::string> nccl_environment() {
  std::map<std::string, std::string> out;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    if (kv.substr(0, 5) != "NCCL_") continue;
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    out.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return out;
}

bool write_json_file(const std::string& path, const BenchRun& run) {
  if (path.empty()) return true;
  return replace_file_atomically(path, to_json(run).dump(2) + "\n").ok();
}

// What the watchdog needs to report a timeout: the rows so far and where the run is.
struct SharedState {
  std::mutex mu;
  BenchRun run;
  std::string phase = "startup";
};

class Harness {
 public:
  Harness(const BenchOptions& opts, CommBackend& backend, const Collective& coll,
          const RankInfo& info, SharedState& state)
      : opts_(opts),
        backend_(backend),
        coll_(coll),
        info_(info),
        state_(state),
        corrupt_rank_(env_int(kCorruptRankEnv)),
        stall_rank_(env_int(kStallRankEnv)) {}

  Result<BenchRow> run_size(std::uint64_t bytes, std::uint64_t seed) {
    BenchRow row;
    row.size_bytes = bytes;
    row.count = coll_.count(bytes, element_size(opts_.datatype));
    row.type = std::string(to_string(opts_.datatype));
    row.redop = std::string(coll_.redop());
    row.root = coll_.root();
    VIGIL_TRY(row.out_of_place, measure(bytes, row.count, /*in_place=*/false, seed));
    VIGIL_TRY(row.in_place, measure(bytes, row.count, /*in_place=*/true, seed + 1));
    return row;
  }

 private:
  void set_phase(std::uint64_t bytes, bool in_place, const char* what) {
    std::lock_guard lock(state_.mu);
    state_.phase =
        "size " + std::to_string(bytes) + " B " + (in_place ? "in-place " : "out-of-place ") + what;
  }

  VoidResult fill(void* buf, std::uint64_t count, std::uint64_t seed) {
    for (std::uint64_t first = 0; first < count; first += kChunk) {
      const std::uint64_t n = std::min<std::uint64_t>(kChunk, count - first);
      host_.resize(n);
      coll_.input(info_.rank, seed, first, host_);
      NB_TRY_VOID(backend_.upload(buf, first, host_.data(), n, opts_.datatype));
    }
    return ok_result();
  }

  Result<std::int64_t> compare(const void* buf, std::uint64_t count, std::uint64_t seed) {
    std::int64_t wrong = 0;
    for (std::uint64_t first = 0; first < count; first += kChunk) {
      const std::uint64_t n = std::min<std::uint64_t>(kChunk, count - first);
      host_.resize(n);
      want_.resize(n);
      NB_TRY_VOID(backend_.download(host_.data(), buf, first, n, opts_.datatype));
      // Test-only hook: pretend the fabric flipped a value on this rank.
      if (first == 0 && corrupt_rank_ && *corrupt_rank_ == info_.rank) host_[0] += 1.0f;
      coll_.expected(info_.ranks, seed, first, want_);
      for (std::uint64_t i = 0; i < n; ++i) wrong += host_[i] != want_[i] ? 1 : 0;
    }
    return wrong;
  }

  Result<BenchPoint> measure(std::uint64_t bytes, std::uint64_t count, bool in_place,
                             std::uint64_t seed) {
    void* recv = backend_.recv_buffer();
    void* send = in_place ? recv : backend_.send_buffer();
    const DataType type = opts_.datatype;

    set_phase(bytes, in_place, "warm-up");
    NB_TRY_VOID(fill(send, count, seed));
    for (int i = 0; i < opts_.warmup_iters; ++i)
      NB_TRY_VOID(coll_.run(backend_, send, recv, count, type));
    NB_TRY_VOID(backend_.wait());
    MPI_Barrier(MPI_COMM_WORLD);

    set_phase(bytes, in_place, "timed iterations");
    if (stall_rank_ && *stall_rank_ == info_.rank) {
      // Test-only hook: behave like a rank stuck on a dead link. Only the watchdog ends this.
      while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < opts_.iters; ++i) NB_TRY_VOID(coll_.run(backend_, send, recv, count, type));
    NB_TRY_VOID(backend_.wait());
    const auto t1 = std::chrono::steady_clock::now();
    const double local_us =
        std::chrono::duration<double, std::micro>(t1 - t0).count() / opts_.iters;

    std::int64_t wrong = 0;
    if (opts_.check && count > 0) {
      set_phase(bytes, in_place, "data check");
      NB_TRY_VOID(fill(send, count, seed));
      NB_TRY_VOID(coll_.run(backend_, send, recv, count, type));
      NB_TRY_VOID(backend_.wait());
      VIGIL_TRY(wrong, compare(recv, count, seed));
    }

    // Combine across ranks: the slowest rank's time is the row's time.
    double t_max = 0, t_min = 0, t_sum = 0;
    std::int64_t wrong_sum = 0;
    MPI_Allreduce(&local_us, &t_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&local_us, &t_min, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&local_us, &t_sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&wrong, &wrong_sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);

    BenchPoint p;
    p.time_us = t_max;
    p.time_us_min = t_min;
    p.time_us_avg = t_sum / info_.ranks;
    p.algbw_gb_s = algbw_gb_s(bytes, t_max * 1e-6);
    p.busbw_gb_s = p.algbw_gb_s * coll_.busbw_factor(info_.ranks);
    if (opts_.check) p.wrong = wrong_sum;
    return p;
  }

  const BenchOptions& opts_;
  CommBackend& backend_;
  const Collective& coll_;
  const RankInfo& info_;
  SharedState& state_;
  std::optional<int> corrupt_rank_;
  std::optional<int> stall_rank_;
  std::vector<float> host_;
  std::vector<float> want_;
};

// Runs on the watchdog thread. Rank 0 reports (table line + JSON) first; the others give it a
// moment, then everyone aborts. MPI_Abort makes mpirun end every rank with kExitTimeout.
[[noreturn]] void on_timeout(const BenchOptions& opts, const RankInfo& info, CommBackend& backend,
                             SharedState& state, std::ostream* table,
                             std::chrono::steady_clock::time_point start) {
  g_timed_out = true;
  backend.request_abort();
  std::string phase;
  const std::string msg = "timeout after " + seconds_text(opts.timeout_s) + " s";
  if (info.rank == 0) {
    std::lock_guard lock(state.mu);
    phase = state.phase;
    BenchRun run = state.run;
    run.outcome = Outcome::kTimeout;
    run.message = msg + " (" + phase + ")";
    run.duration_s = seconds_since(start);
    if (table) {
      *table << "#\n# Result : timeout (" << run.message << ")\n#" << std::endl;
    }
    write_json_file(opts.json_path, run);
  } else {
    {
      std::lock_guard lock(state.mu);
      phase = state.phase;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  // Give an NCCL main thread polling in wait() a moment to ncclCommAbort.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::fprintf(stderr,
               "vigil-allreduce: rank %d (%s): %s while in %s; aborting the run (exit code %d)\n",
               info.rank, info.hostname.c_str(), msg.c_str(), phase.c_str(), kExitTimeout);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, kExitTimeout);
  std::_Exit(kExitTimeout);  // not reached
}

// Every rank learns whether all ranks succeeded; rank 0 gets every failure message.
std::string agree(const VoidResult& r, const RankInfo& info) {
  std::string mine = r.ok() ? std::string()
                            : "rank " + std::to_string(info.rank) + " (" + info.hostname +
                                  "): " + r.error().to_string();
  if (!mine.empty()) std::fprintf(stderr, "vigil-allreduce: %s\n", mine.c_str());
  auto all = allgather_strings(mine);
  // The first failure in full; the others are on their ranks' stderr (often the same text).
  std::string first;
  int others = 0;
  for (const auto& m : all) {
    if (m.empty()) continue;
    if (first.empty())
      first = m;
    else
      ++others;
  }
  if (others > 0) first += " (and " + std::to_string(others) + " more rank(s) failed; see stderr)";
  return first;
}

// NCCL's TUNING log of this process (options.h tuning_log_env): written in a private directory
// (mkdtemp, 0700; nothing predictable in /tmp), opened and unlinked as soon as NCCL has created
// it, so a run that ends in MPI_Abort or its watchdog leaves nothing behind; read at the end.
class TuningLog {
 public:
  // Sets NCCL's debug variables unless the job set NCCL_DEBUG; false when nothing will be logged.
  bool start() {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/vigil-allreduce-XXXXXX";
    if (!::mkdtemp(tmpl.data())) return false;
    dir_ = tmpl;
    path_ = dir_ + "/nccl-tuning.log";
    const auto env = tuning_log_env(path_);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    if (env.empty()) discard();
    return !env.empty();
  }
  // After NCCL's init (it opens the file then): keep a descriptor, remove the names.
  void detach() {
    if (path_.empty()) return;
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    discard();
  }
  void discard() {
    if (!path_.empty()) ::unlink(path_.c_str());
    if (!dir_.empty()) ::rmdir(dir_.c_str());
    path_.clear();
    dir_.clear();
  }
  // Everything NCCL wrote (line-buffered: complete once its communicator is destroyed).
  std::string read_all() {
    if (fd_ < 0) return {};
    std::string text;
    char buf[65536];
    off_t at = 0;
    for (ssize_t n; (n = ::pread(fd_, buf, sizeof buf, at)) > 0; at += n) text.append(buf, n);
    return text;
  }
  ~TuningLog() {
    discard();
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  std::string dir_, path_;
  int fd_ = -1;
};

// What the run is, before it starts: tool, collective, ranks, hosts and the options in force.
void describe_run(const BenchOptions& opts, const RankInfo& info,
                  const std::vector<std::string>& hostnames, const Collective& coll,
                  BenchRun& run) {
  run.tool = "vigil-allreduce";
  run.tool_version = VIGIL_VERSION;
  run.collective = std::string(coll.name());
  run.backend = std::string(to_string(opts.backend));
  run.transport = std::string(to_string(opts.transport));
  run.ranks = info.ranks;
  run.nodes = static_cast<int>(std::set<std::string>(hostnames.begin(), hostnames.end()).size());
  run.hostnames = hostnames;
  run.mpi_version = mpi_version();
  run.warmup_iters = opts.warmup_iters;
  run.iters = opts.iters;
  run.check = opts.check;
  run.min_busbw_gb_s = opts.min_busbw_gb_s;
  run.timeout_s = opts.timeout_s;
  run.start_time = rfc3339_now();
}

// NCCL reads its environment once, at its first call: remove inherited tuning and set the
// transport mode before any (options.h). NCCL's choice of algorithm and protocol, which the run
// records, is only in its TUNING log: each process logs to its own file, read after the sweep
// (options.h tuning_log_env / parse_tuning_log). True when that log is written.
bool prepare_nccl_env(Transport transport, BenchRun& run, TuningLog& tuning_log) {
  run.nccl_env_removed = remove_tuning_env();
  for (const auto& [k, v] : transport_env(transport)) setenv(k.c_str(), v.c_str(), 1);
  run.nccl_conf_tuning = conf_tuning_in_effect();
  return tuning_log.start();
}

void set_phase(SharedState& state, const char* phase) {
  std::lock_guard lock(state.mu);
  state.phase = phase;
}

// A rank-local failure mid-run leaves the peers blocked in the next collective: report and end
// the whole job. After a timeout, the watchdog does that.
Error abort_run(const Error& error, const BenchOptions& opts, const RankInfo& info,
                SharedState& state, std::ostream* out) {
  if (g_timed_out) {
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));  // watchdog aborts
  }
  const std::string msg =
      "rank " + std::to_string(info.rank) + " (" + info.hostname + "): " + error.to_string();
  std::fprintf(stderr, "vigil-allreduce: %s; aborting the run (exit code %d)\n", msg.c_str(),
               kExitRuntimeError);
  if (info.rank == 0) {
    std::lock_guard lock(state.mu);
    state.run.outcome = Outcome::kRuntimeError;
    state.run.message = msg;
    if (out) *out << "#\n# Result : runtime_error (" << msg << ")\n#" << std::endl;
    write_json_file(opts.json_path, state.run);
  }
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, kExitRuntimeError);
  return Error{msg, "run_allreduce"};
}

// NCCL's algorithm and protocol per size and the transports it used, from its TUNING log.
void record_nccl_choices(const std::string& log, SharedState& state) {
  std::vector<AlgoChoice> choices = parse_tuning_log(log);
  TransportUse transport = parse_transport_log(log);
  std::lock_guard lock(state.mu);
  state.run.nccl_algorithms = std::move(choices);
  if (!transport.empty()) state.run.nccl_transport = std::move(transport);
}

// The sweep's totals and its outcome: wrong values first, then the busbw minimum.
void conclude(const BenchOptions& opts, std::chrono::steady_clock::time_point start,
              BenchRun& run) {
  run.out_of_bounds = run.total_wrong();
  run.out_of_bounds_ok = *run.out_of_bounds == 0;
  run.avg_busbw_gb_s = run.mean_busbw();
  run.duration_s = seconds_since(start);
  char buf[160];
  if (*run.out_of_bounds > 0) {
    run.outcome = Outcome::kWrongResults;
    run.message = std::to_string(*run.out_of_bounds) + " wrong values in the data check";
  } else if (opts.min_busbw_gb_s && run.summary_busbw() < *opts.min_busbw_gb_s) {
    run.outcome = Outcome::kBelowMinBusbw;
    std::snprintf(buf, sizeof buf, "busbw %.2f < minimum %.2f GB/s", run.summary_busbw(),
                  *opts.min_busbw_gb_s);
    run.message = buf;
  } else {
    run.outcome = Outcome::kOk;
    std::snprintf(buf, sizeof buf, "busbw %.2f GB/s", run.summary_busbw());
    run.message = buf;
  }
}

}  // namespace

Result<BenchRun> run_allreduce(const BenchOptions& opts, std::ostream* table) {
  const auto start = std::chrono::steady_clock::now();
  const RankInfo info = rank_info();
  const auto hostnames = allgather_strings(info.hostname);

  SharedState state;
  BenchRun& run = state.run;
  auto coll = make_all_reduce();
  describe_run(opts, info, hostnames, *coll, run);
  std::ostream* out = info.rank == 0 ? table : nullptr;

  TuningLog tuning_log;
  const bool logging_tuning =
      opts.backend == Backend::kNccl && prepare_nccl_env(opts.transport, run, tuning_log);
  run.nccl_env = nccl_environment();

  std::unique_ptr<CommBackend> backend =
      opts.backend == Backend::kNccl ? make_nccl_backend() : make_host_backend();
  if (!backend) {
    run.outcome = Outcome::kSetupError;
    run.message =
        "this vigil-allreduce was built without CUDA/NCCL; use --backend host, or "
        "rebuild with -DVIGIL_WITH_CUDA=ON";
    return run;
  }

  std::optional<Watchdog> watchdog;
  if (opts.timeout_s > 0)
    watchdog.emplace(opts.timeout_s,
                     [&, start] { on_timeout(opts, info, *backend, state, out, start); });

  const auto sizes = opts.size_list();
  auto finish_setup_error = [&](std::string msg) {
    if (watchdog) watchdog->stop();
    backend->finalize();
    tuning_log.discard();
    std::lock_guard lock(state.mu);
    run.outcome = Outcome::kSetupError;
    run.message = std::move(msg);
    run.duration_s = seconds_since(start);
    return run;
  };
  set_phase(state, "backend setup");
  if (auto e = agree(backend->init_local(info, sizes.back()), info); !e.empty())
    return finish_setup_error(e);
  set_phase(state, "communicator setup");
  if (auto e = agree(backend->init_comm(info), info); !e.empty()) return finish_setup_error(e);
  tuning_log.detach();
  run.nccl_version = backend->nccl_version();

  const auto device_lines = allgather_strings(backend->device_line(info));
  if (out) {
    *out << format_header(run, device_lines, sizes.front(), sizes.back(),
                          opts.sizes.empty() ? opts.step_factor : 0)
         << std::flush;
  }

  Harness harness(opts, *backend, *coll, info, state);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    auto row = harness.run_size(sizes[i], 2 * i);
    if (!row.ok()) return abort_run(row.error(), opts, info, state, out);
    std::lock_guard lock(state.mu);
    run.rows.push_back(*row);
    if (out) *out << format_row(*row) << std::flush;
  }
  if (watchdog) watchdog->stop();
  backend->finalize();
  if (logging_tuning) record_nccl_choices(tuning_log.read_all(), state);

  std::lock_guard lock(state.mu);
  conclude(opts, start, run);
  return run;
}

int allreduce_main(const BenchOptions& opts) {
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "vigil-allreduce: MPI_Init_thread failed; start it with mpirun/srun\n");
    return kExitSetupError;
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (std::string err = opts.validate(); !err.empty()) {
    if (rank == 0) std::fprintf(stderr, "vigil-allreduce: %s\n", err.c_str());
    MPI_Finalize();
    return kExitSetupError;
  }
  if (provided < MPI_THREAD_MULTIPLE && opts.timeout_s > 0 && rank == 0)
    std::fprintf(stderr,
                 "vigil-allreduce: warning: MPI gave thread level %d, not MPI_THREAD_MULTIPLE; "
                 "the --timeout watchdog may not be able to abort cleanly\n",
                 provided);
  auto res = run_allreduce(opts, opts.print_table ? &std::cout : nullptr);
  if (!res.ok()) {  // only MPI-level failures get here
    std::fprintf(stderr, "vigil-allreduce: rank %d: %s\n", rank, res.error().to_string().c_str());
    MPI_Abort(MPI_COMM_WORLD, kExitRuntimeError);
    return kExitRuntimeError;
  }
  const BenchRun& run = *res;
  if (rank == 0) {
    if (run.outcome == Outcome::kSetupError) {
      std::fprintf(stderr, "vigil-allreduce: setup failed: %s\n", run.message.c_str());
      if (opts.print_table) std::cout << "#\n# Result : setup_error (" << run.message << ")\n#\n";
    } else if (opts.print_table) {
      std::cout << format_footer(run);
    }
    std::cout << std::flush;
    if (!write_json_file(opts.json_path, run))
      std::fprintf(stderr, "vigil-allreduce: cannot write --json %s\n", opts.json_path.c_str());
  }
  MPI_Finalize();
  return exit_code_for(run.outcome);
}

}  // namespace vigil::ncclbench
