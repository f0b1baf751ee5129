#pragma once
// host_services' systemd reader, apart from the check so that it is tested on captured output.
//
// `systemctl show -p P1 -p P2 ... -- U1 U2 ...` prints one block of "Property=value" lines per
// unit, in the order the units were named, blocks separated by an empty line; a property the
// running systemd does not know is left out, and a unit that does not exist still gets a block
// (LoadState=not-found). Captured from systemd 252 booted as PID 1 (tests/fixtures/systemd,
// SOURCES.md there). systemctl(1): "show ... intended to be used whenever computer-parsable
// output is required".
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/unit_names.h"

namespace vigil::services {

// The properties of one unit host_services reads (systemd.unit(5), org.freedesktop.systemd1(5)).
struct UnitState {
  std::string id;         // Id: the unit's own name (an alias shows the unit it points to)
  std::string load;       // LoadState: loaded, not-found, masked, bad-setting, error
  std::string active;     // ActiveState: active, reloading, inactive, failed, activating, ...
  std::string sub;        // SubState: running, exited, dead, failed, auto-restart, ...
  std::string result;     // Result: success, exit-code, signal, core-dump, timeout, ...
  std::string unit_file;  // UnitFileState: enabled, disabled, static, masked, "" ...
  std::string type;       // Type: simple, forking, oneshot, notify, ...
  std::optional<std::uint64_t> restarts;  // NRestarts (systemd 235+): automatic restarts
};

// The properties host_services asks for, in systemctl's -p spelling.
inline constexpr const char* kProperties[] = {"Id",     "LoadState",     "ActiveState", "SubState",
                                              "Result", "UnitFileState", "NRestarts",   "Type"};

// One UnitState per block of `systemctl show` output, in order.
std::vector<UnitState> parse_show(std::string_view text);

}  // namespace vigil::services
