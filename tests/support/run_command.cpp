// The tests' run_command is vigil::run_command (libs/base) with the options tests need: no
// output cap, the command outlives nothing it should not (its group is killed on timeout), and
// an exit status in shell form for assertion messages.
#include "run_command.h"

#include <sstream>

#include "vigil/base/process.h"

namespace vigil::testing {

std::string CommandResult::describe() const {
  std::ostringstream s;
  s << "exit " << exit_code << (timed_out ? " (timed out)" : "") << "\n--- stdout ---\n"
    << out << "\n--- stderr ---\n"
    << err;
  return s.str();
}

CommandResult run_command(const std::vector<std::string>& argv, const CommandOptions& options) {
  CommandResult result;
  LaunchOptions o;
  o.timeout = options.timeout;
  o.env.assign(options.env.begin(), options.env.end());
  o.unset_env = options.unset_env;
  o.cwd = options.cwd;
  o.stdin_data = options.stdin_data;
  o.max_output = std::size_t{1} << 30;
  // Tests start daemons through scripts that return while the daemons run on.
  o.die_with_parent = false;
  auto r = vigil::run_command(argv, o);
  if (!r.ok()) {
    result.err = "run_command: " + r.error().to_string();
    return result;
  }
  result.timed_out = r->timed_out;
  result.out = std::move(r->out);
  result.err = std::move(r->err);
  result.exit_code = r->term_signal ? 128 + r->term_signal : r->exit_code;
  return result;
}

CommandResult run_shell(const std::string& script, const CommandOptions& options) {
  return run_command({"bash", "-c", script}, options);
}

}  // namespace vigil::testing
