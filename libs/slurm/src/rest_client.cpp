// RestSlurmApi / RestJobReader: SlurmApi and SlurmJobReader over slurmrestd (v0.0.40 and newer).
// The same rules as the libslurm client (node_update.h): one request per (action, reason) over a
// whole hostlist, unknown names split off and named, the same node-state mapping.
#include <slurm/slurm_errno.h>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hostlist.h"
#include "node_update.h"
#include "rest_session.h"
#include "vigil/slurm/slurm_rest.h"

namespace vigil::slurm {
namespace {

using nlohmann::json;

// v0.0.40+ give states as one array: the base state and its flags ("IDLE", "DRAIN").
const std::set<std::string>& base_states() {
  static const std::set<std::string> names = {"UNKNOWN", "DOWN",  "IDLE",  "ALLOCATED",
                                              "ERROR",   "MIXED", "FUTURE"};
  return names;
}

std::string str(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::vector<std::string> strings(const json& j, const char* key) {
  std::vector<std::string> out;
  const auto it = j.find(key);
  if (it == j.end()) return out;
  if (it->is_string()) {
    out.push_back(it->get<std::string>());
  } else if (it->is_array()) {
    for (const auto& e : *it)
      if (e.is_string()) out.push_back(e.get<std::string>());
  }
  return out;
}

// A time stamp: a plain number up to v0.0.39, {"set": bool, "number": N} from v0.0.40
// (Slurm's *_no_val structs); 0 when absent or unset.
int64_t time_stamp(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_object() && it->value("set", false)) {
    const auto num = it->find("number");
    if (num != it->end() && num->is_number_integer()) return num->get<int64_t>();
  }
  return 0;
}

SlurmNodeInfo to_node_info(const json& n) {
  SlurmNodeInfo info;
  info.name = str(n, "name");
  info.state = "INVALID";
  for (const std::string& s : strings(n, "state")) {
    if (base_states().count(s)) {
      info.state = s;
      info.down = s == "DOWN";
    } else if (s == "DRAIN") {
      info.drain = true;
    } else if (s == "FAIL") {
      info.fail = true;
    } else if (s == "NOT_RESPONDING") {
      info.not_responding = true;
    } else if (s == "MAINTENANCE" || s == "MAINT") {
      info.maint = true;
    } else if (s == "RESERVED") {
      info.reserved = true;
    } else if (s == "COMPLETING") {
      info.completing = true;
    } else if (s == "REBOOT_REQUESTED" || s == "REBOOT_ISSUED") {
      info.reboot_pending = true;
    }
  }
  info.reason = str(n, "reason");
  info.reason_time = time_stamp(n, "reason_changed_at");
  info.boot_time = time_stamp(n, "boot_time");
  info.partitions = strings(n, "partitions");
  info.address = str(n, "address");
  info.hostname = str(n, "hostname");
  info.gres = str(n, "gres");
  // An array of strings from v0.0.39 (Slurm's openapi spec: "active_features": {"type":
  // "array"}), one comma-separated string before it.
  for (const auto& f : strings(n, "active_features"))
    for (auto& one : split_feature_list(f)) info.features.push_back(std::move(one));
  return info;
}

// Job comments: a string up to v0.0.40's slurmctld job info, {"job": ...} where an object.
std::string job_comment(const json& j) {
  const auto it = j.find("comment");
  if (it == j.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) return str(*it, "job");
  return "";
}

// v0.0.40+ job_state is an array: the base state first, then flags such as COMPLETING.
SlurmJobInfo to_job_info(const json& j) {
  SlurmJobInfo info;
  if (const auto id = j.find("job_id"); id != j.end() && id->is_number_unsigned())
    info.job_id = id->get<uint32_t>();
  info.name = str(j, "name");
  info.comment = job_comment(j);
  const std::vector<std::string> state = strings(j, "job_state");
  info.state = state.empty() ? "UNKNOWN" : state.front();
  bool completing = false;
  for (const std::string& s : state) completing = completing || s == "COMPLETING";
  info.active =
      info.state == "PENDING" || info.state == "RUNNING" || info.state == "SUSPENDED" || completing;
  // As in the libslurm reader: a pending job holds what it asked for.
  std::string nodes = str(j, "nodes");
  if (info.state == "PENDING" || nodes.empty()) nodes = str(j, "required_nodes");
  info.nodes = expand_hostlist(nodes.c_str());
  return info;
}

Error reply_error(const RestReply& reply, const std::string& what) {
  std::string hint;
  if (reply.has_error_number(ESLURM_USER_ID_MISSING) ||
      reply.has_error_number(ESLURM_ACCESS_DENIED)) {
    hint = " (the token's user must be root or SlurmUser to change node states)";
  }
  return Error{"slurmrestd: " + reply.describe() + hint, what};
}

class RestSlurmApi final : public SlurmApi {
 public:
  explicit RestSlurmApi(std::shared_ptr<RestSession> session) : session_(std::move(session)) {}

  Result<std::vector<SlurmNodeInfo>> load_nodes() override { return read_table(); }

  // A 10,000-node `GET nodes` is ~22 MB of JSON and 9-12 s of slurmrestd's time
  // (docs/slurm-compat.md), so a few nodes are read one by one with `GET node/<name>` (one node
  // per request: slurmrestd hands the name to slurm_load_node_single, which takes no hostlist).
  // Which is cheaper is decided from this object's own measured times: per node while the nodes
  // left times the mean time of one node read stays below the last whole-table read. Anything
  // but a clean one-node reply (an unknown name, an error) falls back to the whole table, which
  // is authoritative for both. `GET nodes?update_time=` cannot narrow on 24.11.5: when nothing
  // changed slurmrestd sends no reply, when nodes changed but partitions did not it answers
  // HTTP 500 "Unable to query partitions" (seen on the real daemon; docs/slurm-compat.md).
  Result<std::vector<SlurmNodeInfo>> load_nodes_named(
      const std::vector<std::string>& nodes) override {
    if (auto names = validate_names(nodes, "GET node"); !names.ok()) return names.error();
    const std::set<std::string> wanted(nodes.begin(), nodes.end());
    std::vector<SlurmNodeInfo> out;
    size_t left = wanted.size();
    for (const std::string& name : wanted) {
      if (!per_node_is_cheaper(left)) break;
      const auto started = std::chrono::steady_clock::now();
      auto node = read_one(name);
      if (!node) break;
      record_node_read(std::chrono::steady_clock::now() - started);
      out.push_back(std::move(*node));
      --left;
    }
    if (left == 0) {
      mark_holds(out, reservation_names());
      return out;
    }
    VIGIL_TRY(auto all, read_table());
    std::erase_if(all, [&](const SlurmNodeInfo& n) { return !wanted.count(n.name); });
    return all;
  }

  VoidResult drain(const std::vector<std::string>& nodes, const std::string& reason) override {
    if (nodes.empty()) return ok_result();
    if (auto names = validate_names(nodes, "drain"); !names.ok()) return names.error();
    if (auto text = validate_reason(reason); !text.ok()) return text.error();
    return update(nodes, json{{"state", json::array({"DRAIN"})}, {"reason", reason}}, "DRAIN");
  }

  VoidResult undrain(const std::vector<std::string>& nodes) override {
    if (nodes.empty()) return ok_result();
    if (auto names = validate_names(nodes, "undrain"); !names.ok()) return names.error();
    return update(nodes, json{{"state", json::array({"UNDRAIN"})}}, "UNDRAIN");
  }

 private:
  using Duration = std::chrono::steady_clock::duration;

  // Per node while `left` one-node reads (at their mean time so far) cost less than the last
  // whole-table read. Before any table read there is nothing to compare with: the table.
  bool per_node_is_cheaper(size_t left) {
    std::lock_guard lk(mu_);
    if (table_read_ == Duration::zero()) return false;
    if (node_reads_ == 0) return true;
    return node_read_total_ / node_reads_ * static_cast<int64_t>(left) < table_read_;
  }

  void record_node_read(Duration d) {
    std::lock_guard lk(mu_);
    node_read_total_ += d;
    ++node_reads_;
  }

  Result<std::vector<SlurmNodeInfo>> read_table() {
    const auto started = std::chrono::steady_clock::now();
    VIGIL_TRY(RestReply reply, session_->get("nodes"));
    if (!reply.ok()) return reply_error(reply, "GET nodes");
    std::vector<SlurmNodeInfo> out;
    const auto it = reply.body.find("nodes");
    if (it == reply.body.end() || !it->is_array()) {
      return Error{"reply has no \"nodes\" array", "slurmrestd GET nodes"};
    }
    out.reserve(it->size());
    for (const auto& n : *it) {
      if (!n.is_object() || str(n, "name").empty()) continue;
      out.push_back(to_node_info(n));
    }
    mark_holds(out, reservation_names());
    std::lock_guard lk(mu_);
    table_read_ = std::chrono::steady_clock::now() - started;
    return out;
  }

  // `GET reservations`: their names, for Vigil's holds (slurm_api.h vigil_hold); unreadable:
  // none. Every API version since v0.0.38 answers {"reservations": [{"name": ...}, ...]}.
  std::vector<std::string> reservation_names() {
    std::vector<std::string> names;
    auto reply = session_->get("reservations");
    if (!reply.ok() || !reply.value().ok()) return names;
    const auto it = reply.value().body.find("reservations");
    if (it == reply.value().body.end() || !it->is_array()) return names;
    for (const auto& r : *it)
      if (r.is_object() && !str(r, "name").empty()) names.push_back(str(r, "name"));
    return names;
  }

  // One node, or nullopt when the reply is anything but that node: the caller then reads the
  // whole table (24.11 answers an unknown name with HTTP 200, no node and error_number 0).
  std::optional<SlurmNodeInfo> read_one(const std::string& name) {
    auto reply = session_->get("node/" + url_escape(name));
    if (!reply.ok() || !reply.value().ok()) return std::nullopt;
    const auto it = reply.value().body.find("nodes");
    if (it == reply.value().body.end() || !it->is_array() || it->size() != 1) return std::nullopt;
    const json& n = it->front();
    if (!n.is_object() || str(n, "name") != name) return std::nullopt;
    return to_node_info(n);
  }

  // POST node/<hostlist>: slurmrestd hands the name to slurm_update_node(), which takes a
  // hostlist, so a batch is one request (the same one RPC as the libslurm backend).
  Result<RestReply> send_update(const std::string& hostlist, const json& body) {
    return session_->post("node/" + url_escape(hostlist), body);
  }

  VoidResult update(const std::vector<std::string>& nodes, const json& body,
                    const char* state_name) {
    const std::string hostlist = to_hostlist(nodes);
    const std::string where = std::string("slurmrestd POST node/") +
                              abbreviate(hostlist, nodes.size()) + " (state=" + state_name + ")";
    if (hostlist.empty()) return Error{"could not build a hostlist", where};
    VIGIL_TRY(RestReply reply, send_update(hostlist, body));
    if (reply.ok()) return ok_result();
    if (!reply.has_error_number(ESLURM_INVALID_NODE_NAME) || nodes.size() < 2) {
      return reply_error(reply, where);
    }
    VIGIL_TRY(auto all, load_nodes());
    KnownSplit split = split_known(nodes, all);
    if (!split.known.empty()) {
      const std::string known = to_hostlist(split.known);
      VIGIL_TRY(RestReply again, send_update(known, body));
      if (!again.ok()) {
        Error e = reply_error(again, where);
        e.message += "; unknown node(s) " + to_hostlist(split.unknown);
        return e;
      }
    }
    return unknown_nodes_error(split, to_hostlist(split.unknown),
                               std::string("slurmrestd POST node (state=") + state_name + ")");
  }

  // Hostlists carry '[', ']' and ','; percent-encode everything but unreserved characters.
  static std::string url_escape(const std::string& s) {
    static const char* kHex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
      if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
        out += static_cast<char>(c);
      } else {
        out += '%';
        out += kHex[c >> 4];
        out += kHex[c & 15];
      }
    }
    return out;
  }

  std::shared_ptr<RestSession> session_;
  std::mutex mu_;          // guards the timings below
  Duration table_read_{};  // the last whole-table read; zero: none yet
  Duration node_read_total_{};
  int64_t node_reads_ = 0;
};

class RestJobReader final : public SlurmJobReader {
 public:
  explicit RestJobReader(std::shared_ptr<RestSession> session) : session_(std::move(session)) {}

  Result<std::vector<SlurmJobInfo>> load_jobs() override {
    VIGIL_TRY(RestReply reply, session_->get("jobs"));
    if (!reply.ok()) return reply_error(reply, "GET jobs");
    const auto it = reply.body.find("jobs");
    if (it == reply.body.end() || !it->is_array()) {
      return Error{"reply has no \"jobs\" array", "slurmrestd GET jobs"};
    }
    std::vector<SlurmJobInfo> out;
    out.reserve(it->size());
    for (const auto& j : *it)
      if (j.is_object()) out.push_back(to_job_info(j));
    return out;
  }

 private:
  std::shared_ptr<RestSession> session_;
};

}  // namespace

Result<std::unique_ptr<SlurmApi>> make_rest_api(const RestSettings& settings) {
  VIGIL_TRY(auto session, RestSession::create(settings));
  return std::unique_ptr<SlurmApi>(std::make_unique<RestSlurmApi>(std::move(session)));
}

Result<std::unique_ptr<SlurmJobReader>> make_rest_job_reader(const RestSettings& settings) {
  VIGIL_TRY(auto session, RestSession::create(settings));
  return std::unique_ptr<SlurmJobReader>(std::make_unique<RestJobReader>(std::move(session)));
}

}  // namespace vigil::slurm
