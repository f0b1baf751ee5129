#pragma once
// systemd unit names as a SKU file (`services.required`) and `vigil-check --stop-unit` give them:
// apart from host_services so that the SKU loader needs nothing of the check.
#include <string>
#include <string_view>

namespace vigil::services {

// Whether `name` may be handed to systemctl as a unit: systemd.unit(5)'s characters, at most
// 255 of them, never starting with '-' (so never an option of systemctl's own).
bool is_unit_name(std::string_view name);
// "nvidia-fabricmanager" -> "nvidia-fabricmanager.service": systemctl's own default suffix.
std::string with_suffix(std::string name);

}  // namespace vigil::services
