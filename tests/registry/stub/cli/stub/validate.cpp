// clustertwin validate stub: the stub records no runs to validate.

#include "cli/validate.h"

namespace clustertwin::cli {
namespace {

class StubValidation final : public SystemValidation {
 public:
  std::string help() const override { return "stub (records no runs: refused)"; }
  Status validate(const ValidateArgs&, const cluster::ClusterProfile&) const override {
    return Status::invalid_argument("validate stub: the stub system records no runs");
  }
};

}  // namespace

std::unique_ptr<SystemValidation> make_stub_validation() {
  return std::make_unique<StubValidation>();
}

}  // namespace clustertwin::cli
