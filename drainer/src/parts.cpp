// Part history; see parts.h.
#include "vigil/drainer/parts.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "vigil/report/check_catalog.h"

namespace vigil::drainer {

nlohmann::json parts_to_json(const std::vector<PartRecord>& parts) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : parts) {
    nlohmann::json j = {{"index", p.index}, {"drains", p.drains}};
    if (!p.serial.empty()) j["serial"] = p.serial;
    if (!p.uuid.empty()) j["uuid"] = p.uuid;
    out.push_back(std::move(j));
  }
  return out;
}

Result<std::vector<PartRecord>> parts_from_json(const nlohmann::json& j, bool one_per_slot) {
  if (!j.is_array()) return Error{"must be an array", "parts"};
  std::vector<PartRecord> out;
  for (const auto& e : j) {
    if (!e.is_object()) return Error{"an entry is not an object", "parts"};
    if (!e.contains("index") || !e["index"].is_number_integer() ||
        e["index"].get<long long>() < 0 || e["index"].get<long long>() > 1023)
      return Error{"index must be an integer 0..1023", "parts"};
    PartRecord p;
    p.index = e["index"].get<int>();
    for (const auto& seen : out)
      if (one_per_slot && seen.index == p.index)
        return Error{"slot " + std::to_string(p.index) + " twice", "parts"};
    for (auto [key, field] : {std::pair{"serial", &p.serial}, std::pair{"uuid", &p.uuid}}) {
      if (!e.contains(key)) continue;
      if (!e[key].is_string()) return Error{std::string(key) + " must be a string", "parts"};
      *field = e[key].get<std::string>();
    }
    if (e.contains("drains")) {
      if (!e["drains"].is_array()) return Error{"drains must be an array", "parts"};
      for (const auto& t : e["drains"]) {
        if (!t.is_number_integer()) return Error{"drains must hold unix times", "parts"};
        p.drains.push_back(t.get<int64_t>());
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

namespace {

// Whether a report's part is another than the one recorded: an identifier both know differs.
bool swapped(const PartRecord& known, const GpuPart& seen) {
  if (!known.uuid.empty() && !seen.uuid.empty()) return known.uuid != seen.uuid;
  if (!known.serial.empty() && !seen.serial.empty()) return known.serial != seen.serial;
  return false;
}

void merge_drains(std::vector<int64_t>& into, const std::vector<int64_t>& more) {
  into.insert(into.end(), more.begin(), more.end());
  std::sort(into.begin(), into.end());
  into.erase(std::unique(into.begin(), into.end()), into.end());
}

std::string label(const PartRecord& p) {
  return p.serial.empty() ? "uuid " + p.uuid : "serial " + p.serial;
}

}  // namespace

bool same_part(const PartRecord& a, const PartRecord& b) {
  if (!a.uuid.empty() && !b.uuid.empty()) return a.uuid == b.uuid;
  if (!a.serial.empty() && !b.serial.empty()) return a.serial == b.serial;
  return false;
}

void collect_drains(const std::vector<PartRecord>& records, const PartRecord& part,
                    std::vector<int64_t>& out) {
  for (const auto& r : records)
    if (!r.drains.empty() && same_part(r, part)) merge_drains(out, r.drains);
}

std::vector<std::string> update_parts(std::vector<PartRecord>& parts,
                                      std::vector<PartRecord>& departed,
                                      const std::vector<GpuPart>& gpus,
                                      const PartLookup& elsewhere) {
  std::vector<std::string> notes;
  const std::vector<PartRecord> before = parts;  // a part moved between this node's slots
  // The history a part arriving in a slot brings: from this node and, by lookup, from others.
  // A part back in this node leaves `departed` (its drains go with it into the slot).
  auto history_of = [&](const PartRecord& part) {
    std::vector<int64_t> drains;
    collect_drains(before, part, drains);
    collect_drains(departed, part, drains);
    std::erase_if(departed, [&](const PartRecord& p) { return same_part(p, part); });
    if (elsewhere) merge_drains(drains, elsewhere(part));
    return drains;
  };
  for (const auto& g : gpus) {
    if (g.serial.empty() && g.uuid.empty()) continue;  // nothing to tell the part by
    auto it = std::find_if(parts.begin(), parts.end(),
                           [&](const PartRecord& p) { return p.index == g.index; });
    if (it == parts.end()) {
      PartRecord fresh{g.index, g.serial, g.uuid, {}};
      fresh.drains = history_of(fresh);
      if (!fresh.drains.empty())
        notes.push_back("gpu" + std::to_string(g.index) + " " + label(fresh) + ": " +
                        std::to_string(fresh.drains.size()) + " earlier drain(s) follow it");
      parts.push_back(std::move(fresh));
      continue;
    }
    if (!swapped(*it, g)) {  // the same part: learn what it did not say before
      if (it->uuid.empty()) it->uuid = g.uuid;
      if (it->serial.empty()) it->serial = g.serial;
      continue;
    }
    PartRecord fresh{g.index, g.serial, g.uuid, {}};
    fresh.drains = history_of(fresh);
    notes.push_back("gpu" + std::to_string(g.index) + " part changed (" + label(*it) + " -> " +
                    label(fresh) + "): " +
                    (fresh.drains.empty()
                         ? std::string("its history starts afresh")
                         : std::to_string(fresh.drains.size()) + " earlier drain(s) follow it"));
    if (!it->drains.empty()) {  // it may be fitted elsewhere: keep what it did
      std::erase_if(departed, [&](const PartRecord& p) { return same_part(p, *it); });
      departed.push_back(*it);
      if (departed.size() > kMaxDepartedParts) departed.erase(departed.begin());
    }
    *it = std::move(fresh);
  }
  std::sort(parts.begin(), parts.end(),
            [](const PartRecord& a, const PartRecord& b) { return a.index < b.index; });
  return notes;
}

std::set<int> failing_gpus(const std::vector<const CheckResult*>& results,
                           const std::vector<PartRecord>& parts) {
  std::set<int> out;
  for (const auto* r : results) {
    const CheckSpec* spec = find_check_spec(r->check);
    if (!spec || !spec->charges_part) continue;  // not a part's own fault (review W7)
    for (const auto& m : r->measurements)
      if (m.gpu && m.status() == Status::kFail) out.insert(*m.gpu);
  }
  if (2 * out.size() >= parts.size()) out.clear();  // most of the node: not one part's fault
  return out;
}

RecordedDrain record_drain(std::vector<PartRecord>& parts, const std::set<int>& gpus, int64_t now,
                           const PartRule& rule) {
  RecordedDrain rec;
  for (auto& p : parts) {
    if (!gpus.count(p.index)) continue;
    std::erase_if(p.drains, [&](int64_t t) { return t <= now - rule.window_s; });
    p.drains.push_back(now);
    rec.counted = true;
    if (!rec.offender && static_cast<int>(p.drains.size()) >= rule.drains) rec.offender = p;
  }
  return rec;
}

void forget_drain(std::vector<PartRecord>& parts, int64_t when) {
  if (when == 0) return;
  for (auto& p : parts)
    if (auto it = std::find(p.drains.begin(), p.drains.end(), when); it != p.drains.end())
      p.drains.erase(it);
}

std::string offender_text(const PartRecord& part, const PartRule& rule) {
  const int64_t days = rule.window_s / 86400;
  return "gpu" + std::to_string(part.index) + " " + label(part) + " drained " +
         std::to_string(part.drains.size()) + " times in " +
         (days >= 1 ? std::to_string(days) + " days" : std::to_string(rule.window_s) + " s");
}

}  // namespace vigil::drainer
