#pragma once
// Shared helpers for the InfiniBand check tests: fixture paths, a self-removing temp dir,
// SKU configs with IB expectations, and lookups into a CheckResult.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "check_factories.h"
#include "temp_dir.h"
#include "vigil/checks/check.h"
#include "vigil/checks/sku.h"

namespace vigil::ib_test {

namespace fs = std::filesystem;

inline fs::path fixture(const std::string& name) {
  return fs::path(VIGIL_SOURCE_DIR) / "tests" / "fixtures" / "sysfs" / name;
}

inline fs::path node_fixture(const std::string& node) {
  return fs::path(VIGIL_SOURCE_DIR) / "tests" / "fixtures" / "nodes" / node / "sysfs";
}

using vigil::testing::TempDir;

// Copies a fixture root into `dir`/root so a test can damage it.
inline fs::path copy_fixture(const std::string& name, const TempDir& dir) {
  fs::path dst = fs::path(dir.path()) / "root";
  fs::copy(fixture(name), dst, fs::copy_options::recursive);
  return dst;
}

inline fs::path port_dir(const fs::path& root, const std::string& hca, const std::string& port) {
  return root / "sys" / "class" / "infiniband" / hca / "ports" / port;
}

inline void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// Replaces a file by a directory of the same name: reading it then fails with EISDIR, also
// for root (for whom chmod 000 would not block the read).
inline void make_unreadable(const fs::path& file) {
  fs::remove(file);
  fs::create_directory(file);
}

inline Threshold threshold(Op op, double fail, std::optional<double> warn,
                           const std::string& unit) {
  Threshold t;
  t.op = op;
  t.fail = fail;
  t.warn = warn;
  t.unit = unit;
  return t;
}

// An 8-GPU SKU with `ports` InfiniBand ports at `rate` Gb/s.
inline SkuConfig ib_sku(int ports = 8, double rate = 400) {
  SkuConfig sku;
  sku.name = "TEST-IB";
  sku.infiniband.ports = ports;
  sku.infiniband.rate_gbps = rate;
  return sku;
}

inline CheckContext context(const fs::path& root, const SkuConfig* sku = nullptr,
                            const std::string& state_dir = "", const std::string& node = "gpu-0") {
  CheckContext ctx;
  ctx.node = node;
  ctx.sysfs_root = root.string();
  ctx.sku = sku;
  ctx.state_dir = state_dir;
  return ctx;
}

inline const Measurement* find(const CheckResult& r, const std::string& name,
                               const std::optional<std::string>& port = std::nullopt) {
  for (const auto& m : r.measurements) {
    if (m.name == name && m.port == port) return &m;
  }
  return nullptr;
}

inline int count_named(const CheckResult& r, const std::string& name) {
  int n = 0;
  for (const auto& m : r.measurements) n += m.name == name ? 1 : 0;
  return n;
}

}  // namespace vigil::ib_test
