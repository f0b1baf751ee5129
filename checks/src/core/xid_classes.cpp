#include "core/xid_classes.h"

#include <charconv>
#include <cstdio>

namespace vigil {

std::optional<unsigned> xid154_recovery_action(std::string_view detail) {
  const std::size_t to = detail.find(" to 0x");
  if (to == std::string_view::npos) return std::nullopt;
  const char* begin = detail.data() + to + 6;
  unsigned v = 0;
  auto [end, ec] = std::from_chars(begin, detail.data() + detail.size(), v, 16);
  if (ec != std::errc() || end == begin) return std::nullopt;
  return v;
}

XidClass classify_xid154(std::optional<unsigned> action) {
  if (!action) return XidClass::kWarn;  // the driver's wording changed: look, do not drain
  if (*action == 0) return XidClass::kOther;
  if (*action == 3) return XidClass::kWarn;  // drain P2P: peer-to-peer traffic only
  return XidClass::kFatal;
}

std::string recovery_action_text(unsigned action) {
  switch (action) {
    case 0:
      return "none";
    case 1:
      return "gpu reset required";
    case 2:
      return "node reboot required";
    case 3:
      return "drain p2p";
    case 4:
      return "drain and reset";
    default: {
      char hex[16];
      std::snprintf(hex, sizeof hex, "0x%x", action);
      return std::string("recovery action ") + hex;
    }
  }
}

bool cleared_by_gpu_reset(std::string_view item) {
  if (!item.starts_with("XID ")) return false;
  item.remove_prefix(4);
  unsigned long long xid = 0;
  auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), xid);
  if (ec != std::errc()) return false;
  switch (xid) {
    case 48:
    case 74:
    case 95:
    case 119:
    case 120:
    case 140:
      return true;
    case 154:
      return item.find("reset") != std::string_view::npos;
    default:
      return false;
  }
}

}  // namespace vigil
