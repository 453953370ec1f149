// clustertwin validate nestpipe: its entry in common/systems.def. A NestPipe
// run is a plan run (models/nestpipe/plans.h): its trace carries the plan,
// which the twin replays (validate_replay).

#include "cli/validate.h"

namespace clustertwin::cli {

Status validate_nestpipe(const ValidateArgs& a, const cluster::ClusterProfile& profile) {
  return validate_replay(a, profile);
}

}  // namespace clustertwin::cli
