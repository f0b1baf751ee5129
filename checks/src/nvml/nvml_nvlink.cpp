// nvml_nvlink: NVLink state and error counters of every link of every GPU. A link that exists
// but is down fails under a SKU file (DCGM health watch) and warns without one (the board's
// link count is unknown). Replay, recovery and CRC flit/data
// counters are reported as their growth since the previous run (state in ctx.state_dir),
// summed per GPU; the message names the links that moved. Links NVML reports as not
// supported / invalid do not exist on this board and are not counted. Where the driver answers
// NVML_FI_DEV_NVLINK_LINK_COUNT, the count is reported (nvlink_link_count), so a SKU file can
// require every link of the board; every link index is still scanned.
// On Blackwell the DL counters answer NOT_SUPPORTED ("unsupported for Blackwell+", nvml.h
// 13.3.29 lines 2649-2666); there the NVLink5 field values are read per link instead (packet,
// integrity, recovery, effective and symbol error counters as deltas, and the effective BER
// judged by DCGM 4.6.0's 1e-12 rule). docs/checks-nvml.md "nvml_nvlink".
#include <iterator>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "check_factories.h"
#include "core/counter_state.h"
#include "nvml_common.h"

namespace vigil {
namespace {

using namespace nvml;

struct Counter {
  unsigned id;      // the nvmlNvLinkErrorCounter_t, or the NVLink5 NVML field id
  const char* key;  // state key suffix
  const char* measurement;
  const char* text;
  const char* fault;
};

constexpr Counter kCounters[] = {
    {NVML_NVLINK_ERROR_DL_REPLAY, "replay", "nvlink_replay_delta", "replays",
     "VIGIL-NVML-NVLINK-REPLAY"},
    {NVML_NVLINK_ERROR_DL_RECOVERY, "recovery", "nvlink_recovery_delta", "recoveries",
     "VIGIL-NVML-NVLINK-RECOVERY"},
    {NVML_NVLINK_ERROR_DL_CRC_FLIT, "crc_flit", "nvlink_crc_flit_delta", "CRC flit errors",
     "VIGIL-NVML-NVLINK-CRC"},
    {NVML_NVLINK_ERROR_DL_CRC_DATA, "crc_data", "nvlink_crc_data_delta", "CRC data errors",
     "VIGIL-NVML-NVLINK-CRC"},
};

// The NVLink5 counters (nvml.h 13.3.29 lines 2752-2777; DCGM 4.6.0 maps them to
// DCGM_FI_DEV_NVLINK_* 1204-1214 and 1219, and its health watch fails any increase of the error
// counters and of failed recoveries and warns on successful ones, DcgmHealthWatch.cpp
// MonitorNVLink5Fields / MonitorNVLinkErrorFields). A SKU file bounds them (docs/thresholds.md).
constexpr Counter kNvlink5Counters[] = {
    {kNvmlFieldNvLinkMalformedPacketErrors, "malformed", "nvlink_malformed_packets_delta",
     "malformed packets", "VIGIL-NVML-NVLINK-PACKET"},
    {kNvmlFieldNvLinkBufferOverrunErrors, "overrun", "nvlink_buffer_overruns_delta",
     "buffer overruns", "VIGIL-NVML-NVLINK-PACKET"},
    {kNvmlFieldNvLinkRcvErrors, "rx_errors", "nvlink_rx_errors_delta", "receive errors",
     "VIGIL-NVML-NVLINK-PACKET"},
    {kNvmlFieldNvLinkRcvRemoteErrors, "rx_remote", "nvlink_rx_remote_errors_delta",
     "remote (stomped) packets", "VIGIL-NVML-NVLINK-PACKET"},
    {kNvmlFieldNvLinkRcvGeneralErrors, "rx_general", "nvlink_rx_general_errors_delta",
     "header mismatches", "VIGIL-NVML-NVLINK-PACKET"},
    {kNvmlFieldNvLinkLocalLinkIntegrityErrors, "integrity", "nvlink_integrity_errors_delta",
     "link integrity errors", "VIGIL-NVML-NVLINK-INTEGRITY"},
    {kNvmlFieldNvLinkRecoverySuccessfulEvents, "recovery_ok", "nvlink_recovery_successful_delta",
     "recoveries", "VIGIL-NVML-NVLINK-RECOVERY"},
    {kNvmlFieldNvLinkRecoveryFailedEvents, "recovery_failed", "nvlink_recovery_failed_delta",
     "failed recoveries", "VIGIL-NVML-NVLINK-RECOVERY-FAILED"},
    {kNvmlFieldNvLinkEffectiveErrors, "effective_errors", "nvlink_effective_errors_delta",
     "effective errors", "VIGIL-NVML-NVLINK-BER"},
    {kNvmlFieldNvLinkSymbolErrors, "symbol_errors", "nvlink_symbol_errors_delta", "symbol errors",
     "VIGIL-NVML-NVLINK-SYMBOL"},
};

// Both tables, in the order their measurements are reported.
constexpr std::span<const Counter> kCounterTables[] = {kCounters, kNvlink5Counters};

const Counter* counter_of(std::string_view measurement) {
  for (const std::span<const Counter> table : kCounterTables)
    for (const Counter& c : table)
      if (measurement == c.measurement) return &c;
  return nullptr;
}

// An NVLink5 BER field's value: "Bit [0:7]: BER Exponent, Bit [8:11]: BER MANTISSA" (nvml.h),
// mantissa x 10^-exponent (DCGM NvmlBerParser).
struct Ber {
  unsigned mantissa, exponent;
  // "3e-11", as the word says it (a double this small would print as 0 through figure()).
  std::string text() const { return std::to_string(mantissa) + "e-" + std::to_string(exponent); }
};
Ber decode_ber(unsigned long long raw) {
  return {static_cast<unsigned>((raw >> kNvmlNvLinkBerMantissaShift) & kNvmlNvLinkBerMantissaMask),
          static_cast<unsigned>((raw >> kNvmlNvLinkBerExpShift) & kNvmlNvLinkBerExpMask)};
}
// DCGM 4.6.0's limit (common/DcgmUtilities.cpp IsEffectiveBerThresholdExceeded, the health watch's
// DCGM_FR_NVLINK_EFFECTIVE_BER_THRESHOLD): above 1e-12 fails; mantissa 15 / exponent 255 is
// NVML's "zero". In integers, as DCGM decides it, so 10e-13 is not taken for more than 1e-12.
// One difference, on purpose: a mantissa of 0 is a BER of 0 here (DCGM's test counts exponent
// < 12 alone), so a link that answers 0 is never judged above the limit.
bool ber_above_limit(Ber b) {
  if (b.mantissa == 0 || (b.mantissa == 15 && b.exponent == 255)) return false;
  return b.exponent < 12 || (b.exponent == 12 && b.mantissa > 1) ||
         (b.exponent == 13 && b.mantissa > 10);
}

// One nvmlDeviceGetFieldValues call for a link's NVLink5 counters and effective BER, the link in
// scopeId. A field the driver does not have is left out (NOT_SUPPORTED, and INVALID_ARGUMENT: a
// driver older than the field id answers that for an id it does not know, nvml.h's return codes
// of nvmlDeviceGetFieldValues); any other per-field answer fails the whole reading (as a failed
// DL counter does).
struct Nvlink5Reading {
  nvmlReturn_t rc = NVML_SUCCESS;
  std::string failed;  // the field whose answer failed it
  std::vector<std::pair<const Counter*, unsigned long long>> counters;
  std::optional<Ber> ber;
};
Nvlink5Reading read_nvlink5(const Session& s, int g, unsigned link) {
  std::vector<nvmlFieldValue_t> fv(std::size(kNvlink5Counters) + 1);
  for (size_t i = 0; i < std::size(kNvlink5Counters); ++i) fv[i].fieldId = kNvlink5Counters[i].id;
  fv.back().fieldId = kNvmlFieldNvLinkEffectiveBer;
  for (auto& f : fv) f.scopeId = link;
  Nvlink5Reading out;
  out.rc = call(s.api().device_get_field_values, s.gpus[g], static_cast<int>(fv.size()), fv.data());
  if (out.rc != NVML_SUCCESS) return out;
  for (size_t i = 0; i < fv.size(); ++i) {
    if (is_not_supported(fv[i].nvmlReturn) || fv[i].nvmlReturn == NVML_ERROR_INVALID_ARGUMENT)
      continue;
    const auto value = fv[i].nvmlReturn == NVML_SUCCESS ? field_value(fv[i]) : std::nullopt;
    if (!value) {
      out.rc = fv[i].nvmlReturn == NVML_SUCCESS ? NVML_ERROR_UNKNOWN : fv[i].nvmlReturn;
      out.failed = "field " + std::to_string(fv[i].fieldId);
      return out;
    }
    if (i < std::size(kNvlink5Counters))
      out.counters.emplace_back(&kNvlink5Counters[i], *value);
    else
      out.ber = decode_ber(*value);
  }
  return out;
}

// `item` after the others of a comma-separated list.
void append_item(std::string& list, const std::string& item) {
  list += (list.empty() ? "" : ",") + item;
}

// What the run found over every GPU, for the summary and the message.
struct Findings {
  int links_up = 0;
  // (gpu, measurement) -> links whose counter moved, for the message
  std::map<std::pair<int, std::string>, std::string> moved_links;
  // gpu -> links that are down
  std::map<int, std::string> down_links;
  // gpu -> links whose effective BER is above the limit, with their BER
  std::map<int, std::string> ber_text;
  std::vector<int> mig_gpus;
};

// NVML reports every NVLink of a MIG-enabled GPU as inactive. DCGM works around it ("Bug
// 200682374 - NVML reports links to MIG enabled GPUs as down. This causes health checks
// to fail", dcgmlib/src/DcgmTopology.cpp) by treating them as disabled: so does Vigil.
// Only the current mode counts: while MIG is merely pending the links
// still report their real state.
bool mig_enabled(const Session& s, int g) {
  unsigned mig_current = 0, mig_pending = 0;
  return call(s.api().device_get_mig_mode, s.gpus[g], &mig_current, &mig_pending) == NVML_SUCCESS &&
         mig_current == kNvmlDeviceMigEnable;
}

// A counter's reading on one link. Readings are kept until every link of the GPU was read: a
// failed query on link k must not move the saved baselines of links 0..k-1, or their growth since
// the last run would never be reported (the next run's delta starts from the reading of this
// failed run).
struct Reading {
  std::string state_key, port;
  const Counter* counter;
  unsigned long long value;
};

// What the scan of one GPU's links found.
struct LinkScan {
  int present = 0, down = 0;
  bool failed = false;           // a link state query failed: the GPU is not judged
  bool counters_failed = false;  // a counter query failed: its counters are not reported
  std::vector<Reading> readings;
  bool nvlink5 = false;   // this GPU's counters came from the NVLink5 fields
  std::string ber_links;  // links whose effective BER is above DCGM's limit, with the BER
  std::optional<int> ber_high;
};

// The error counters of one active link: its DL counters or, where it answers none (a Blackwell
// driver), its NVLink5 fields.
void read_link_counters(const Session& s, int g, unsigned link, const std::string& key, Verdict& v,
                        LinkScan& scan) {
  const std::string port = "nvlink" + std::to_string(link);
  bool dl_answered = false;
  for (const Counter& c : kCounters) {
    unsigned long long value = 0;
    const nvmlReturn_t rc = call(s.api().device_get_nvlink_error_counter, s.gpus[g], link,
                                 static_cast<int>(c.id), &value);
    if (is_not_supported(rc)) continue;
    if (rc != NVML_SUCCESS) {
      // The counters are then not reported for this GPU, but its link states still are:
      // a counter the driver cannot read must not hide a link that is down.
      v.query_failed(s, g, "nvmlDeviceGetNvLinkErrorCounter(" + port + ")", rc);
      scan.counters_failed = true;
      return;
    }
    scan.readings.push_back({key + "/" + port + "/" + c.key, port, &c, value});
    dl_answered = true;
  }
  if (dl_answered) return;
  // No DL counter on this link: a Blackwell driver. Its NVLink5 fields instead.
  const Nvlink5Reading n5 = read_nvlink5(s, g, link);
  if (n5.rc != NVML_SUCCESS) {
    v.query_failed(
        s, g, "nvmlDeviceGetFieldValues(" + port + (n5.failed.empty() ? "" : " " + n5.failed) + ")",
        n5.rc);
    scan.counters_failed = true;
    return;
  }
  for (const auto& [c, value] : n5.counters) {
    scan.readings.push_back({key + "/" + port + "/" + c->key, port, c, value});
    scan.nvlink5 = true;
  }
  if (n5.ber) {
    const bool high = ber_above_limit(*n5.ber);
    scan.ber_high = std::max(scan.ber_high.value_or(0), high ? 1 : 0);
    if (high) append_item(scan.ber_links, port + " " + n5.ber->text());
  }
}

// Every link index of GPU g: its state and, with `counters` (a state dir), its error counters.
// The links found down go to `down_links`.
LinkScan scan_links(const Session& s, int g, const std::string& key, bool counters, Verdict& v,
                    std::string& down_links) {
  LinkScan scan;
  for (unsigned link = 0; link < kNvmlNvLinkMaxLinks; ++link) {
    int link_state = NVML_FEATURE_DISABLED;
    const nvmlReturn_t rc = call(s.api().device_get_nvlink_state, s.gpus[g], link, &link_state);
    if (is_not_supported(rc) || rc == NVML_ERROR_INVALID_ARGUMENT) continue;  // no link
    if (rc != NVML_SUCCESS) {
      v.query_failed(s, g, "nvmlDeviceGetNvLinkState(link " + std::to_string(link) + ")", rc);
      scan.failed = true;
      break;
    }
    ++scan.present;
    if (link_state != NVML_FEATURE_ENABLED) {
      ++scan.down;
      append_item(down_links, "nvlink" + std::to_string(link));
      continue;  // counters of a down link do not move
    }
    if (counters && !scan.counters_failed) read_link_counters(s, g, link, key, v, scan);
  }
  return scan;
}

// measurement -> sum over links of GPU g's growth since the last run, only for counters the
// driver answered: Blackwell drivers answer NOT_SUPPORTED for the legacy DL counters (nvml.h:
// "unsupported for Blackwell+", use the NVML_FI_DEV_NVLINK_COUNT_* fields), and an unanswered
// counter is no zero. The links that moved go to `moved_links`.
std::map<std::string, unsigned long long> record_deltas(
    CounterState& state, int g, const std::vector<Reading>& readings,
    std::map<std::pair<int, std::string>, std::string>& moved_links) {
  std::map<std::string, unsigned long long> deltas;
  for (const Reading& rd : readings) {
    const auto delta = state.update(rd.state_key, rd.value).delta;
    deltas[rd.counter->measurement] += delta.value_or(0);
    if (delta.value_or(0) > 0) append_item(moved_links[{g, rd.counter->measurement}], rd.port);
  }
  return deltas;
}

// GPU g's counter deltas and effective BER as measurements; counters it did not answer noted.
void report_counters(const CheckContext& ctx, int g, const LinkScan& scan,
                     const std::map<std::string, unsigned long long>& deltas, CheckResult& r,
                     Verdict& v, Findings& f) {
  for (const std::span<const Counter> table : kCounterTables)
    for (const Counter& c : table) {
      const auto it = deltas.find(c.measurement);
      if (it == deltas.end()) continue;  // not answered on any link
      add_measurement(r, ctx, c.measurement, static_cast<double>(it->second), "count", g);
    }
  if (scan.ber_high) {
    add_measurement(r, ctx, "nvlink_effective_ber_high", *scan.ber_high, "bool", g);
    f.ber_text[g] = scan.ber_links;
  }
  const size_t expected = scan.nvlink5 ? std::size(kNvlink5Counters) : std::size(kCounters);
  if (deltas.size() < expected && scan.present > scan.down) {
    v.not_supported(g, "some NVLink error counters");
  }
}

// One GPU not under MIG: its link count, links down and counters.
void inspect_gpu(const CheckContext& ctx, const Session& s, int g, CounterState& state,
                 CheckResult& r, Verdict& v, Findings& f) {
  const std::string key = gpu_key(s, g);
  // The links this GPU has as the driver counts them (NVML_FI_DEV_NVLINK_LINK_COUNT), where it
  // answers: a figure a SKU file may bound (nvlink_link_count: NVLink 5 GPUs have 18). It does
  // not bound the scan: a driver counting fewer links (one masked after a failed training)
  // must not hide a link that is down.
  if (const FieldRead count = read_field(s, g, kNvmlFieldNvLinkLinkCount);
      count.rc == NVML_SUCCESS && count.value && *count.value <= kNvmlNvLinkMaxLinks)
    add_measurement(r, ctx, "nvlink_link_count", static_cast<double>(*count.value), "count", g);
  const LinkScan scan = scan_links(s, g, key, state.enabled(), v, f.down_links[g]);
  std::map<std::string, unsigned long long> deltas;
  if (!scan.failed && !scan.counters_failed)
    deltas = record_deltas(state, g, scan.readings, f.moved_links);
  if (scan.present == 0) {
    if (!scan.failed) v.not_supported(g, "NVLink");
    return;
  }
  if (scan.failed) return;  // the query failure is reported; partial counts would mislead
  f.links_up += scan.present - scan.down;
  Measurement& m = add_measurement(r, ctx, "nvlink_links_down", scan.down, "count", g);
  if (!m.threshold) {
    // Without a SKU bound Vigil does not know how many links this board wires: on PCIe
    // boards with NVLink bridge connectors (H100 PCIe, H100/H200 NVL) a missing or partial
    // bridge leaves links that NVML may report inactive, and DCGM only judges the links
    // NVML_FI_DEV_NVLINK_LINK_COUNT says exist (DcgmCacheManager InitializeNvLinkCount).
    // So an inactive link of an unknown board warns; the SKU files of the
    // NVSwitch boards (every link wired) fail it, as DCGM's health watch does.
    default_threshold(m, Op::kLe, 0, std::nullopt,
                      "built-in: NVLink down warns on a board without a SKU file (its link "
                      "count is unknown); SKU files fail it (DCGM health watch)");
    m.threshold->unconfirmed = true;
  }
  if (state.enabled() && !scan.counters_failed) report_counters(ctx, g, scan, deltas, r, v, f);
}

// "links of MIG-enabled gpu0,gpu1 not judged (...)", or "" when no GPU is under MIG.
std::string mig_note(const std::vector<int>& mig_gpus) {
  if (mig_gpus.empty()) return "";
  std::string note = "links of MIG-enabled ";
  for (size_t i = 0; i < mig_gpus.size(); ++i)
    note += (i ? ",gpu" : "gpu") + std::to_string(mig_gpus[i]);
  return note + " not judged (NVML reports them inactive under MIG)";
}

// The counter state's part of the summary; saves the state.
std::string state_note(const CounterState& state) {
  if (!state.enabled()) return "; no state dir, error counter deltas not measured";
  std::string note;
  if (!state.load_problem().empty()) note += "; " + state.load_problem();
  if (state.baselines() > 0) note += "; baseline recorded";
  if (auto saved = state.save(); !saved) note += "; state not saved: " + saved.error().to_string();
  return note;
}

class NvmlNvlinkCheck final : public NvmlCheck {
 public:
  std::string_view name() const override { return "nvml_nvlink"; }

  CheckResult inspect(const CheckContext& ctx, const Session& s, CheckResult& r,
                      Verdict& v) override {
    CounterState state(ctx.state_dir, name(), ctx.node);
    Findings f;
    for (int g = 0; g < s.count(); ++g) {
      if (!s.gpus[g]) continue;
      if (mig_enabled(s, g)) {
        f.mig_gpus.push_back(g);
        continue;
      }
      inspect_gpu(ctx, s, g, state, r, v, f);
    }
    const std::string mig = mig_note(f.mig_gpus);
    if (!f.mig_gpus.empty() && static_cast<int>(f.mig_gpus.size()) == s.count())
      return skipped(name(), mig);
    std::string summary = std::to_string(f.links_up) + " NVLinks up";
    if (!mig.empty()) summary += "; " + mig;
    summary += state_note(state);
    v.conclude(
        r,
        [&](const Measurement& m, Status) {
          const int g = m.gpu.value_or(-1);
          const std::string gs = "gpu" + std::to_string(g);
          if (m.name == "nvlink_links_down") {
            return Described{gs + " " + f.down_links[g] + " down", "VIGIL-NVML-NVLINK-DOWN"};
          }
          if (m.name == "nvlink_link_count") {
            return Described{gs + " has " + figure(m.value) + " NVLinks",
                             "VIGIL-NVML-NVLINK-COUNT"};
          }
          if (m.name == "nvlink_effective_ber_high") {
            return Described{gs + " " + f.ber_text[g] + " effective BER above 1e-12",
                             "VIGIL-NVML-NVLINK-BER"};
          }
          if (const Counter* c = counter_of(m.name)) {
            return Described{
                gs + " " + f.moved_links[{g, m.name}] + " " + c->text + " +" + figure(m.value),
                c->fault};
          }
          return Described{gs + " " + m.name + " " + figure(m.value), "VIGIL-NVML-NVLINK"};
        },
        summary);
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_nvml_nvlink_check() { return std::make_unique<NvmlNvlinkCheck>(); }

}  // namespace vigil
