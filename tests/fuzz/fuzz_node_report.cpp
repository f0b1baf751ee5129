// NodeReport JSON (POST /v1/reports bodies, spool files): parse; whatever parses must survive
// a round trip through to_json unchanged.
#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "vigil/report/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parsed = vigil::parse_node_reports(vigil::fuzz::as_text(data, size));
  if (!parsed) {
    if (parsed.error.empty()) vigil::fuzz::broken("refused without an error message");
    return 0;
  }
  nlohmann::json again = nlohmann::json::array();
  for (const auto& r : *parsed.value) again.push_back(vigil::to_json(r));
  auto reparsed = vigil::parse_node_reports(again.dump());
  if (!reparsed) vigil::fuzz::broken("its own output does not parse: " + reparsed.error);
  nlohmann::json third = nlohmann::json::array();
  for (const auto& r : *reparsed.value) third.push_back(vigil::to_json(r));
  if (third != again) vigil::fuzz::broken("round trip changed the report");
  return 0;
}
