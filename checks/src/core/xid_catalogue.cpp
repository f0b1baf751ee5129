#include "vigil/checks/xid_catalogue.h"

#include <charconv>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "vigil/base/strings.h"

namespace vigil {

// Generated at build time from checks/data/*.json (checks/CMakeLists.txt).
extern const char* const kXidCatalogueJson;
extern const char* const kXidPolicyJson;

namespace {

using nlohmann::json;

// Reading either file: the first problem throws Bad{field, message}; parse() turns it into an
// Error naming the file and the field.
struct Bad {
  std::string field, message;
};

const json& need(const json& j, const std::string& at, const std::string& key) {
  if (!j.is_object()) throw Bad{at, "must be an object"};
  if (!j.contains(key)) throw Bad{at + key, "missing"};
  return j.at(key);
}

void only_keys(const json& j, const std::string& at, std::initializer_list<std::string_view> keys) {
  if (!j.is_object()) throw Bad{at, "must be an object"};
  for (const auto& [k, v] : j.items()) {
    bool known = false;
    for (std::string_view allowed : keys) known = known || k == allowed;
    if (!known) throw Bad{at + k, "unknown field"};
  }
}

std::string text(const json& j, const std::string& at, const std::string& key) {
  const json& v = need(j, at, key);
  if (!v.is_string()) throw Bad{at + key, "must be a string"};
  return v.get<std::string>();
}

unsigned long long number(const json& v, const std::string& field) {
  if (!v.is_number_unsigned()) throw Bad{field, "must be a whole number >= 0"};
  return v.get<unsigned long long>();
}

const json& list(const json& j, const std::string& at, const std::string& key) {
  const json& v = need(j, at, key);
  if (!v.is_array()) throw Bad{at + key, "must be a list"};
  return v;
}

// Every rule names where it comes from (the non-negotiable on hardware behaviour).
void need_source(const json& j, const std::string& at) {
  if (text(j, at, "source").empty()) throw Bad{at + "source", "must say where the rule comes from"};
}

XidAction action_of(const json& j, const std::string& at) {
  const std::string s = text(j, at, "action");
  if (auto a = value_of(kXidActionNames, s)) return *a;
  throw Bad{at + "action", "'" + s + "' is not none, watch, reset_gpu, reboot or service"};
}

bool mask_matches(std::string_view mask, std::uint32_t value) {
  if (mask.size() != 32) return false;
  for (std::size_t i = 0; i < 32; ++i) {
    const char c = mask[i];
    if (c == '-') continue;
    const bool bit = (value >> (31 - i)) & 1U;
    if ((c == '1') != bit) return false;
  }
  return true;
}

std::optional<std::uint32_t> hex_word(std::string_view s) {
  s = trim(s);
  if (s.starts_with("0x") || s.starts_with("0X")) s.remove_prefix(2);
  std::uint32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<Remedy> remedy_of(XidAction a) {
  switch (a) {
    case XidAction::kResetGpu:
      return Remedy::kResetGpu;
    case XidAction::kReboot:
      return Remedy::kReboot;
    case XidAction::kService:
      return Remedy::kService;
    default:
      return std::nullopt;
  }
}

void XidCatalogue::read_catalogue(const nlohmann::json& cat) {
  only_keys(cat, "", {"schema", "catalogue", "xids", "nvlink5_decode"});
  if (number(need(cat, "", "schema"), "schema") != 1) throw Bad{"schema", "must be 1"};
  const json& about = need(cat, "", "catalogue");
  const std::string sha = text(about, "catalogue.", "sha256");
  version_ = "Xid-Catalog.xlsx " + text(about, "catalogue.", "modified") + " (sha256 " +
             sha.substr(0, 8) + ")";
  const json& xids = list(cat, "", "xids");
  for (std::size_t i = 0; i < xids.size(); ++i) {
    const std::string at = "xids[" + std::to_string(i) + "].";
    const unsigned long long xid = number(need(xids[i], at, "xid"), at + "xid");
    Entry e{text(xids[i], at, "mnemonic"), text(xids[i], at, "immediate"),
            !list(xids[i], at, "gpus").empty()};
    tokens_.insert(e.immediate);
    if (!xids_.emplace(xid, std::move(e)).second) throw Bad{at + "xid", "listed twice"};
  }
  const json& decode = list(cat, "", "nvlink5_decode");
  for (std::size_t i = 0; i < decode.size(); ++i) {
    const std::string at = "nvlink5_decode[" + std::to_string(i) + "].";
    DecodeRow row{number(need(decode[i], at, "xid"), at + "xid"),
                  text(decode[i], at, "intr_info_v1"),
                  text(decode[i], at, "intr_info_v2"),
                  {},
                  text(decode[i], at, "immediate")};
    for (const std::string& m : {row.v1, row.v2})
      if (m.size() != 32 || m.find_first_not_of("01-") != std::string::npos)
        throw Bad{at + "intr_info", "'" + m + "' is not 32 characters of 0, 1 and -"};
    for (const json& s : list(decode[i], at, "error_status")) {
      auto v = s.is_string() ? hex_word(s.get<std::string>()) : std::nullopt;
      if (!v) throw Bad{at + "error_status", "must list hex words like 0x00000001"};
      row.status.push_back(*v);
    }
    tokens_.insert(row.immediate);
    decode_.push_back(std::move(row));
  }
}

// The built-in policy sets every key; a site's sets the ones it changes. Entries replace those
// of the same key (an NVIDIA token, an XID); cancels are added.
void XidCatalogue::read_policy(const nlohmann::json& pol, bool site) {
  only_keys(pol, "",
            {"schema", "about", "actions", "buckets", "unused_on_datacenter_gpus", "xids",
             "cancels", "unlisted", "sxid"});
  if (!site || pol.contains("schema"))
    if (number(need(pol, "", "schema"), "schema") != 1) throw Bad{"schema", "must be 1"};
  auto each = [&](const char* key, std::initializer_list<std::string_view> keys, auto&& take) {
    if (site && !pol.contains(key)) return;
    const json& items = list(pol, "", key);
    for (std::size_t i = 0; i < items.size(); ++i) {
      const std::string at = std::string(key) + "[" + std::to_string(i) + "].";
      only_keys(items[i], at, keys);
      need_source(items[i], at);
      take(items[i], at);
    }
  };
  each("buckets", {"nvidia", "action", "source"}, [&](const json& j, const std::string& at) {
    const std::string token = text(j, at, "nvidia");
    if (!tokens_.count(token))
      throw Bad{at + "nvidia", "'" + token + "' is not an action of " + version_};
    Rule r;
    const std::string a = text(j, at, "action");
    // The two readings of a message belong to the one token each is for.
    if (a == "recovery_action" && token == "XID_154")
      r.reading = Reading::kRecoveryAction;
    else if (a == "nvlink5_decode" && token == "WORKFLOW_NVLINK5_ERR")
      r.reading = Reading::kNvlink5Decode;
    else if (a == "recovery_action" || a == "nvlink5_decode")
      throw Bad{at + "action", "'" + a + "' reads the message of another token"};
    else
      r.action = action_of(j, at);
    buckets_[token] = r;
  });
  each("xids", {"xid", "action", "source"}, [&](const json& j, const std::string& at) {
    overrides_[number(need(j, at, "xid"), at + "xid")] = action_of(j, at);
  });
  each("cancels", {"when", "clears", "source"}, [&](const json& j, const std::string& at) {
    auto& into = cancels_[number(need(j, at, "when"), at + "when")];
    for (const json& x : list(j, at, "clears")) into.insert(number(x, at + "clears"));
  });
  auto one = [&](const json& parent, const std::string& at, const char* key, XidAction& out) {
    if (site && !parent.contains(key)) return;
    const std::string field = at + key + ".";
    only_keys(need(parent, at, key), field, {"action", "source"});
    need_source(parent.at(key), field);
    out = action_of(parent.at(key), field);
  };
  one(pol, "", "unused_on_datacenter_gpus", unused_cap_);
  one(pol, "", "unlisted", unlisted_);
  if (!site || pol.contains("sxid")) {
    const json& sx = need(pol, "", "sxid");
    only_keys(sx, "sxid.", {"fatal", "non_fatal", "by_number"});
    one(sx, "sxid.", "fatal", sxid_fatal_);
    one(sx, "sxid.", "non_fatal", sxid_non_fatal_);
    if (!site || sx.contains("by_number")) {
      const json& rows = list(sx, "sxid.", "by_number");
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const std::string at = "sxid.by_number[" + std::to_string(i) + "].";
        only_keys(rows[i], at, {"sxids", "action", "source"});
        need_source(rows[i], at);
        const XidAction a = action_of(rows[i], at);
        for (const json& n : list(rows[i], at, "sxids"))
          sxid_overrides_[number(n, at + "sxids")] = a;
      }
    }
  }
  // Every action token the catalogue uses must have a meaning: a new NVIDIA token is an error
  // to fix, not an XID silently judged by a default.
  for (const auto& [xid, e] : xids_)
    if (!buckets_.count(e.immediate))
      throw Bad{"buckets",
                "no entry for NVIDIA's '" + e.immediate + "' (XID " + std::to_string(xid) + ")"};
  for (const DecodeRow& row : decode_)
    if (!buckets_.count(row.immediate) || buckets_.at(row.immediate).reading != Reading::kFixed)
      throw Bad{"buckets", "no plain action for NVIDIA's '" + row.immediate + "' (XID " +
                               std::to_string(row.xid) + " decode)"};
}

std::string xid_fault_code(std::string_view family, XidAction worst) {
  std::string code = "VIGIL-" + std::string(family) + "-XID-";
  return code + (worst == XidAction::kResetGpu ? "RESET-GPU"
                 : worst == XidAction::kReboot ? "REBOOT"
                                               : "SERVICE");
}

Result<XidCatalogue> XidCatalogue::parse(std::string_view catalogue_json,
                                         std::string_view policy_json, std::string_view origin) {
  XidCatalogue c;
  std::string file = std::string(origin) + " xid-catalogue.json";
  try {
    c.read_catalogue(json::parse(catalogue_json));
    file = std::string(origin) + " xid-policy.json";
    c.read_policy(json::parse(policy_json), false);
  } catch (const Bad& b) {
    return Error{b.field + ": " + b.message, file};
  } catch (const json::exception& e) {
    return Error{std::string("not valid JSON: ") + e.what(), file};
  }
  return c;
}

std::shared_ptr<const XidCatalogue> XidCatalogue::builtin() {
  static const std::shared_ptr<const XidCatalogue> kBuiltin = [] {
    auto c = parse(kXidCatalogueJson, kXidPolicyJson, "built-in");
    if (c) return std::make_shared<const XidCatalogue>(std::move(*c));
    // The unit tests load these files, so a build cannot ship them broken; should one anyway,
    // nothing drains: the XID checks answer error with the reason (valid()).
    XidCatalogue empty;
    empty.valid_ = false;
    empty.sxid_fatal_ = XidAction::kWatch;
    empty.version_ = "invalid built-in XID catalogue (" + c.error().to_string() + ")";
    return std::make_shared<const XidCatalogue>(std::move(empty));
  }();
  return kBuiltin;
}

Result<XidCatalogue> XidCatalogue::with_site_policy(const std::string& path) const {
  std::ifstream in(path);
  if (!in) return Error{"cannot read", path};
  std::stringstream ss;
  ss << in.rdbuf();
  XidCatalogue c = *this;
  try {
    c.read_policy(json::parse(ss.str()), true);
  } catch (const Bad& b) {
    return Error{b.field + ": " + b.message, path};
  } catch (const json::exception& e) {
    return Error{std::string("not valid JSON: ") + e.what(), path};
  }
  c.version_ += ", site policy " + path;
  return c;
}

XidVerdict XidCatalogue::by_bucket(const std::string& token) const {
  const auto it = buckets_.find(token);
  if (it == buckets_.end()) return {unlisted_, "", token};
  return {it->second.action, "", token.empty() ? "no action in the catalogue" : token};
}

// "<sub component> <Fatal|Nonfatal> ... (<intrInfo> <errorStatus> ...)": the row of the
// catalogue's decode sheet whose V1 (< R575) or V2 (>= R575) IntrInfo mask and errorStatus the
// message matches gives the action. Rows of both forms that match must agree; when they do not,
// or none matches, the severity word the driver wrote decides: Fatal (GPU or link) needs a reset
// (every Fatal row of the sheet but two says RESET_GPU), Nonfatal is reported.
std::optional<XidVerdict> XidCatalogue::decode_nvlink5(unsigned long long xid,
                                                       std::string_view detail) const {
  const std::size_t open = detail.find('(');
  std::optional<std::uint32_t> intr, status;
  if (open != std::string_view::npos) {
    std::string_view regs = detail.substr(open + 1);
    regs = regs.substr(0, regs.find(')'));
    std::istringstream in{std::string(regs)};
    std::string a, b;
    in >> a >> b;
    intr = hex_word(a);
    status = hex_word(b);
  }
  std::optional<std::string> token;
  bool disagree = false;
  if (intr && status) {
    for (const DecodeRow& row : decode_) {
      if (row.xid != xid) continue;
      if (!mask_matches(row.v1, *intr) && !mask_matches(row.v2, *intr)) continue;
      if (!row.status.empty() &&
          std::find(row.status.begin(), row.status.end(), *status) == row.status.end())
        continue;
      if (token && *token != row.immediate) disagree = true;
      token = row.immediate;
    }
  }
  if (token && !disagree) {
    XidVerdict v = by_bucket(*token);
    v.why = "decode " + *token;
    return v;
  }
  const std::string head{detail.substr(0, open)};
  std::istringstream words(head);
  for (std::string w; words >> w;) {
    for (char& ch : w) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (w == "fatal") return XidVerdict{XidAction::kResetGpu, "", "line says Fatal"};
    if (w == "nonfatal" || w == "non-fatal") return XidVerdict{XidAction::kNone, "", "Nonfatal"};
  }
  return std::nullopt;
}

XidVerdict XidCatalogue::judge(unsigned long long xid, std::string_view detail) const {
  const auto e = xids_.find(xid);
  const std::string name = e == xids_.end() ? "" : e->second.mnemonic;
  if (const auto o = overrides_.find(xid); o != overrides_.end())
    return {o->second, name, "policy"};
  if (e == xids_.end()) return {unlisted_, "", "not in " + version_};
  // read_policy gave every token of the catalogue a rule.
  const Rule& rule = buckets_.at(e->second.immediate);
  XidVerdict v;
  if (rule.reading == Reading::kRecoveryAction) {
    const std::optional<unsigned> a = xid154_recovery_action(detail);
    v = a ? recovery_action_verdict(*a)
          : XidVerdict{XidAction::kWatch, "", "recovery action unread"};
  } else if (rule.reading == Reading::kNvlink5Decode) {
    v = decode_nvlink5(xid, detail)
            .value_or(XidVerdict{XidAction::kWatch, "", "decode: no row, no severity word"});
  } else {
    v = by_bucket(e->second.immediate);
    if (!e->second.on_datacenter_gpus && v.action > unused_cap_) {
      v.action = unused_cap_;
      v.why += ", unused on A100 and newer";
    }
  }
  v.name = name;
  return v;
}

XidVerdict XidCatalogue::judge_sxid(unsigned long long sxid, bool fatal) const {
  // By number only where the line says Non-fatal: the driver reports some SXIDs either way
  // (19055, 19057, 19059 Fatal on LR10 and LS10: open-gpu-kernel-modules intr_ls10.c).
  if (const auto o = sxid_overrides_.find(sxid); o != sxid_overrides_.end() && !fatal)
    return {o->second, "", "policy"};
  return fatal ? XidVerdict{sxid_fatal_, "", "SXid Fatal"}
               : XidVerdict{sxid_non_fatal_, "", "SXid Non-fatal"};
}

const std::set<unsigned long long>& XidCatalogue::cancelled_by(unsigned long long xid) const {
  static const std::set<unsigned long long> kNone;
  const auto it = cancels_.find(xid);
  return it == cancels_.end() ? kNone : it->second;
}

std::optional<unsigned> xid154_recovery_action(std::string_view detail) {
  const std::size_t to = detail.find(" to 0x");
  if (to == std::string_view::npos) return std::nullopt;
  const char* begin = detail.data() + to + 6;
  unsigned v = 0;
  auto [end, ec] = std::from_chars(begin, detail.data() + detail.size(), v, 16);
  if (ec != std::errc() || end == begin) return std::nullopt;
  return v;
}

XidVerdict recovery_action_verdict(unsigned long long action) {
  switch (action) {
    case 0:
      return {XidAction::kNone, "", "none"};
    case 1:
      return {XidAction::kResetGpu, "", "GPU reset"};
    case 2:
      return {XidAction::kReboot, "", "node reboot"};
    case 3:
      // DRAIN_P2P is a step, not a verdict: DCGM 4.6's dcgm_errors.h message for it says to
      // stop the processes doing peer-to-peer traffic and check the GPU's health again after
      // draining; the driver then names the next action. DCGM 4.6's
      // DcgmHealthWatch::MonitorGpuRecoveryAction rates it WARN (review W4). Vigil warns and
      // acts on the action that follows (a later XID 154 or the next nvml_recovery read).
      return {XidAction::kWatch, "", "drain P2P (transitional: the driver names the next step)"};
    case 4:  // reduced capacity until a reset (DCGM: FAIL, DRAIN_AND_RESET)
      return {XidAction::kResetGpu, "", "drain P2P and GPU reset"};
    case 5:
      // RECOVER_IMEX_DOMAIN: the domain's IMEX daemons must recover; no part of this node has
      // failed (nvml.h "Recover IMEX Domain"). DCGM 4.6 does not fail on it: its range check
      // ends at DRAIN_AND_RESET (review W3). A warning, never a drain and never `service`, which
      // would mark a healthy tray for replacement; the IMEX daemon's own check judges the daemon.
      return {XidAction::kWatch, "",
              "recover the IMEX domain (the domain's daemons, not this GPU)"};
    default: {
      // Newer than nvml.h 13.3 (NVML bindings name 6 BUS_RESET and 7 SYSTEM_REBOOT): the driver
      // says the GPU needs something; a reboot clears whatever a reset would.
      char hex[24];
      std::snprintf(hex, sizeof hex, "0x%llx", action);
      return {XidAction::kReboot, "",
              std::string("recovery action ") + hex + ", unknown to this build (newer driver?)"};
    }
  }
}

}  // namespace vigil
