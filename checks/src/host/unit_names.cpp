#include "host/unit_names.h"

namespace vigil::services {

bool is_unit_name(std::string_view name) {
  return !name.empty() && name.size() <= 255 && name[0] != '-' &&
         name.find_first_not_of(
             "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
             ":_.@\\-") == std::string_view::npos;
}

std::string with_suffix(std::string name) {
  static constexpr const char* kTypes[] = {".service", ".socket", ".mount",    ".target",
                                           ".timer",   ".path",   ".device",   ".swap",
                                           ".slice",   ".scope",  ".automount"};
  for (const char* t : kTypes)
    if (name.ends_with(t)) return name;
  return name + ".service";
}

}  // namespace vigil::services
