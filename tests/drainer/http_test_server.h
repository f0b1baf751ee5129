#pragma once
// A vigil-drainer HTTP listener on 127.0.0.1:0 over a Drainer with a fake Slurm of 4 nodes, for
// the API tests (http_api_test.cpp) and the listener's limits (http_server_test.cpp).
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include "fake_clock.h"
#include "fakes.h"
#include "temp_dir.h"
#include "vigil/drainer/http_server.h"
#include "vigil/drainer/journal.h"

namespace vigil::drainer {

using testing::FakeClock;
using testing::FakeSlurm;
using testing::make_check;
using testing::make_report;
using testing::TempDir;

inline const std::string kToken = "s3cret-token-0123456789";

struct Server {
  TempDir dir;
  FakeClock clock;
  std::shared_ptr<FakeSlurm> slurm = std::make_shared<FakeSlurm>();
  DrainerConfig cfg;
  std::unique_ptr<Drainer> d;
  std::unique_ptr<HttpServer> http;
  std::unique_ptr<httplib::Client> cli;
  int port = 0;  // where it listens on 127.0.0.1

  explicit Server(bool open_drainer = true, std::function<void(DrainerConfig&)> tweak = {}) {
    for (int i = 0; i < 4; ++i) slurm->add_node("gpu-" + std::to_string(i));
    cfg.listen_address = "127.0.0.1";
    cfg.listen_port = 0;
    cfg.auth_enabled = true;
    cfg.token = kToken;
    cfg.max_body_bytes = 64 * 1024;
    cfg.state_dir = dir.str();
    cfg.policy = default_policy();
    if (tweak) tweak(cfg);
    d = std::make_unique<Drainer>(cfg, slurm, nullptr, clock);
    if (open_drainer) {
      EXPECT_TRUE(d->open().ok());
    }
    http = std::make_unique<HttpServer>(*d, cfg);
    auto port = http->bind();
    EXPECT_TRUE(port.ok());
    EXPECT_TRUE(http->start().ok());
    this->port = port.value();
    cli = std::make_unique<httplib::Client>("127.0.0.1", port.value());
  }
  ~Server() { http->stop(); }

  httplib::Result post(const std::string& body, const std::string& token = kToken) {
    httplib::Headers h;
    if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
    return cli->Post("/v1/reports", h, body, "application/json");
  }
  size_t journal_records() {
    auto j = Journal::open(cfg.state_dir);
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(cfg.state_dir))
      if (e.path().filename().string().starts_with("journal-")) {
        std::ifstream in(e.path());
        std::string line;
        while (std::getline(in, line)) n++;
      }
    return n;
  }
};

inline std::string report_body(const std::string& node, const std::string& run,
                               Status st = Status::kPass) {
  return to_json(
             make_report(node, run, {make_check("nvml_ecc", st, st == Status::kFail ? 1 : 0, 0)}))
      .dump();
}

}  // namespace vigil::drainer
