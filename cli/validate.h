#pragma once

// What `clustertwin validate`'s systems share (cli/validate_command.cpp) and
// each system's entry (cli/SYSTEM/validate.cpp, listed in common/systems.def).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/statistics.h"
#include "common/status.h"
#include "models/cluster/cluster_profile.h"

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
  int cores = 0;                         // flexmarl: a what-if machine's cores (0: the profile's)
  std::vector<std::string> scale_costs;  // flexmarl: KIND=FACTOR what-ifs on the fitted costs
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

#define CT_SYSTEM(name, title) Status validate_##name(const ValidateArgs& a, const cluster::ClusterProfile& profile);
#include "common/systems.def"
#undef CT_SYSTEM

}  // namespace clustertwin::cli
