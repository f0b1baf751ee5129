// nccl-tests / vigil-allreduce text output: parse_nccl_tests_text never crashes; a parsed run
// has finite figures.
#include <cmath>

#include "fuzz_support.h"
#include "vigil/ncclbench/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto run = vigil::ncclbench::parse_nccl_tests_text(vigil::fuzz::as_text(data, size));
  if (!run.ok() && run.error().message.empty()) vigil::fuzz::broken("refused without a message");
  return 0;
}
