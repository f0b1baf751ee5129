#pragma once
// Slurm's rules for a string that must name exactly one node, shared by the report codec (a
// report's node) and the Slurm clients (every name they send), so no caller can drain "ALL".
#include <optional>
#include <string>
#include <string_view>

namespace vigil {

// Why Slurm would read `name` as something other than that one node, or nullopt: a keyword
// ("ALL" selects every node in scontrol and slurm_update_node, any case; "DEFAULT" sets
// defaults in slurm.conf), or a numeric suffix of more than 18 digits, which libslurm's
// hostlist reads as an unsigned long and wraps to another name (found by fuzz_hostlist:
// "u222222222222222222207" came back "u018446744073709551615"). 19 and 20 digits would fit an
// unsigned long, but libslurm 22.05's hostlist crashes (SIGSEGV) expanding a range that ends
// at ULONG_MAX, "n[18446744073709551614-18446744073709551615]" (tried 2026-11-26); 18 digits
// keep every range Vigil builds well below it. No real cluster names nodes that way.
std::optional<std::string> slurm_name_problem(std::string_view name);

}  // namespace vigil
