// The registry against the check catalog (vigil/report/check_catalog.h): each of the three lists
// (all_checks, passive_checks, fabric_checks) is the catalog filtered by its suite, in order,
// with the same short names and time boxes; and what derives from the catalog (the drainer's
// fatal and noisy defaults, vigil::detect's metrics, known_check_names) names registered checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "vigil/checks/registry.h"
#include "vigil/detect/config.h"
#include "vigil/drainer/config.h"
#include "vigil/report/check_catalog.h"

namespace vigil {
namespace {

// What the catalog and a Check both say about a check, printable for gtest.
struct Identity {
  std::string name;
  std::string short_name;
  long timeout_s = 0;
  bool operator==(const Identity&) const = default;
};
void PrintTo(const Identity& i, std::ostream* os) {
  *os << i.name << " (" << i.short_name << ", " << i.timeout_s << " s)";
}

// The checks of `checks` that `suite` runs (none given: all of them).
std::vector<Identity> identities(const std::vector<std::unique_ptr<Check>>& checks,
                                 std::optional<CheckSuite> suite = std::nullopt) {
  std::vector<Identity> out;
  for (const auto& c : checks)
    if (!suite || find_check_spec(c->name())->runs_in(*suite))
      out.push_back({std::string(c->name()), std::string(c->short_name()),
                     static_cast<long>(c->timeout().count())});
  return out;
}

// The catalog's entries that run in any of `suites`, in order.
std::vector<Identity> catalog_suite(std::initializer_list<CheckSuite> suites) {
  std::vector<Identity> out;
  for (const CheckSpec& s : check_catalog())
    if (std::any_of(suites.begin(), suites.end(), [&](CheckSuite x) { return s.runs_in(x); }))
      out.push_back(
          {std::string(s.name), std::string(s.short_name), static_cast<long>(s.timeout.count())});
  return out;
}

std::vector<std::unique_ptr<Check>> every_passive_check() {
  return passive_checks({.after_job = true, .cuda_sanity = true});
}

TEST(CheckCatalogRegistry, the_quick_suite_is_the_catalogs_quick_entries_in_order) {
  EXPECT_EQ(identities(all_checks(), CheckSuite::kQuick), catalog_suite({CheckSuite::kQuick}));
}

TEST(CheckCatalogRegistry, the_full_suite_is_the_catalogs_full_entries_in_order) {
  EXPECT_EQ(identities(all_checks(), CheckSuite::kFull), catalog_suite({CheckSuite::kFull}));
}

// The qualify suite runs every full-suite check and its own (docs/qualify.md).
TEST(CheckCatalogRegistry, all_checks_is_the_catalogs_full_and_qualify_entries_in_order) {
  EXPECT_EQ(identities(all_checks()), catalog_suite({CheckSuite::kFull, CheckSuite::kQualify}));
}

// The epilog's suite (after_job) has gpu_leftovers and not host_idle_memory, the prolog's and
// HealthCheckProgram's the other way round (registry.cpp passive_checks).
TEST(CheckCatalogRegistry, the_passive_suite_is_the_catalogs_passive_entries_in_order) {
  const auto without = [](std::string_view name) {
    auto v = catalog_suite({CheckSuite::kPassive});
    std::erase_if(v, [&](const Identity& i) { return i.name == name; });
    return v;
  };
  EXPECT_EQ(identities(every_passive_check()), without("host_idle_memory"));
  EXPECT_EQ(identities(passive_checks({.after_job = false, .cuda_sanity = true})),
            without("gpu_leftovers"));
}

TEST(CheckCatalogRegistry, fabric_checks_is_the_catalogs_fabric_entries_in_order) {
  EXPECT_EQ(identities(fabric_checks()), catalog_suite({CheckSuite::kFabric}));
  EXPECT_EQ(identities(domain_checks()), catalog_suite({CheckSuite::kDomain}));
}

// Both directions by name, so a failure says which check lacks what.
TEST(CheckCatalogRegistry, every_registered_check_has_an_entry_and_every_entry_a_check) {
  std::set<std::string> registered;
  for (const auto& c : all_checks()) registered.emplace(c->name());
  for (const auto& c : every_passive_check()) registered.emplace(c->name());
  for (const auto& c : fabric_checks()) registered.emplace(c->name());
  for (const auto& c : domain_checks()) registered.emplace(c->name());
  for (const std::string& name : registered)
    EXPECT_NE(find_check_spec(name), nullptr) << name << " is registered but not in the catalog";
  for (const CheckSpec& s : check_catalog())
    EXPECT_TRUE(registered.count(std::string(s.name)))
        << s.name << " is in the catalog but in no registry list";
  EXPECT_EQ(known_check_names(), registered);
}

TEST(CheckCatalogRegistry, the_drainers_default_policy_takes_fatal_and_noisy_from_the_catalog) {
  const drainer::PolicyConfig p = drainer::default_policy();
  for (const CheckSpec& s : check_catalog()) {
    const std::string name(s.name);
    EXPECT_EQ(p.fatal_checks.count(name) > 0, s.severity == CheckSeverity::kFatal) << name;
    const auto it = p.checks.find(name);
    if (s.severity == CheckSeverity::kNoisy) {
      ASSERT_NE(it, p.checks.end()) << name << " is noisy but has no per-check policy";
      EXPECT_EQ(it->second.drain_after, 3) << name;
      EXPECT_EQ(it->second.resume_after, 2) << name;
    } else {
      EXPECT_EQ(it, p.checks.end()) << name << " has a per-check policy but is not noisy";
    }
  }
  for (const auto& [name, policy] : p.checks)
    EXPECT_NE(find_check_spec(name), nullptr) << name << ": a default policy for no check";
}

TEST(CheckCatalogRegistry, detects_default_metrics_are_the_catalogs_in_order) {
  std::vector<std::string> expected;
  for (const CheckSpec& s : check_catalog())
    for (const PerfMetric& m : s.metrics)
      expected.push_back(std::string(s.name) + "/" + std::string(m.measurement) + "/" +
                         std::string(m.unit) + "/" + std::string(m.kind) +
                         (m.higher_is_better ? "/higher" : "/lower"));
  std::vector<std::string> got;
  const detect::DetectConfig defaults = detect::DetectConfig::defaults();
  for (const detect::MetricSpec& m : defaults.metrics)
    got.push_back(m.check + "/" + m.measurement + "/" + m.unit + "/" + m.kind + "/" +
                  std::string(detect::to_string(m.direction)));
  EXPECT_FALSE(got.empty());
  EXPECT_EQ(got, expected);
  const std::set<std::string> known = known_check_names();
  for (const detect::MetricSpec& m : defaults.metrics)
    EXPECT_TRUE(known.count(m.check)) << m.check << ": a metric of no registered check";
}

}  // namespace
}  // namespace vigil

namespace vigil {
namespace {

// The README's "What Vigil checks" names every check of the catalog, so a new check cannot land
// without its line there (and its sources' document).
TEST(CheckCatalogRegistry, the_readme_names_every_check) {
  std::ifstream in(std::string(VIGIL_SOURCE_DIR) + "/README.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  const size_t section = readme.find("## What Vigil checks");
  ASSERT_NE(section, std::string::npos);
  const std::string table = readme.substr(section, readme.find("\n## ", section + 1) - section);
  for (const CheckSpec& s : check_catalog())
    EXPECT_NE(table.find("`" + std::string(s.name) + "`"), std::string::npos) << s.name;
}

}  // namespace
}  // namespace vigil
