// clustertwin validate nestpipe: its entry in common/systems.def. A NestPipe
// run is a plan run (models/nestpipe/plans.h): its trace carries the plan,
// which the twin replays (validate_replay).

#include "cli/validate.h"

namespace clustertwin::cli {
namespace {

class NestPipeValidation final : public SystemValidation {
 public:
  std::string help() const override {
    return "nestpipe (the plan the trace carries, on the same worker count, priced by the profile's cost table when "
           "it prices every cost key, by --costs-from's runs when given, else by the run itself; the step-time error "
           "and each cost key's)";
  }
  Status validate(const ValidateArgs& a, const cluster::ClusterProfile& profile) const override {
    return validate_replay(a, profile);
  }
};

}  // namespace

std::unique_ptr<SystemValidation> make_nestpipe_validation() {
  return std::make_unique<NestPipeValidation>();
}

}  // namespace clustertwin::cli
