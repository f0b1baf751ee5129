#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "inventory.h"
#include "nvml/nvml_loader.h"
#include "vigil/checks/passive.h"
#include "vigil/checks/registry.h"
#include "vigil/checks/runner.h"

namespace vigil {

namespace {

using SteadyClock = std::chrono::steady_clock;

// The child: pin NVML, detect the SKU, run every check in-process, one JSON line each.
std::string run_in_suite_child(const CheckContext& ctx, const SkuSet* skus,
                               PassiveSelection selection, SteadyClock::time_point deadline,
                               const ChildSend& send) {
  RunOptions opts;
  opts.isolate = false;      // this child is the isolation
  opts.deadline = deadline;  // each check learns what is left of the box (site checks' commands)
  opts.on_result = [&](const CheckResult& r) { send(to_json(r).dump() + "\n"); };
  // Checks that need neither NVML nor the SKU run before anything attaches to the driver: a
  // wedged GPU can block the attach itself (passive_checks).
  auto checks = passive_checks(selection, skus);
  std::vector<std::unique_ptr<Check>> first;
  for (auto& check : checks)
    if (check && check->name() == "kmsg_xid") first.push_back(std::move(check));
  std::erase(checks, nullptr);
  run_checks(first, ctx, opts);

  CheckContext c = ctx;
  auto pinned = nvml::Library::open(c.nvml_library);  // failures: the NVML checks report them
  nlohmann::json head{{"sku", c.sku ? c.sku->name : ""}, {"note", ""}};
  if (pinned) {
    auto inv = read_gpu_inventory_here(c.nvml_library);
    if (inv) {
      c.gpu_count = static_cast<int>(inv->gpu_names.size());
      if (!c.sku && skus) {
        c.sku = detect_sku(*skus, *inv);
        if (c.sku)
          head["sku"] = c.sku->name;
        else
          head["note"] = "no SKU matches this node's GPUs";
      }
    } else if (!c.sku) {
      head["note"] = "SKU unknown: " + inv.error().to_string();
    }
  } else if (!c.sku) {
    head["note"] = "SKU unknown: " + pinned.error().to_string();
  }
  send(head.dump() + "\n");
  run_checks(checks, c, opts);
  return "";
}

}  // namespace

PassiveRun run_passive_suite(const CheckContext& ctx, const SkuSet* skus,
                             PassiveSelection selection, SteadyClock::time_point deadline,
                             const std::function<void(const CheckResult&)>& progress) {
  PassiveRun run;
  run.sku = ctx.sku;
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
  std::string partial;
  auto out = run_in_child(
      [&](const ChildSend& send) {
        return run_in_suite_child(ctx, skus, selection, deadline, send);
      },
      std::max(left, std::chrono::milliseconds(1)), &partial);

  std::map<std::string, std::string> unparsed;  // check -> why its result did not parse
  std::istringstream lines(partial);
  std::string line;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;  // a line cut by the kill
    if (!j.contains("check")) {                        // the SKU line, sent after the driver attach
      const std::string name = j.value("sku", "");
      if (!name.empty() && skus) run.sku = skus->by_name(name);
      run.sku_note = j.value("note", "");
      continue;
    }
    auto parsed = parse_check_result(j);
    if (!parsed) {  // said, not dropped: a check whose result does not parse is Vigil's bug
      if (j["check"].is_string()) unparsed[j["check"].get<std::string>()] = parsed.error;
      continue;
    }
    if (progress) progress(*parsed.value);
    run.results.push_back(std::move(*parsed.value));
  }
  // Checks the child never reported: killed by the time box, or the child died.
  const std::string why = out ? "no result from the suite" : out.error().message;
  const bool timed_out = !out && why.rfind("timed out", 0) == 0;
  std::vector<CheckResult> ordered;
  for (const auto& check : passive_checks(selection, skus)) {
    bool have = false;
    for (auto& r : run.results) {
      if (r.check != check->name()) continue;
      ordered.push_back(std::move(r));
      have = true;
      break;
    }
    if (have) continue;
    if (auto bad = unparsed.find(std::string(check->name())); bad != unparsed.end()) {
      CheckResult r = error(check->name(), "check produced no valid result (" + bad->second + ")",
                            "VIGIL-CHECK-CRASH");
      r.short_name = std::string(check->short_name());
      if (progress) progress(r);
      ordered.push_back(std::move(r));
      continue;
    }
    CheckResult r = error(check->name(),
                          timed_out ? "not finished: the hook's time box was spent (suite " + why +
                                          "); a slow check is not a node fault"
                                    : "not run: suite " + why,
                          timed_out ? "VIGIL-CHECK-TIMEOUT" : "VIGIL-CHECK-CRASH");
    r.short_name = std::string(check->short_name());
    if (progress) progress(r);
    ordered.push_back(std::move(r));
  }
  run.results = std::move(ordered);
  return run;
}

}  // namespace vigil
