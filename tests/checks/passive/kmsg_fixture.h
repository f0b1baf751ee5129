#pragma once
// A node for kmsg_xid: a fake kernel log (a plain file of /dev/kmsg records), a fake boot id and
// a state dir for the cursor, in a temp dir of its own.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "check_factories.h"
#include "temp_dir.h"

namespace vigil::testing {

class KmsgFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_.node = "gpu-0";
    ctx_.state_dir = dir_.file("state");
    ctx_.kmsg_path = dir_.file("kmsg");
    ctx_.proc_root = dir_.file("proc");
    boot("boot-1");
    log("");
  }
  void boot(const std::string& id) {
    std::filesystem::create_directories(dir_.file("proc/sys/kernel/random"));
    dir_.write("proc/sys/kernel/random/boot_id", id + "\n");
  }
  // The log's whole text, records as /dev/kmsg prints them.
  void log(const std::string& text) { dir_.write("kmsg", text); }
  // Driver lines as records, sequence numbers from `seq`.
  void log_lines(const std::vector<std::string>& lines, int seq = 1) {
    std::string text;
    for (const std::string& l : lines) text += "3," + std::to_string(seq++) + ",100,-;" + l + "\n";
    log(text);
  }
  CheckResult run() { return make_kmsg_xid_check()->run(ctx_); }

  TempDir dir_;
  CheckContext ctx_;
};

}  // namespace vigil::testing
