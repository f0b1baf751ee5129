// Kernel log lines (outside input: anything a driver, a module or a user writes to /dev/kmsg):
// the /dev/kmsg record, XID and SXID parsers and the catalogue's judgement never crash, and a
// judged XID's action is one of Vigil's five.
#include <string>

#include "fuzz_support.h"
#include "passive/kmsg_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = vigil::fuzz::as_text(data, size);
  const auto catalogue = vigil::XidCatalogue::builtin();
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t nl = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, nl - start);
    start = nl + 1;
    std::string message(line);
    if (auto rec = vigil::kmsg::parse_record(line)) message = rec->message;
    if (auto x = vigil::kmsg::parse_xid(message)) {
      const auto v = catalogue->judge(x->xid, x->detail);
      if (!vigil::value_of(vigil::kXidActionNames, vigil::to_string(v.action)))
        vigil::fuzz::broken("action");
      (void)vigil::kmsg::remembered_action("XID " + std::to_string(x->xid) + " " + x->device +
                                               " (" + std::string(vigil::to_string(v.action)) + ")",
                                           *catalogue);
    }
    (void)vigil::kmsg::parse_sxid(message);
    (void)vigil::kmsg::remembered_action(message, *catalogue);
  }
  return 0;
}
