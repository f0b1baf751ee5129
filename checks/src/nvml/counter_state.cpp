#include "counter_state.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <system_error>

namespace vigil::nvml {

namespace fs = std::filesystem;

CounterState::CounterState(std::string state_dir, std::string_view check)
    : dir_(std::move(state_dir)), check_(check) {
  if (dir_.empty()) return;
  path_ = (fs::path(dir_) / (check_ + ".json")).string();
  std::ifstream in(path_);
  if (!in) return;  // first run
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    for (const auto& [key, value] : j.at("counters").items()) {
      previous_[key] = value.get<std::uint64_t>();
    }
  } catch (const nlohmann::json::exception& e) {
    previous_.clear();
    load_problem_ = "state file " + path_ + " unusable (" + e.what() + "), baseline re-recorded";
  }
}

std::optional<std::uint64_t> CounterState::update(const std::string& key, std::uint64_t current) {
  current_[key] = current;
  auto it = previous_.find(key);
  if (it == previous_.end()) {
    ++baselines_;
    return std::nullopt;
  }
  return current >= it->second ? current - it->second : current;
}

VoidResult CounterState::save() const {
  if (dir_.empty()) return ok_result();
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Error{ec.message(), "create_directories(" + dir_ + ")"};
  nlohmann::json j;
  j["schema_version"] = 1;
  j["check"] = check_;
  j["updated_unix_s"] = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  j["counters"] = nlohmann::json::object();
  for (const auto& [key, value] : current_) j["counters"][key] = value;
  const std::string tmp = path_ + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(2) << '\n';
    out.flush();
    if (!out) return Error{"cannot write", tmp};
  }
  fs::rename(tmp, path_, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Error{"cannot rename into place", path_};
  }
  return ok_result();
}

}  // namespace vigil::nvml
