// vigil-drainer YAML configuration: parse -> defaults -> validate never crashes, and a refusal
// names the source.
#include "fuzz_support.h"
#include "vigil/drainer/config_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto text = vigil::fuzz::as_text(data, size);
  if (vigil::fuzz::names_other_files(text, {"token_file"})) return 0;
  auto c = vigil::drainer::parse_config(text, "fuzz.yaml");
  if (!c.ok() && c.error().message.rfind("fuzz.yaml", 0) != 0)
    vigil::fuzz::broken("error does not name the file: " + c.error().message);
  return 0;
}
