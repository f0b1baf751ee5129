#include "vigil/checks/sku.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <set>
#include <string_view>

#include "host/unit_names.h"
#include "vigil/config/strict_yaml.h"

namespace vigil {

const Threshold* SkuConfig::find(std::string_view check, std::string_view measurement) const {
  auto c = thresholds.find(std::string(check));
  if (c == thresholds.end()) return nullptr;
  auto m = c->second.find(std::string(measurement));
  return m == c->second.end() ? nullptr : &m->second;
}

const SkuConfig* SkuSet::by_name(std::string_view name) const {
  for (const auto& s : skus) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

namespace {

// An HCA name as sysfs spells it (mlx5_0, rocep24s0, ibp26s0) or an fnmatch pattern of one.
bool valid_device_pattern(const std::string& d) {
  return !d.empty() && d.size() <= 64 && std::all_of(d.begin(), d.end(), [](unsigned char c) {
    return std::isalnum(c) || std::string_view("_.-*?").find(c) != std::string_view::npos;
  });
}

// A threshold's op, fail, warn and unit into `t`; false when one is missing or malformed (each
// reported).
bool parse_bounds(YamlReader& w, const YAML::Node& n, const std::string& field, Threshold& t) {
  bool ok = true;
  if (!n["op"]) {
    w.error(n, field + ".op", "missing (\">=\" or \"<=\")");
    ok = false;
  } else if (auto s = w.text(n["op"], field + ".op"); !s) {
    ok = false;
  } else if (auto op = value_of(kOpNames, *s)) {
    t.op = *op;
  } else {
    w.error(n["op"], field + ".op", "must be \">=\" or \"<=\", got '" + *s + "'");
    ok = false;
  }
  if (!n["fail"]) {
    w.error(n, field + ".fail", "missing");
    ok = false;
  } else if (auto f = w.number(n["fail"], field + ".fail")) {
    t.fail = *f;
  } else {
    ok = false;
  }
  if (n["warn"]) {
    if (auto v = w.number(n["warn"], field + ".warn"))
      t.warn = *v;
    else
      ok = false;
  }
  if (!n["unit"]) {
    w.error(n, field + ".unit", "missing (e.g. GB/s, Gb/s, count)");
    ok = false;
  } else if (auto u = w.text(n["unit"], field + ".unit")) {
    t.unit = *u;
  } else {
    ok = false;
  }
  return ok;
}

// The `nccl_algorithm` of an all_reduce check's busbw threshold into `t`; false when invalid
// (reported).
bool parse_nccl_algorithm(YamlReader& w, const YAML::Node& a, const std::string& field,
                          const std::string& check, const std::string& measurement, Threshold& t) {
  // NCCL's algorithm names (src/init.cc ncclAlgoStr), as vigil-allreduce records them.
  static const std::set<std::string> kAlgorithms = {
      "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
  const bool allreduce = measurement == "busbw" && check.find("allreduce") != std::string::npos;
  if (!allreduce) {
    w.error(a, field + ".nccl_algorithm",
            "only an all_reduce check's busbw names an NCCL algorithm");
    return false;
  }
  const auto s = w.text(a, field + ".nccl_algorithm");
  if (s && kAlgorithms.count(*s)) {
    t.nccl_algorithm = *s;
    return true;
  }
  if (s)
    w.error(a, field + ".nccl_algorithm",
            "unknown NCCL algorithm '" + *s +
                "' (Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT)");
  return false;
}

void parse_threshold(YamlReader& w, const YAML::Node& n, const std::string& field, SkuConfig& sku,
                     const std::string& check, const std::string& measurement) {
  if (!w.only_keys(n, field,
                   {"op", "fail", "warn", "unit", "unconfirmed", "calibrated", "nccl_algorithm"}))
    return;
  Threshold t;
  bool ok = parse_bounds(w, n, field, t);
  if (const YAML::Node u = n["unconfirmed"]) {
    // Performance floors ship unconfirmed: warn-only until `vigil-drainer calibrate` replaces the
    // flag with `calibrated` (docs/thresholds.md, "Calibration").
    if (u.IsScalar() && (u.Scalar() == "true" || u.Scalar() == "false")) {
      t.unconfirmed = u.Scalar() == "true";
    } else {
      w.error(u, field + ".unconfirmed", "must be true or false");
      ok = false;
    }
  }
  if (const YAML::Node c = n["calibrated"]) {
    if (auto text = w.text(c, field + ".calibrated"); text && !text->empty()) {
      t.calibrated = *text;
    } else {
      if (text) w.error(c, field + ".calibrated", "must say when and from what data");
      ok = false;
    }
    if (ok && t.unconfirmed) {
      w.error(c, field + ".calibrated",
              "a calibrated bound is confirmed: remove `unconfirmed: true` (or this line)");
      ok = false;
    }
  }
  if (const YAML::Node a = n["nccl_algorithm"])
    ok = parse_nccl_algorithm(w, a, field, check, measurement, t) && ok;
  if (!ok) return;
  if (!is_known_unit(t.unit)) {
    w.error(n["unit"], field + ".unit", "unknown unit '" + t.unit + "' (see docs/thresholds.md)");
    return;
  }
  if (std::string why = t.validate(); !why.empty()) {
    bool warn_issue = why.rfind("warn", 0) == 0;
    w.error(warn_issue ? n["warn"] : n["fail"], field + (warn_issue ? ".warn" : ".fail"), why);
    return;
  }
  sku.thresholds[check][measurement] = t;
}

// The `match` section: which GPUs, and how many, make this SKU.
void walk_match(YamlReader& w, const YAML::Node& m, SkuMatch& match) {
  if (!w.only_keys(m, "match", {"gpu_names", "pci_device_ids", "gpu_count"})) return;
  if (m["gpu_names"]) {
    if (!m["gpu_names"].IsSequence())
      w.error(m["gpu_names"], "match.gpu_names", "must be a list");
    else
      for (const auto& n : m["gpu_names"])
        if (auto s = w.text(n, "match.gpu_names")) match.gpu_names.push_back(*s);
  }
  if (m["pci_device_ids"]) {
    if (!m["pci_device_ids"].IsSequence())
      w.error(m["pci_device_ids"], "match.pci_device_ids", "must be a list");
    else
      for (const auto& n : m["pci_device_ids"])
        // A PCI device id is 16 bits (config space offset 02h): a wider value is a typo.
        if (auto v = w.integer(n, "match.pci_device_ids", 0, 0xFFFF))
          match.pci_device_ids.push_back(static_cast<unsigned>(*v));
  }
  if (match.gpu_names.empty() && match.pci_device_ids.empty()) {
    w.error(m, "match", "needs gpu_names or pci_device_ids");
  }
  if (!m["gpu_count"])
    w.error(m, "match.gpu_count", "missing");
  else if (auto v = w.integer(m["gpu_count"], "match.gpu_count", 1, 1024))
    match.gpu_count = static_cast<int>(*v);
}

// The `infiniband` section: the node's fabric ports, their rate and link layer.
void walk_infiniband(YamlReader& w, const YAML::Node& ib, InfinibandSpec& spec) {
  if (!w.only_keys(ib, "infiniband", {"ports", "rate_gbps", "link_layer", "devices", "gpudirect"}))
    return;
  if (ib["devices"]) {
    if (!ib["devices"].IsSequence() || ib["devices"].size() == 0 || ib["devices"].size() > 64)
      w.error(ib["devices"], "infiniband.devices", "must be a list of 1 to 64 HCA names");
    else
      for (const auto& n : ib["devices"])
        if (auto d = w.text(n, "infiniband.devices")) {
          if (valid_device_pattern(*d))
            spec.devices.push_back(*d);
          else
            w.error(n, "infiniband.devices",
                    "'" + *d +
                        "' is not an HCA name or pattern (letters, digits, _ . - and the "
                        "wildcards * ?, at most 64 characters)");
        }
  }
  if (ib["gpudirect"])
    if (auto b = w.boolean(ib["gpudirect"], "infiniband.gpudirect")) spec.gpudirect = *b;
  if (ib["ports"])
    if (auto v = w.integer(ib["ports"], "infiniband.ports", 0, 1024))
      spec.ports = static_cast<int>(*v);
  if (ib["rate_gbps"])
    if (auto v = w.number(ib["rate_gbps"], "infiniband.rate_gbps")) spec.rate_gbps = *v;
  if (ib["link_layer"]) {
    const std::string layer = ib["link_layer"].IsScalar() ? ib["link_layer"].Scalar() : "";
    if (layer == "InfiniBand" || layer == "Ethernet")
      spec.link_layer = layer;
    else
      w.error(ib["link_layer"], "infiniband.link_layer",
              "must be InfiniBand or Ethernet (RoCE), as sysfs link_layer spells it");
  }
  if (spec.ports > 0 && spec.rate_gbps <= 0) {
    w.error(ib, "infiniband.rate_gbps", "required and > 0 when ports > 0");
  }
}

// The `services` section: systemd units the node must run.
void walk_services(YamlReader& w, const YAML::Node& sv, ServicesSpec& spec) {
  if (!w.only_keys(sv, "services", {"required"}) || !sv["required"]) return;
  const YAML::Node list = sv["required"];
  if (!list.IsSequence() || list.size() > 64) {
    w.error(list, "services.required", "must be a list of at most 64 systemd unit names");
    return;
  }
  for (const auto& n : list)
    if (auto u = w.text(n, "services.required")) {
      if (services::is_unit_name(*u))
        spec.required.push_back(services::with_suffix(*u));
      else
        w.error(n, "services.required",
                "'" + *u +
                    "' is not a systemd unit name (systemd.unit(5): letters, digits, "
                    ": _ . @ \\ -, not starting with -)");
    }
}

// The `mounts` section: filesystems the node must have mounted.
void walk_mounts(YamlReader& w, const YAML::Node& list, std::vector<MountSpec>& out) {
  if (!list.IsSequence() || list.size() > 64) {
    w.error(list, "mounts", "must be a list of at most 64 {path, fstype, rw, min_free_percent}");
    return;
  }
  for (const auto& m : list) {
    if (!w.only_keys(m, "mounts", {"path", "fstype", "rw", "min_free_percent"})) continue;
    MountSpec spec;
    if (auto p = w.text(m["path"], "mounts.path")) {
      if (p->front() == '/' && p->find('\n') == std::string::npos)
        spec.path = *p;
      else
        w.error(m["path"], "mounts.path", "'" + *p + "' is not an absolute path");
    }
    if (m["fstype"])
      if (auto t = w.text(m["fstype"], "mounts.fstype")) spec.fstype = *t;
    if (m["rw"])
      if (auto b = w.boolean(m["rw"], "mounts.rw")) spec.rw = *b;
    if (m["min_free_percent"]) {
      const auto v = w.number(m["min_free_percent"], "mounts.min_free_percent");
      if (v && (*v < 0 || *v > 100))
        w.error(m["min_free_percent"], "mounts.min_free_percent", "must be 0-100");
      else if (v)
        spec.min_free_percent = *v;
    }
    out.push_back(std::move(spec));
  }
}

// The `thresholds` section: check -> measurement -> threshold, for the known checks only.
void walk_thresholds(YamlReader& w, const YAML::Node& th, const std::set<std::string>& known,
                     SkuConfig& sku) {
  if (!th.IsMap()) {
    w.error(th, "thresholds", "must be a mapping of check -> measurement -> threshold");
    return;
  }
  for (const auto& ck : th) {
    if (!ck.first.IsScalar()) {
      w.error(ck.first, "thresholds", "keys must be check names, not lists or mappings");
      continue;
    }
    std::string check = ck.first.as<std::string>();
    std::string cfield = "thresholds." + check;
    if (!known.count(check)) {
      w.error(ck.first, cfield, "unknown check (see docs/thresholds.md for the list)");
      continue;
    }
    if (!ck.second.IsMap()) {
      w.error(ck.second, cfield, "must be a mapping of measurement -> threshold");
      continue;
    }
    for (const auto& mk : ck.second) {
      if (!mk.first.IsScalar()) {
        w.error(mk.first, cfield, "keys must be measurement names, not lists or mappings");
        continue;
      }
      std::string meas = mk.first.as<std::string>();
      parse_threshold(w, mk.second, cfield + "." + meas, sku, check, meas);
    }
  }
}

void walk_sku(YamlReader& w, const YAML::Node& root, const std::set<std::string>& known,
              SkuConfig& sku) {
  if (!w.only_keys(root, "",
                   {"sku", "description", "match", "infiniband", "nvlink", "services", "mounts",
                    "thresholds"}))
    return;
  if (!root["sku"])
    w.error(root, "sku", "missing (the SKU name, e.g. H100-SXM5-80GB)");
  else if (auto s = w.text(root["sku"], "sku"))
    sku.name = *s;
  if (const YAML::Node d = root["description"]) {
    if (d.IsScalar())
      sku.description = d.as<std::string>();
    else
      w.error(d, "description", "must be a string");
  }

  if (!root["match"])
    w.error(root, "match", "missing (gpu_names / pci_device_ids and gpu_count)");
  else
    walk_match(w, root["match"], sku.match);
  if (root["infiniband"]) walk_infiniband(w, root["infiniband"], sku.infiniband);
  if (const YAML::Node nv = root["nvlink"];
      nv && w.only_keys(nv, "nvlink", {"imex", "imex_resident"})) {
    if (nv["imex"])
      if (auto b = w.boolean(nv["imex"], "nvlink.imex")) sku.nvlink.imex = *b;
    if (nv["imex_resident"])
      if (auto b = w.boolean(nv["imex_resident"], "nvlink.imex_resident"))
        sku.nvlink.imex_resident = *b;
  }
  if (root["services"]) walk_services(w, root["services"], sku.services);
  if (root["mounts"]) walk_mounts(w, root["mounts"], sku.mounts);
  if (root["thresholds"]) walk_thresholds(w, root["thresholds"], known, sku);
}

}  // namespace

Loaded<SkuConfig> load_sku_file(const std::string& path, const std::set<std::string>& known) {
  Loaded<SkuConfig> out;
  YamlReader w(path);
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    out.errors.push_back({path, 0, "", "cannot read file"});
    return out;
  } catch (const YAML::ParserException& e) {
    out.errors.push_back({path, e.mark.line + 1, "", "YAML syntax error: " + e.msg});
    return out;
  }
  SkuConfig sku;
  sku.file = path;
  try {
    walk_sku(w, root, known, sku);
  } catch (const YAML::Exception& e) {
    // walk_sku checks each field's type before it reads it; this is the net under that, so a
    // shape nobody foresaw is still an error naming the file and line, never a crash.
    w.errors.push_back({path, e.mark.line + 1, "", "unreadable value: " + e.msg});
  }
  out.errors = std::move(w.errors);
  if (out.errors.empty()) out.value = std::move(sku);
  return out;
}

Loaded<SkuSet> load_sku_dir(const std::string& dir, const std::set<std::string>& known) {
  Loaded<SkuSet> out;
  std::error_code ec;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    auto ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml"))
      files.push_back(e.path().string());
  }
  if (ec) {
    out.errors.push_back({dir, 0, "", "cannot read thresholds directory: " + ec.message()});
    return out;
  }
  if (files.empty()) {
    out.errors.push_back({dir, 0, "", "no *.yaml threshold files found"});
    return out;
  }
  std::sort(files.begin(), files.end());
  SkuSet set;
  auto site = load_site_checks(dir + "/" + kSiteChecksDir);
  out.errors.insert(out.errors.end(), site.errors.begin(), site.errors.end());
  std::set<std::string> names = known;
  for (const SiteCheckSpec& s : site.value.value_or(std::vector<SiteCheckSpec>{})) {
    names.insert(s.name);
    set.site_checks.push_back(s);
  }
  for (const auto& f : files) {
    auto one = load_sku_file(f, names);
    out.errors.insert(out.errors.end(), one.errors.begin(), one.errors.end());
    if (!one.value) continue;
    if (const SkuConfig* prev = set.by_name(one.value->name)) {
      out.errors.push_back(
          {f, 0, "sku", "duplicate SKU '" + one.value->name + "' (also in " + prev->file + ")"});
      continue;
    }
    set.skus.push_back(std::move(*one.value));
  }
  const std::string det = dir + "/" + detect::kDetectionFileName;
  if (std::filesystem::exists(det, ec)) {
    if (auto c = detect::load_config_file(det); c.ok())
      set.detection = std::make_shared<const detect::DetectConfig>(std::move(*c));
    else {
      std::string why = c.error().message;
      if (why.rfind(det + ": ", 0) == 0) why.erase(0, det.size() + 2);
      out.errors.push_back({det, 0, "", why});
    }
  }
  const std::string xid = dir + "/" + kXidPolicyFileName;
  if (std::filesystem::exists(xid, ec)) {
    if (auto c = XidCatalogue::builtin()->with_site_policy(xid); c.ok())
      set.xid = std::make_shared<const XidCatalogue>(std::move(*c));
    else
      out.errors.push_back({xid, 0, "", c.error().message});
  }
  if (out.errors.empty()) out.value = std::move(set);
  return out;
}

namespace {
// Exact model identity, never a substring: "NVIDIA GH200 480GB" contains "H200",
// "NVIDIA GB200" contains "B200" and "NVIDIA H200 NVL" (PCIe, bridged) contains "H200", yet each
// is another product with another GPU count and other floors. The PCI device id decides when
// the GPU reports one and the SKU lists ids (it is what NVIDIA's own tools key SKUs by: DCGM's
// diag-skus.yaml); else the full NVML name, compared without case and surrounding blanks.
bool same_name(std::string_view a, std::string_view b) {
  auto trim = [](std::string_view v) {
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
    return v;
  };
  a = trim(a);
  b = trim(b);
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool gpu_matches(const SkuMatch& m, const std::string& name, std::optional<unsigned> device_id) {
  if (device_id && *device_id != 0 && !m.pci_device_ids.empty()) {
    return std::find(m.pci_device_ids.begin(), m.pci_device_ids.end(), *device_id) !=
           m.pci_device_ids.end();
  }
  return std::any_of(m.gpu_names.begin(), m.gpu_names.end(),
                     [&](const std::string& n) { return same_name(n, name); });
}
}  // namespace

const SkuConfig* detect_sku(const SkuSet& set, const GpuInventory& inv) {
  if (inv.gpu_names.empty()) return nullptr;
  const int seen = static_cast<int>(inv.gpu_names.size());
  const SkuConfig* best = nullptr;
  for (const auto& sku : set.skus) {
    bool all = true;
    for (size_t i = 0; i < inv.gpu_names.size() && all; ++i) {
      std::optional<unsigned> id;
      if (i < inv.pci_device_ids.size()) id = inv.pci_device_ids[i];
      all = gpu_matches(sku.match, inv.gpu_names[i], id);
    }
    if (!all) continue;
    // Exact count wins. Otherwise the model match with the fewest GPUs above the count seen: a
    // node that lost a GPU must still be judged against its SKU so gpu_count fails instead of
    // going unknown, and with files for a 4- and an 8-GPU board a 4-GPU node that lost one is
    // judged as the 4-GPU board.
    if (sku.match.gpu_count == seen) return &sku;
    if (sku.match.gpu_count > seen && (!best || sku.match.gpu_count < best->match.gpu_count))
      best = &sku;
  }
  return best;
}

}  // namespace vigil
