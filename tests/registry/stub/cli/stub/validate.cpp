// clustertwin validate stub: the stub records no runs to validate.

#include "cli/validate.h"

namespace clustertwin::cli {

Status validate_stub(const ValidateArgs&, const cluster::ClusterProfile&) {
  return Status::invalid_argument("validate stub: the stub system records no runs");
}

}  // namespace clustertwin::cli
