#include "counter_state.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <system_error>

#include "vigil/base/files.h"

namespace vigil {

namespace fs = std::filesystem;

namespace {

constexpr int kSchemaVersion = 1;

std::int64_t now_unix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string file_safe(std::string_view s) {
  std::string out(s.empty() ? "local" : s);
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) c = '_';
  }
  return out;
}

CounterState::CounterState(std::string state_dir, std::string_view check, std::string_view node)
    : dir_(std::move(state_dir)), check_(check) {
  if (dir_.empty()) return;
  path_ = (fs::path(dir_) / (check_ + "." + file_safe(node) + ".json")).string();
  std::ifstream in(path_);
  if (!in) return;  // first run
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    if (j.at("schema_version").get<int>() != kSchemaVersion) {
      throw nlohmann::json::other_error::create(501, "unknown schema_version", &j);
    }
    if (j.contains("time_unix")) previous_time_ = j["time_unix"].get<std::int64_t>();
    for (const auto& [key, value] : j.at("counters").items()) {
      previous_[key] = value.get<std::uint64_t>();
    }
    if (j.contains("figures")) {
      for (const auto& [key, values] : j["figures"].items()) {
        auto figures = values.get<std::vector<double>>();
        for (double v : figures) {
          if (!std::isfinite(v) || v < 0) {
            throw nlohmann::json::other_error::create(501, "figure not finite and >= 0", &j);
          }
        }
        figures_[key] = std::move(figures);
      }
    }
  } catch (const nlohmann::json::exception&) {
    previous_.clear();
    figures_.clear();
    previous_time_.reset();
    load_problem_ = "previous state malformed";
  }
}

CounterState::Change CounterState::update(const std::string& key, std::uint64_t current) {
  current_[key] = current;
  auto it = previous_.find(key);
  if (it == previous_.end()) {
    ++baselines_;
    return {};
  }
  if (current >= it->second) return {current - it->second, false};
  return {current, true};
}

std::optional<std::uint64_t> CounterState::previous(const std::string& key) const {
  auto it = previous_.find(key);
  if (it == previous_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::int64_t> CounterState::seconds_since_previous() const {
  if (!previous_time_) return std::nullopt;
  return now_unix() - *previous_time_;
}

const std::vector<double>& CounterState::recent_figures(const std::string& key) const {
  static const std::vector<double> kNone;
  auto it = figures_.find(key);
  return it == figures_.end() ? kNone : it->second;
}

void CounterState::remember_figure(const std::string& key, double value, std::size_t keep) {
  std::vector<double>& figures = figures_[key];
  figures.push_back(value);
  if (figures.size() > keep) {
    figures.erase(figures.begin(), figures.end() - static_cast<std::ptrdiff_t>(keep));
  }
}

VoidResult CounterState::save() const {
  if (dir_.empty()) return ok_result();
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Error{ec.message(), "create_directories(" + dir_ + ")"};
  nlohmann::json j;
  j["schema_version"] = kSchemaVersion;
  j["check"] = check_;
  j["time_unix"] = now_unix();
  j["counters"] = nlohmann::json::object();
  for (const auto& [key, value] : previous_) j["counters"][key] = value;
  for (const auto& [key, value] : current_) j["counters"][key] = value;
  if (!figures_.empty()) j["figures"] = figures_;
  if (auto w = replace_file_atomically(path_, j.dump(2) + "\n"); !w.ok()) return w.error();
  return ok_result();
}

}  // namespace vigil
