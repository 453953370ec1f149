// clustertwin validate llm: the LLM twin records no runs of its own; its
// validation is against tables of measured steps (calibrate steps' leave-one-out, experiments/llm).

#include "cli/validate.h"

namespace clustertwin::cli {
namespace {

class LlmValidation final : public SystemValidation {
 public:
  std::string help() const override {
    return "llm (no recorded runs: see calibrate steps TABLE.csv and experiments/llm/README.md)";
  }
  Status validate(const ValidateArgs&, const cluster::ClusterProfile&) const override {
    return Status::invalid_argument(
        "validate llm: the LLM twin has no real executor whose runs it replays; compare it with measured steps "
        "through `clustertwin calibrate steps TABLE.csv` (residuals, leave-one-out) or experiments/llm's study");
  }
};

}  // namespace

std::unique_ptr<SystemValidation> make_llm_validation() {
  return std::make_unique<LlmValidation>();
}

}  // namespace clustertwin::cli
