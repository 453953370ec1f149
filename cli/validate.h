#pragma once

// What `clustertwin validate`'s systems share (cli/validate_command.cpp) and
// each system's side of it (cli/SYSTEM/validate.cpp: a SystemValidation,
// made by make_SYSTEM_validation(), found through common/systems.def). The
// command names no system: its help, its options and its dispatch come from
// the registry's entries.

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/statistics.h"
#include "common/status.h"
#include "models/cluster/cluster_profile.h"

namespace CLI {
class App;
}

namespace clustertwin::cli {

struct ValidateArgs {
  std::string system;
  std::string real;
  std::string profile = "localhost-cpu";
  std::string costs_from;
  double max_error = 0;
  bool max_error_given = false;
  int warmup = 3;
  bool warmup_given = false;
  int cores = 0;  // a what-if machine's cores, for a twin that runs on the machine's (0: the profile's)
  bool cores_given = false;
  int drain = 2;
  bool json = false;
};

/// "+1.25%": a signed relative error.
std::string percent(double x);
/// Check-failed (exit 3) when `error` exceeds --max-error, naming `what`.
Status check(const ValidateArgs& a, double error, const std::string& what);

/// --costs-from's traces, none when it is not given.
std::vector<std::string> costs_from_paths(const ValidateArgs& a);

/// The median of the checks' signed step-time errors (`Check::error`).
template <class Check>
double median_error(const std::vector<Check>& checks) {
  std::vector<double> errors;
  for (const Check& c : checks)
    errors.push_back(c.error);
  return quantile(errors, 0.5);
}

/// The head of a process twin's --json report: system, where the costs come
/// from (replay or runs), the median step error, and an empty "runs" list.
nlohmann::ordered_json process_twin_json(const ValidateArgs& a, const std::string& system, double step_error);

/// A recorded plan run (NestPipe's, or trace derive-plan's) replayed in the twin.
Status validate_replay(const ValidateArgs& a, const cluster::ClusterProfile& profile);

/// A system's side of `clustertwin validate SYSTEM`.
class SystemValidation {
 public:
  virtual ~SystemValidation() = default;
  /// What `validate SYSTEM` runs, for the command's help: "the process twin: ...".
  virtual std::string help() const = 0;
  /// Whether the twin runs on the machine's cores, so that --cores (a
  /// what-if machine) applies; other systems refuse --cores.
  virtual bool takes_cores() const { return false; }
  /// Adds the system's own options to the validate command, bound to this
  /// object; names no other entry uses. The command refuses them for
  /// another system. None by default.
  virtual void add_options(CLI::App& /*validate*/) {}
  /// Checks --real's recorded runs on `profile` and prints the report (text
  /// or --json); check_failed (exit 3) past --max-error.
  virtual Status validate(const ValidateArgs& a, const cluster::ClusterProfile& profile) const = 0;
};

/// Each system's side (cli/SYSTEM/validate.cpp), one per system of common/systems.def.
#define CT_SYSTEM(name, title) std::unique_ptr<SystemValidation> make_##name##_validation();
#include "common/systems.def"
#undef CT_SYSTEM

}  // namespace clustertwin::cli
