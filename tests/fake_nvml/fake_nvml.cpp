// Fake libnvidia-ml.so.1: answers the NVML calls Vigil makes from a JSON fixture, so the real
// dlopen/dlsym path of the checks runs without a GPU. The fixture (env VIGIL_FAKE_NVML_FIXTURE)
// is read again on every first nvmlInit_v2, so a test may rewrite it between check runs.
// Any fixture problem makes nvmlInit_v2 fail with NVML_ERROR_UNKNOWN; nvmlErrorString then
// explains it. Format: docs/fake-nvml.md.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "nvml_api.h"

#define FAKE_NVML_EXPORT extern "C" __attribute__((visibility("default")))

using nlohmann::json;

struct nvmlDevice_st {
  std::string name;
  std::optional<std::string> serial, uuid, vbios;  // absent: NVML_ERROR_NOT_SUPPORTED
  std::string bus_id;
  unsigned domain = 0, bus = 0, device = 0;
  unsigned pci_device_id = 0;
  unsigned pci_subsystem_id = 0;
  bool lost = false;
  // The GPU's device node ("device" in the fixture, else VIGIL_FAKE_GPU_DEV_DIR/nvidia<index>;
  // empty: none, every caller may talk to it). See device_access() below.
  std::string device_node;
  // [error type: corrected, uncorrected][counter: volatile, aggregate]
  std::array<std::array<std::optional<unsigned long long>, 2>, 2> ecc;
  struct Remap {
    unsigned correctable = 0, uncorrectable = 0, pending = 0, failure = 0;
  };
  std::optional<Remap> remapped_rows;
  std::optional<bool> retired_pages_pending;
  std::optional<unsigned long long> clocks_event_reasons;
  std::optional<unsigned> pcie_current_gen, pcie_max_gen, pcie_current_width, pcie_max_width;
  std::optional<unsigned> pcie_replay_counter;
  struct Link {
    bool up = true;
    std::array<unsigned long long, 4> counters{};    // replay, recovery, crc flit, crc data
    nvmlReturn_t counter_error = NVML_SUCCESS;       // what nvmlDeviceGetNvLinkErrorCounter answers
    std::map<unsigned, unsigned long long> nvlink5;  // NVLink5 field id -> its value (scopeId)
  };
  std::vector<Link> nvlinks;  // empty: NVLink not supported
  std::optional<unsigned> temperature_c, temperature_slowdown_c, temperature_shutdown_c,
      temperature_gpu_max_c;
  bool temperature_v = false;  // nvmlDeviceGetTemperatureV answers (else: not supported)
  std::optional<unsigned> power_mw;
  std::optional<unsigned> sm_clock_mhz;  // nvmlDeviceGetClockInfo(NVML_CLOCK_SM)
  struct Process {
    unsigned pid = 0;
    unsigned long long used_memory_bytes = kNvmlValueNotAvailable;
    std::optional<std::string> name;  // answers nvmlSystemGetProcessName
  };
  std::optional<std::vector<Process>> processes;  // compute processes
  std::optional<nvmlUtilization_t> utilization;
  std::optional<bool> mig;  // nvmlDeviceGetMigMode current (= pending) mode
  struct Fabric {
    unsigned char state = kNvmlGpuFabricStateCompleted;
    nvmlReturn_t status = NVML_SUCCESS;
    unsigned clique_id = 0;
    unsigned health_mask = 0;
    unsigned char health_summary = kNvmlGpuFabricHealthSummaryNotSupported;
    // Newest struct version the "driver" knows: 3 (CUDA 13 era), 2 (R550/R560), or 1: only the
    // unversioned nvmlDeviceGetGpuFabricInfo (R535), the versioned call answers
    // NVML_ERROR_FUNCTION_NOT_FOUND as if the symbol were missing.
    unsigned version = 3;
    // Answers this many reads as above, then COMPLETED, status 0, health mask healthy: a Fabric
    // Manager finishing its work while the check waits. 0: never changes.
    unsigned settles_after_reads = 0;
    unsigned reads = 0;
    void read() {
      if (settles_after_reads == 0 || ++reads <= settles_after_reads) return;
      state = kNvmlGpuFabricStateCompleted;
      status = NVML_SUCCESS;
      health_mask = 0;
    }
  };
  std::optional<Fabric> fabric;             // absent: NVML_ERROR_NOT_SUPPORTED (no NVSwitch)
  std::optional<unsigned> recovery_action;  // NVML_FI_DEV_GET_GPU_RECOVERY_ACTION
  std::optional<unsigned> nvlink_link_count_field;  // what NVML_FI_DEV_NVLINK_LINK_COUNT answers
  int recovery_action_type = kNvmlValueTypeUnsignedInt;  // the nvmlValue_t member it arrives in
  std::map<std::string, int> errors;                     // entry point -> forced nvmlReturn_t
};

struct nvmlEventSet_st {
  std::map<const nvmlDevice_st*, unsigned long long> registered;  // device -> event mask
  size_t next_event = 0;  // index into the fixture's xid_events
};

namespace {

struct XidEvent {
  unsigned gpu = 0;
  unsigned long long xid = 0;
};

struct Fixture {
  std::string driver_version = "550.90.07";
  // Simulated cost of the real library: every device query sleeps call_latency_us, nvmlInit_v2
  // init_latency_ms; entry points in hang_calls never return (a wedged driver).
  unsigned call_latency_us = 0;
  unsigned init_latency_ms = 0;
  std::set<std::string> hang_calls;
  std::vector<nvmlDevice_st> gpus;
  std::vector<XidEvent> xid_events;
};

std::mutex g_mu;
int g_init_refs = 0;
std::unique_ptr<Fixture> g_fixture;
std::string g_problem;  // why the last nvmlInit_v2 failed, for nvmlErrorString

struct FixtureError {
  std::string what;
};

void check_keys(const json& j, std::initializer_list<const char*> allowed, const std::string& at) {
  if (!j.is_object()) throw FixtureError{at + ": must be an object"};
  for (const auto& [key, value] : j.items()) {
    if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; })) {
      throw FixtureError{at + ": unknown key \"" + key + "\""};
    }
  }
}

// A non-negative integer, as a JSON number or a "0x..." string.
unsigned long long to_u64(const json& j, const std::string& at) {
  if (j.is_number_unsigned()) return j.get<unsigned long long>();
  if (j.is_number_integer() && j.get<long long>() >= 0) return j.get<unsigned long long>();
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    char* end = nullptr;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
    if (!s.empty() && end && *end == '\0') return v;
  }
  throw FixtureError{at + ": expected a non-negative integer or \"0x...\" string"};
}

unsigned to_u32(const json& j, const std::string& at) {
  const unsigned long long v = to_u64(j, at);
  if (v > 0xFFFFFFFFULL) throw FixtureError{at + ": does not fit 32 bits"};
  return static_cast<unsigned>(v);
}

bool to_bool(const json& j, const std::string& at) {
  if (j.is_boolean()) return j.get<bool>();
  throw FixtureError{at + ": expected true or false"};
}

std::string to_string(const json& j, const std::string& at) {
  if (j.is_string()) return j.get<std::string>();
  throw FixtureError{at + ": expected a string"};
}

const std::map<std::string, int> kLinkCounters = {
    {"replay", 0}, {"recovery", 1}, {"crc_flit", 2}, {"crc_data", 3}};

// nvlink.nvlink5."<link>" keys -> the NVML field each answers (nvml_api.h).
const std::map<std::string, unsigned> kNvlink5Fields = {
    {"malformed", kNvmlFieldNvLinkMalformedPacketErrors},
    {"overrun", kNvmlFieldNvLinkBufferOverrunErrors},
    {"rx_errors", kNvmlFieldNvLinkRcvErrors},
    {"rx_remote", kNvmlFieldNvLinkRcvRemoteErrors},
    {"rx_general", kNvmlFieldNvLinkRcvGeneralErrors},
    {"integrity", kNvmlFieldNvLinkLocalLinkIntegrityErrors},
    {"recovery_ok", kNvmlFieldNvLinkRecoverySuccessfulEvents},
    {"recovery_failed", kNvmlFieldNvLinkRecoveryFailedEvents},
    {"effective_errors", kNvmlFieldNvLinkEffectiveErrors},
    {"effective_ber", kNvmlFieldNvLinkEffectiveBer},
    {"symbol_errors", kNvmlFieldNvLinkSymbolErrors}};

bool is_nvlink5_field(unsigned id) {
  for (const auto& [name, field] : kNvlink5Fields)
    if (field == id) return true;
  return false;
}

nvmlDevice_st parse_gpu(const json& j, const std::string& at) {
  check_keys(j,
             {"name",
              "serial",
              "uuid",
              "vbios",
              "pci",
              "lost",
              "device",
              "ecc",
              "remapped_rows",
              "retired_pages_pending",
              "clocks_event_reasons",
              "pcie",
              "nvlink",
              "temperature_c",
              "temperature_v",
              "temperature_slowdown_c",
              "temperature_shutdown_c",
              "temperature_gpu_max_c",
              "power_mw",
              "sm_clock_mhz",
              "processes",
              "utilization",
              "mig",
              "fabric",
              "recovery_action",
              "nvlink_link_count_field",
              "recovery_action_type",
              "errors"},
             at);
  nvmlDevice_st g;
  g.name = j.contains("name") ? to_string(j["name"], at + "/name") : "NVIDIA Fake GPU";
  if (j.contains("serial")) g.serial = to_string(j["serial"], at + "/serial");
  if (j.contains("uuid")) g.uuid = to_string(j["uuid"], at + "/uuid");
  if (j.contains("vbios")) g.vbios = to_string(j["vbios"], at + "/vbios");
  if (j.contains("pci")) {
    const json& p = j["pci"];
    check_keys(p, {"bus_id", "device_id", "subsystem_id"}, at + "/pci");
    if (p.contains("bus_id")) g.bus_id = to_string(p["bus_id"], at + "/pci/bus_id");
    if (p.contains("device_id")) g.pci_device_id = to_u32(p["device_id"], at + "/pci/device_id");
    if (p.contains("subsystem_id")) {
      g.pci_subsystem_id = to_u32(p["subsystem_id"], at + "/pci/subsystem_id");
    }
    // "00000000:18:00.0" -> domain 0, bus 0x18, device 0
    unsigned d = 0, b = 0, dev = 0, fn = 0;
    if (!g.bus_id.empty() && std::sscanf(g.bus_id.c_str(), "%x:%x:%x.%x", &d, &b, &dev, &fn) != 4) {
      throw FixtureError{at + "/pci/bus_id: expected \"DDDDDDDD:BB:DD.F\""};
    }
    g.domain = d;
    g.bus = b;
    g.device = dev;
  }
  if (j.contains("lost")) g.lost = to_bool(j["lost"], at + "/lost");
  if (j.contains("device")) g.device_node = to_string(j["device"], at + "/device");
  if (j.contains("ecc")) {
    const json& e = j["ecc"];
    const std::string a = at + "/ecc";
    check_keys(e,
               {"volatile_corrected", "volatile_uncorrected", "aggregate_corrected",
                "aggregate_uncorrected"},
               a);
    if (e.contains("volatile_corrected")) g.ecc[0][0] = to_u64(e["volatile_corrected"], a);
    if (e.contains("aggregate_corrected")) g.ecc[0][1] = to_u64(e["aggregate_corrected"], a);
    if (e.contains("volatile_uncorrected")) g.ecc[1][0] = to_u64(e["volatile_uncorrected"], a);
    if (e.contains("aggregate_uncorrected")) {
      g.ecc[1][1] = to_u64(e["aggregate_uncorrected"], a);
    }
  }
  if (j.contains("remapped_rows")) {
    const json& r = j["remapped_rows"];
    const std::string a = at + "/remapped_rows";
    check_keys(r, {"correctable", "uncorrectable", "pending", "failure"}, a);
    nvmlDevice_st::Remap rr;
    if (r.contains("correctable")) rr.correctable = to_u32(r["correctable"], a + "/correctable");
    if (r.contains("uncorrectable")) {
      rr.uncorrectable = to_u32(r["uncorrectable"], a + "/uncorrectable");
    }
    if (r.contains("pending")) rr.pending = to_u32(r["pending"], a + "/pending");
    if (r.contains("failure")) rr.failure = to_u32(r["failure"], a + "/failure");
    g.remapped_rows = rr;
  }
  if (j.contains("retired_pages_pending")) {
    g.retired_pages_pending = to_bool(j["retired_pages_pending"], at + "/retired_pages_pending");
  }
  if (j.contains("clocks_event_reasons")) {
    g.clocks_event_reasons = to_u64(j["clocks_event_reasons"], at + "/clocks_event_reasons");
  }
  if (j.contains("pcie")) {
    const json& p = j["pcie"];
    const std::string a = at + "/pcie";
    check_keys(p, {"current_gen", "max_gen", "current_width", "max_width", "replay_counter"}, a);
    if (p.contains("current_gen")) g.pcie_current_gen = to_u32(p["current_gen"], a);
    if (p.contains("max_gen")) g.pcie_max_gen = to_u32(p["max_gen"], a);
    if (p.contains("current_width")) g.pcie_current_width = to_u32(p["current_width"], a);
    if (p.contains("max_width")) g.pcie_max_width = to_u32(p["max_width"], a);
    if (p.contains("replay_counter")) g.pcie_replay_counter = to_u32(p["replay_counter"], a);
  }
  if (j.contains("nvlink")) {
    const json& n = j["nvlink"];
    const std::string a = at + "/nvlink";
    check_keys(
        n, {"link_count", "down", "counters", "counter_errors", "legacy_counters", "nvlink5"}, a);
    const unsigned count =
        n.contains("link_count") ? to_u32(n["link_count"], a + "/link_count") : 0;
    if (count > kNvmlNvLinkMaxLinks)
      throw FixtureError{a + "/link_count: at most " + std::to_string(kNvmlNvLinkMaxLinks) +
                         " (NVML_NVLINK_MAX_LINKS)"};
    g.nvlinks.resize(count);
    if (n.contains("down")) {
      if (!n["down"].is_array()) throw FixtureError{a + "/down: expected an array of links"};
      for (const json& l : n["down"]) {
        const unsigned link = to_u32(l, a + "/down");
        if (link >= count)
          throw FixtureError{a + "/down: link " + std::to_string(link) + " >= link_count"};
        g.nvlinks[link].up = false;
      }
    }
    if (n.contains("counter_errors")) {
      const json& e = n["counter_errors"];
      if (!e.is_object())
        throw FixtureError{a + "/counter_errors: expected an object keyed by link"};
      for (const auto& [link_s, code] : e.items()) {
        const std::string ea = a + "/counter_errors/" + link_s;
        const unsigned link = to_u32(json(link_s), ea);
        if (link >= count) throw FixtureError{ea + ": link >= link_count"};
        g.nvlinks[link].counter_error = static_cast<nvmlReturn_t>(to_u32(code, ea));
      }
    }
    // A Blackwell driver: nvmlDeviceGetNvLinkErrorCounter answers NOT_SUPPORTED on every link
    // ("unsupported for Blackwell+", nvml.h), the NVLink5 fields answer instead.
    if (n.contains("legacy_counters") && !to_bool(n["legacy_counters"], a + "/legacy_counters"))
      for (auto& l : g.nvlinks) l.counter_error = NVML_ERROR_NOT_SUPPORTED;
    if (n.contains("nvlink5")) {
      const json& f = n["nvlink5"];
      if (!f.is_object()) throw FixtureError{a + "/nvlink5: expected an object keyed by link"};
      for (const auto& [link_s, fields] : f.items()) {
        const std::string fa = a + "/nvlink5/" + link_s;
        const unsigned link = to_u32(json(link_s), fa);
        if (link >= count) throw FixtureError{fa + ": link >= link_count"};
        if (!fields.is_object()) throw FixtureError{fa + ": expected an object"};
        for (const auto& [name, value] : fields.items()) {
          const auto field = kNvlink5Fields.find(name);
          if (field == kNvlink5Fields.end()) throw FixtureError{fa + "/" + name + ": unknown key"};
          g.nvlinks[link].nvlink5[field->second] = to_u64(value, fa + "/" + name);
        }
      }
    }
    if (n.contains("counters")) {
      const json& c = n["counters"];
      if (!c.is_object()) throw FixtureError{a + "/counters: expected an object keyed by link"};
      for (const auto& [link_s, counters] : c.items()) {
        const std::string ca = a + "/counters/" + link_s;
        const unsigned link = to_u32(json(link_s), ca);
        if (link >= count) throw FixtureError{ca + ": link >= link_count"};
        check_keys(counters, {"replay", "recovery", "crc_flit", "crc_data"}, ca);
        for (const auto& [name, index] : kLinkCounters) {
          if (counters.contains(name)) {
            g.nvlinks[link].counters[index] = to_u64(counters[name], ca + "/" + name);
          }
        }
      }
    }
  }
  if (j.contains("temperature_c")) g.temperature_c = to_u32(j["temperature_c"], at);
  if (j.contains("temperature_v"))
    g.temperature_v = to_bool(j["temperature_v"], at + "/temperature_v");
  if (j.contains("temperature_slowdown_c")) {
    g.temperature_slowdown_c = to_u32(j["temperature_slowdown_c"], at);
  }
  if (j.contains("temperature_shutdown_c")) {
    g.temperature_shutdown_c = to_u32(j["temperature_shutdown_c"], at);
  }
  if (j.contains("temperature_gpu_max_c")) {
    g.temperature_gpu_max_c = to_u32(j["temperature_gpu_max_c"], at);
  }
  if (j.contains("power_mw")) g.power_mw = to_u32(j["power_mw"], at + "/power_mw");
  if (j.contains("sm_clock_mhz")) g.sm_clock_mhz = to_u32(j["sm_clock_mhz"], at + "/sm_clock_mhz");
  if (j.contains("processes")) {
    const json& list = j["processes"];
    const std::string a = at + "/processes";
    if (!list.is_array()) throw FixtureError{a + ": expected an array of processes"};
    g.processes.emplace();
    for (size_t i = 0; i < list.size(); ++i) {
      const json& p = list[i];
      const std::string pa = a + "/" + std::to_string(i);
      check_keys(p, {"pid", "used_memory_bytes", "name"}, pa);
      if (!p.contains("pid")) throw FixtureError{pa + ": needs pid"};
      nvmlDevice_st::Process proc;
      proc.pid = to_u32(p["pid"], pa + "/pid");
      if (proc.pid == 0) throw FixtureError{pa + "/pid: must not be 0"};
      if (p.contains("used_memory_bytes")) {
        proc.used_memory_bytes = to_u64(p["used_memory_bytes"], pa + "/used_memory_bytes");
      }
      if (p.contains("name")) proc.name = to_string(p["name"], pa + "/name");
      g.processes->push_back(std::move(proc));
    }
  }
  if (j.contains("utilization")) {
    const json& u = j["utilization"];
    const std::string a = at + "/utilization";
    check_keys(u, {"gpu", "memory"}, a);
    if (!u.contains("gpu") || !u.contains("memory"))
      throw FixtureError{a + ": needs gpu and memory"};
    nvmlUtilization_t rates{to_u32(u["gpu"], a + "/gpu"), to_u32(u["memory"], a + "/memory")};
    if (rates.gpu > 100) throw FixtureError{a + "/gpu: a percentage, at most 100"};
    if (rates.memory > 100) throw FixtureError{a + "/memory: a percentage, at most 100"};
    g.utilization = rates;
  }
  if (j.contains("mig")) g.mig = to_bool(j["mig"], at + "/mig");
  if (j.contains("fabric")) {
    const json& f = j["fabric"];
    const std::string a = at + "/fabric";
    check_keys(f,
               {"state", "status", "clique_id", "health_mask", "health_summary", "version",
                "settles_after_reads"},
               a);
    nvmlDevice_st::Fabric fab;
    if (f.contains("state")) {
      const unsigned v = to_u32(f["state"], a + "/state");
      if (v > kNvmlGpuFabricStateCompleted) throw FixtureError{a + "/state: 0..3"};
      fab.state = static_cast<unsigned char>(v);
    }
    if (f.contains("status")) fab.status = static_cast<int>(to_u32(f["status"], a + "/status"));
    if (f.contains("clique_id")) fab.clique_id = to_u32(f["clique_id"], a + "/clique_id");
    if (f.contains("health_mask")) fab.health_mask = to_u32(f["health_mask"], a + "/health_mask");
    if (f.contains("health_summary")) {
      const unsigned v = to_u32(f["health_summary"], a + "/health_summary");
      if (v > kNvmlGpuFabricHealthSummaryLimitedCapacity)
        throw FixtureError{a + "/health_summary: 0..3"};
      fab.health_summary = static_cast<unsigned char>(v);
    }
    if (f.contains("version")) {
      fab.version = to_u32(f["version"], a + "/version");
      if (fab.version < 1 || fab.version > 3) throw FixtureError{a + "/version: 1, 2 or 3"};
    }
    if (f.contains("settles_after_reads"))
      fab.settles_after_reads = to_u32(f["settles_after_reads"], a + "/settles_after_reads");
    g.fabric = fab;
  }
  if (j.contains("recovery_action")) {
    g.recovery_action = to_u32(j["recovery_action"], at + "/recovery_action");
  }
  if (j.contains("nvlink_link_count_field"))
    g.nvlink_link_count_field =
        to_u32(j["nvlink_link_count_field"], at + "/nvlink_link_count_field");
  if (j.contains("recovery_action_type")) {
    const unsigned t = to_u32(j["recovery_action_type"], at + "/recovery_action_type");
    if (t > 7) throw FixtureError{at + "/recovery_action_type: an nvmlValueType_t, 0..6 (7: none)"};
    g.recovery_action_type = static_cast<int>(t);
  }
  if (j.contains("errors")) {
    if (!j["errors"].is_object()) throw FixtureError{at + "/errors: expected an object"};
    for (const auto& [fn, code] : j["errors"].items()) {
      g.errors[fn] = static_cast<int>(to_u32(code, at + "/errors/" + fn));
    }
  }
  return g;
}

// The fixture, or nullptr with `problem` set. `init_error` is the fixture's "init_error" code
// (a simulated driver failure), 0 when none.
std::unique_ptr<Fixture> load_fixture(std::string& problem, int& init_error) {
  init_error = 0;
  const char* path = std::getenv("VIGIL_FAKE_NVML_FIXTURE");
  if (!path || !*path) {
    problem = "fake NVML: env VIGIL_FAKE_NVML_FIXTURE is not set";
    return nullptr;
  }
  std::ifstream in(path);
  if (!in) {
    problem = std::string("fake NVML: cannot read fixture ") + path;
    return nullptr;
  }
  try {
    const json j = json::parse(in);
    check_keys(j,
               {"driver_version", "init_error", "gpu_defaults", "gpus", "xid_events",
                "call_latency_us", "init_latency_ms", "hang_calls"},
               "");
    auto f = std::make_unique<Fixture>();
    if (j.contains("call_latency_us"))
      f->call_latency_us = to_u32(j["call_latency_us"], "/call_latency_us");
    if (j.contains("init_latency_ms"))
      f->init_latency_ms = to_u32(j["init_latency_ms"], "/init_latency_ms");
    if (j.contains("hang_calls")) {
      if (!j["hang_calls"].is_array()) throw FixtureError{"/hang_calls: expected an array"};
      for (size_t i = 0; i < j["hang_calls"].size(); ++i)
        f->hang_calls.insert(to_string(j["hang_calls"][i], "/hang_calls/" + std::to_string(i)));
    }
    if (j.contains("init_error")) {
      init_error = static_cast<int>(to_u32(j["init_error"], "/init_error"));
      if (init_error != 0) {
        problem = "fake NVML: fixture asks nvmlInit_v2 to fail with " + std::to_string(init_error);
        return nullptr;
      }
    }
    if (j.contains("driver_version")) {
      f->driver_version = to_string(j["driver_version"], "/driver_version");
    }
    const json defaults = j.value("gpu_defaults", json::object());
    if (!defaults.is_object()) throw FixtureError{"/gpu_defaults: must be an object"};
    if (!j.contains("gpus") || !j["gpus"].is_array()) {
      throw FixtureError{"/gpus: required, an array"};
    }
    for (size_t i = 0; i < j["gpus"].size(); ++i) {
      json gpu = defaults;
      gpu.merge_patch(j["gpus"][i]);
      f->gpus.push_back(parse_gpu(gpu, "/gpus/" + std::to_string(i)));
    }
    // VIGIL_FAKE_GPU_DEV_DIR: the node's /dev as the local cluster's production profile makes it
    // (DIR/dev/<node>/nvidia<i>, scripts/local-cluster.sh), for fixtures that name no device.
    if (const char* dev = std::getenv("VIGIL_FAKE_GPU_DEV_DIR"); dev && *dev) {
      for (size_t i = 0; i < f->gpus.size(); ++i) {
        if (f->gpus[i].device_node.empty())
          f->gpus[i].device_node = std::string(dev) + "/nvidia" + std::to_string(i);
      }
    }
    if (j.contains("xid_events")) {
      if (!j["xid_events"].is_array()) throw FixtureError{"/xid_events: expected an array"};
      for (size_t i = 0; i < j["xid_events"].size(); ++i) {
        const json& e = j["xid_events"][i];
        const std::string a = "/xid_events/" + std::to_string(i);
        check_keys(e, {"gpu", "xid"}, a);
        if (!e.contains("gpu") || !e.contains("xid")) throw FixtureError{a + ": needs gpu and xid"};
        XidEvent x{to_u32(e["gpu"], a + "/gpu"), to_u64(e["xid"], a + "/xid")};
        if (x.gpu >= f->gpus.size()) throw FixtureError{a + "/gpu: no such GPU"};
        f->xid_events.push_back(x);
      }
    }
    return f;
  } catch (const json::exception& e) {
    problem = std::string("fake NVML: fixture ") + path + ": " + e.what();
  } catch (const FixtureError& e) {
    problem = std::string("fake NVML: fixture ") + path + ": " + e.what;
  }
  return nullptr;
}

// The device behind a handle, or nullptr when the handle is not one of ours.
nvmlDevice_st* device(nvmlDevice_t handle) {
  if (!g_fixture) return nullptr;
  for (auto& g : g_fixture->gpus) {
    if (&g == handle) return &g;
  }
  return nullptr;
}

// Common preamble of a device query: initialised, known handle, not lost, no forced error.
nvmlReturn_t check_device(nvmlDevice_t handle, const char* entry_point, nvmlDevice_st** out) {
  if (!g_fixture) return NVML_ERROR_UNINITIALIZED;
  nvmlDevice_st* d = device(handle);
  if (!d) return NVML_ERROR_INVALID_ARGUMENT;
  if (g_fixture->hang_calls.count(entry_point)) {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));  // killed by the caller's time box
  }
  if (g_fixture->call_latency_us > 0)
    std::this_thread::sleep_for(std::chrono::microseconds(g_fixture->call_latency_us));
  if (d->lost) return NVML_ERROR_GPU_IS_LOST;
  if (auto it = d->errors.find(entry_point); it != d->errors.end()) return it->second;
  *out = d;
  return NVML_SUCCESS;
}

template <typename T, typename U>
nvmlReturn_t answer(const std::optional<T>& value, U* out) {
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  if (!value) return NVML_ERROR_NOT_SUPPORTED;
  *out = static_cast<U>(*value);
  return NVML_SUCCESS;
}

#define DEVICE_QUERY(handle)              \
  std::lock_guard<std::mutex> lock(g_mu); \
  nvmlDevice_st* d = nullptr;             \
  if (nvmlReturn_t rc = check_device(handle, __func__, &d); rc != NVML_SUCCESS) return rc

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlInit_v2() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_init_refs > 0) {
    ++g_init_refs;
    return NVML_SUCCESS;
  }
  g_problem.clear();
  int init_error = 0;
  std::unique_ptr<Fixture> f = load_fixture(g_problem, init_error);
  if (init_error != 0) return init_error;
  if (!f) return NVML_ERROR_UNKNOWN;
  if (f->init_latency_ms > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(f->init_latency_ms));
  g_fixture = std::move(f);
  g_init_refs = 1;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlInit() { return nvmlInit_v2(); }

FAKE_NVML_EXPORT nvmlReturn_t nvmlShutdown() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_init_refs == 0) return NVML_ERROR_UNINITIALIZED;
  if (--g_init_refs == 0) g_fixture.reset();
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "Function Not Found";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_INSUFFICIENT_POWER:
      return "Insufficient External Power";
    case NVML_ERROR_IRQ_ISSUE:
      return "Interrupt request issue";
    default: {
      // Fixture problems surface here so vigil-check's error message explains them.
      static thread_local std::string text;
      std::lock_guard<std::mutex> lock(g_mu);
      text = g_problem.empty() ? "Unknown Error" : "Unknown Error (" + g_problem + ")";
      return text.c_str();
    }
  }
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_fixture) return NVML_ERROR_UNINITIALIZED;
  if (!version) return NVML_ERROR_INVALID_ARGUMENT;
  if (g_fixture->driver_version.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(version, g_fixture->driver_version.c_str(), g_fixture->driver_version.size() + 1);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_fixture) return NVML_ERROR_UNINITIALIZED;
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  *count = static_cast<unsigned>(g_fixture->gpus.size());
  return NVML_SUCCESS;
}

// Whether the calling process may talk to GPU d, as the driver decides it: by opening its device
// node. Under Slurm's task/cgroup with ConstrainDevices=yes a GPU the step does not hold is denied
// by the device cgroup (EPERM); the local cluster's device nodes have no driver behind them, so a
// permitted open fails with ENXIO instead (both measured: the wave-4 review W1,
// production_slurm_test). nvml.h: nvmlDeviceGetCount_v2 counts every GPU "even if
// nvmlDeviceGetHandleByIndex_v2 returns NVML_ERROR_NO_PERMISSION for such device", and
// nvmlDeviceGetHandleByIndex_v2 answers NVML_ERROR_NO_PERMISSION "if the user doesn't have
// permission to talk to this device".
nvmlReturn_t device_access(const nvmlDevice_st& d) {
  if (d.device_node.empty()) return NVML_SUCCESS;
  const int fd = ::open(d.device_node.c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
    return NVML_SUCCESS;
  }
  if (errno == ENXIO) return NVML_SUCCESS;
  // EPERM/EACCES, and also a node that is missing (ENOENT, a container without the device):
  // this caller cannot talk to the GPU, which says nothing about the GPU's health.
  return NVML_ERROR_NO_PERMISSION;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                            nvmlDevice_t* handle) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_fixture) return NVML_ERROR_UNINITIALIZED;
  if (!handle || index >= g_fixture->gpus.size()) return NVML_ERROR_INVALID_ARGUMENT;
  if (const nvmlReturn_t access = device_access(g_fixture->gpus[index]); access != NVML_SUCCESS)
    return access;
  if (g_fixture->gpus[index].lost) return NVML_ERROR_GPU_IS_LOST;
  // "errors": {"nvmlDeviceGetHandleByIndex_v2": 8} gives a GPU without a handle, as a GPU with
  // a loose power cable (8), an IRQ problem (11) or in an unknown bad state (999) answers.
  const auto& errors = g_fixture->gpus[index].errors;
  if (auto it = errors.find("nvmlDeviceGetHandleByIndex_v2"); it != errors.end()) return it->second;
  *handle = &g_fixture->gpus[index];
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t handle, char* name,
                                                unsigned int length) {
  DEVICE_QUERY(handle);
  if (!name) return NVML_ERROR_INVALID_ARGUMENT;
  if (d->name.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(name, d->name.c_str(), d->name.size() + 1);
  return NVML_SUCCESS;
}

// nvmlDeviceGetSerial / nvmlDeviceGetUUID: the fixture's string, NOT_SUPPORTED without one.
static nvmlReturn_t copy_out(const std::optional<std::string>& v, char* out, unsigned length) {
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  if (!v) return NVML_ERROR_NOT_SUPPORTED;
  if (v->size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, v->c_str(), v->size() + 1);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t handle, char* serial,
                                                  unsigned int length) {
  DEVICE_QUERY(handle);
  return copy_out(d->serial, serial, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t handle, char* version,
                                                        unsigned int length) {
  DEVICE_QUERY(handle);
  return copy_out(d->vbios, version, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t handle, char* uuid,
                                                unsigned int length) {
  DEVICE_QUERY(handle);
  return copy_out(d->uuid, uuid, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t handle, nvmlPciInfo_t* pci) {
  DEVICE_QUERY(handle);
  if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
  *pci = nvmlPciInfo_t{};
  pci->domain = d->domain;
  pci->bus = d->bus;
  pci->device = d->device;
  pci->pciDeviceId = d->pci_device_id;
  pci->pciSubSystemId = d->pci_subsystem_id;
  std::snprintf(pci->busId, sizeof pci->busId, "%s", d->bus_id.c_str());
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04x:%02x:%02x.0", d->domain, d->bus,
                d->device);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t handle, int error_type,
                                                          int counter_type,
                                                          unsigned long long* count) {
  DEVICE_QUERY(handle);
  if (error_type < 0 || error_type > 1 || counter_type < 0 || counter_type > 1) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return answer(d->ecc[error_type][counter_type], count);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t handle, unsigned int* corr,
                                                        unsigned int* unc, unsigned int* pending,
                                                        unsigned int* failure) {
  DEVICE_QUERY(handle);
  if (!corr || !unc || !pending || !failure) return NVML_ERROR_INVALID_ARGUMENT;
  if (!d->remapped_rows) return NVML_ERROR_NOT_SUPPORTED;
  *corr = d->remapped_rows->correctable;
  *unc = d->remapped_rows->uncorrectable;
  *pending = d->remapped_rows->pending;
  *failure = d->remapped_rows->failure;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t handle,
                                                                     int* is_pending) {
  DEVICE_QUERY(handle);
  if (!is_pending) return NVML_ERROR_INVALID_ARGUMENT;
  if (!d->retired_pages_pending) return NVML_ERROR_NOT_SUPPORTED;
  *is_pending = *d->retired_pages_pending ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t handle,
                                                                     unsigned long long* reasons) {
  DEVICE_QUERY(handle);
  return answer(d->clocks_event_reasons, reasons);
}

FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t handle, unsigned long long* reasons) {
  DEVICE_QUERY(handle);
  return answer(d->clocks_event_reasons, reasons);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t handle,
                                                                  unsigned int* gen) {
  DEVICE_QUERY(handle);
  return answer(d->pcie_current_gen, gen);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t handle,
                                                                 unsigned int* gen) {
  DEVICE_QUERY(handle);
  return answer(d->pcie_max_gen, gen);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t handle,
                                                             unsigned int* width) {
  DEVICE_QUERY(handle);
  return answer(d->pcie_current_width, width);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t handle,
                                                            unsigned int* width) {
  DEVICE_QUERY(handle);
  return answer(d->pcie_max_width, width);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t handle,
                                                             unsigned int* value) {
  DEVICE_QUERY(handle);
  return answer(d->pcie_replay_counter, value);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t handle, unsigned int link,
                                                       int* is_active) {
  DEVICE_QUERY(handle);
  if (!is_active) return NVML_ERROR_INVALID_ARGUMENT;
  if (d->nvlinks.empty()) return NVML_ERROR_NOT_SUPPORTED;
  if (link >= d->nvlinks.size()) return NVML_ERROR_INVALID_ARGUMENT;
  // Real drivers report every link of a MIG-enabled GPU as inactive (DCGM's workaround for
  // "Bug 200682374 - NVML reports links to MIG enabled GPUs as down", DcgmTopology.cpp).
  if (d->mig.value_or(false)) {
    *is_active = NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
  }
  *is_active = d->nvlinks[link].up ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t handle,
                                                              unsigned int link, int counter,
                                                              unsigned long long* value) {
  DEVICE_QUERY(handle);
  if (!value || counter < 0 || counter > 3) return NVML_ERROR_INVALID_ARGUMENT;
  if (d->nvlinks.empty()) return NVML_ERROR_NOT_SUPPORTED;
  if (link >= d->nvlinks.size()) return NVML_ERROR_INVALID_ARGUMENT;
  if (d->nvlinks[link].counter_error != NVML_SUCCESS) return d->nvlinks[link].counter_error;
  *value = d->nvlinks[link].counters[counter];
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t handle, int sensor,
                                                       unsigned int* temp) {
  DEVICE_QUERY(handle);
  if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  return answer(d->temperature_c, temp);
}

// Checks the struct version like the real call: a wrong one is
// NVML_ERROR_ARGUMENT_VERSION_MISMATCH.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t handle,
                                                        nvmlTemperature_t* temperature) {
  DEVICE_QUERY(handle);
  if (!temperature) return NVML_ERROR_INVALID_ARGUMENT;
  if (temperature->version != kNvmlTemperatureV1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (temperature->sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  if (!d->temperature_v || !d->temperature_c) return NVML_ERROR_NOT_SUPPORTED;
  temperature->temperature = static_cast<int>(*d->temperature_c);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t handle,
                                                                int threshold_type,
                                                                unsigned int* temp) {
  DEVICE_QUERY(handle);
  if (threshold_type == NVML_TEMPERATURE_THRESHOLD_SHUTDOWN) {
    return answer(d->temperature_shutdown_c, temp);
  }
  if (threshold_type == NVML_TEMPERATURE_THRESHOLD_SLOWDOWN) {
    return answer(d->temperature_slowdown_c, temp);
  }
  if (threshold_type == NVML_TEMPERATURE_THRESHOLD_GPU_MAX) {
    return answer(d->temperature_gpu_max_c, temp);
  }
  return NVML_ERROR_NOT_SUPPORTED;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t handle, unsigned int* mw) {
  DEVICE_QUERY(handle);
  return answer(d->power_mw, mw);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t handle, int type,
                                                     unsigned int* mhz) {
  DEVICE_QUERY(handle);
  if (type != NVML_CLOCK_SM) return NVML_ERROR_NOT_SUPPORTED;
  return answer(d->sm_clock_mhz, mhz);
}

// Like the real call: *count too small (0 with infos NULL asks for the count) ->
// NVML_ERROR_INSUFFICIENT_SIZE with the count needed; no process -> success with 0.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t handle,
                                                                      unsigned int* count,
                                                                      nvmlProcessInfo_t* infos) {
  DEVICE_QUERY(handle);
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  if (!d->processes) return NVML_ERROR_NOT_SUPPORTED;
  const auto needed = static_cast<unsigned>(d->processes->size());
  if (*count < needed) {
    *count = needed;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (needed > 0 && !infos) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < needed; ++i) {
    const nvmlDevice_st::Process& p = (*d->processes)[i];
    infos[i] = nvmlProcessInfo_t{p.pid, p.used_memory_bytes, 0xFFFFFFFFu, 0xFFFFFFFFu};
  }
  *count = needed;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t handle,
                                                            nvmlUtilization_t* utilization) {
  DEVICE_QUERY(handle);
  return answer(d->utilization, utilization);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t handle, unsigned int* current,
                                                   unsigned int* pending) {
  DEVICE_QUERY(handle);
  if (!current || !pending) return NVML_ERROR_INVALID_ARGUMENT;
  if (!d->mig) return NVML_ERROR_NOT_SUPPORTED;
  *current = *pending = *d->mig ? kNvmlDeviceMigEnable : 0;
  return NVML_SUCCESS;
}

// Like the real calls: no fabric (PCIe boards, pre-Hopper) is NVML_ERROR_NOT_SUPPORTED; the
// versioned call checks the struct version and writes only that version's fields.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t handle,
                                                         nvmlGpuFabricInfo_t* info) {
  DEVICE_QUERY(handle);
  if (!info) return NVML_ERROR_INVALID_ARGUMENT;
  if (!d->fabric) return NVML_ERROR_NOT_SUPPORTED;
  d->fabric->read();
  *info = nvmlGpuFabricInfo_t{};
  info->status = d->fabric->status;
  info->cliqueId = d->fabric->clique_id;
  info->state = d->fabric->state;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t handle,
                                                          nvmlGpuFabricInfoV_t* info) {
  DEVICE_QUERY(handle);
  if (!info) return NVML_ERROR_INVALID_ARGUMENT;
  const unsigned max_version = d->fabric ? d->fabric->version : 3;
  if (max_version < 2) return NVML_ERROR_FUNCTION_NOT_FOUND;
  const bool v3 = info->version == kNvmlGpuFabricInfoV3;
  if (!v3 && info->version != kNvmlGpuFabricInfoV2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (v3 && max_version < 3) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (!d->fabric) return NVML_ERROR_NOT_SUPPORTED;
  d->fabric->read();
  info->status = d->fabric->status;
  info->cliqueId = d->fabric->clique_id;
  info->state = d->fabric->state;
  info->healthMask = d->fabric->health_mask;
  if (v3) info->healthSummary = d->fabric->health_summary;
  return NVML_SUCCESS;
}

// Answers NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (as an unsigned int, NVML_VALUE_TYPE_UNSIGNED_INT);
// every other field, and the action when the fixture has none, is NOT_SUPPORTED per field. The
// call itself succeeds, as the real one does when it could look at the fields.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t handle, int count,
                                                       nvmlFieldValue_t* values) {
  DEVICE_QUERY(handle);
  if (!values || count <= 0) return NVML_ERROR_INVALID_ARGUMENT;
  for (int i = 0; i < count; ++i) {
    nvmlFieldValue_t& v = values[i];
    v.timestamp = 0;
    v.latencyUsec = 0;
    if (v.fieldId == kNvmlFieldGpuRecoveryAction && d->recovery_action) {
      const unsigned a = *d->recovery_action;
      v.valueType = d->recovery_action_type;
      v.nvmlReturn = NVML_SUCCESS;
      v.value = nvmlValue_t{};
      switch (v.valueType) {
        case kNvmlValueTypeDouble:
          v.value.dVal = a;
          break;
        case kNvmlValueTypeUnsignedLong:
          v.value.ulVal = a;
          break;
        case kNvmlValueTypeUnsignedLongLong:
          v.value.ullVal = a;
          break;
        case kNvmlValueTypeSignedLongLong:
          v.value.sllVal = a;
          break;
        case kNvmlValueTypeSignedInt:
          v.value.siVal = static_cast<int>(a);
          break;
        case kNvmlValueTypeUnsignedShort:
          v.value.usVal = static_cast<unsigned short>(a);
          break;
        default:
          v.value.uiVal = a;
          break;  // unsigned int, and 7 (not a type) as garbage
      }
    } else if (is_nvlink5_field(v.fieldId)) {
      // Per link, the link in scopeId (nvml.h: "Link ID needs to be specified in the scopeId
      // field"), as an unsigned long long (DCGM reads fv.value.ullVal).
      v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      if (v.scopeId < d->nvlinks.size()) {
        const auto& fields = d->nvlinks[v.scopeId].nvlink5;
        if (const auto it = fields.find(v.fieldId); it != fields.end()) {
          v.valueType = kNvmlValueTypeUnsignedLongLong;
          v.nvmlReturn = NVML_SUCCESS;
          v.value = nvmlValue_t{};
          v.value.ullVal = it->second;
        }
      }
    } else if (v.fieldId == kNvmlFieldNvLinkLinkCount && d->nvlink_link_count_field) {
      v.valueType = kNvmlValueTypeUnsignedInt;  // as NVML answers it
      v.nvmlReturn = NVML_SUCCESS;
      v.value = nvmlValue_t{};
      v.value.uiVal = *d->nvlink_link_count_field;
    } else {
      v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    }
  }
  return NVML_SUCCESS;
}

// The name a fixture process carries, whichever GPU lists it.
FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char* name,
                                                       unsigned int length) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_fixture) return NVML_ERROR_UNINITIALIZED;
  if (!name || length == 0) return NVML_ERROR_INVALID_ARGUMENT;
  for (const nvmlDevice_st& g : g_fixture->gpus) {
    if (!g.processes) continue;
    for (const nvmlDevice_st::Process& p : *g.processes) {
      if (p.pid != pid || !p.name) continue;
      std::snprintf(name, length, "%s", p.name->c_str());  // cropped to length, like NVML
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_fixture) return NVML_ERROR_UNINITIALIZED;
  if (!set) return NVML_ERROR_INVALID_ARGUMENT;
  *set = new nvmlEventSet_st();
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t handle,
                                                       unsigned long long event_types,
                                                       nvmlEventSet_t set) {
  DEVICE_QUERY(handle);
  if (!set) return NVML_ERROR_INVALID_ARGUMENT;
  if (event_types & ~kNvmlEventTypeXidCriticalError) return NVML_ERROR_NOT_SUPPORTED;
  set->registered[d] |= event_types;
  return NVML_SUCCESS;
}

// Delivers the fixture's XID events (for registered GPUs) one per call, then waits out the
// timeout like the real call does when nothing happens.
FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                                  unsigned int timeout_ms) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!g_fixture) return NVML_ERROR_UNINITIALIZED;
    if (!set || !data) return NVML_ERROR_INVALID_ARGUMENT;
    while (set->next_event < g_fixture->xid_events.size()) {
      const XidEvent& e = g_fixture->xid_events[set->next_event++];
      nvmlDevice_st* d = &g_fixture->gpus[e.gpu];
      auto it = set->registered.find(d);
      if (it == set->registered.end() || !(it->second & kNvmlEventTypeXidCriticalError)) continue;
      *data = nvmlEventData_t{};
      data->device = d;
      data->eventType = kNvmlEventTypeXidCriticalError;
      data->eventData = e.xid;
      return NVML_SUCCESS;
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(std::min(timeout_ms, 60000u)));
  return NVML_ERROR_TIMEOUT;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  delete set;
  return NVML_SUCCESS;
}
