// The stub system's entry in the twin registry (sim/core/twin.h): its plan
// with `flops` and `gradient_bytes` from the job's settings.

#include <cmath>
#include <memory>

#include "models/stub/stub_plan.h"
#include "sim/core/plan_job.h"
#include "sim/core/twin.h"

namespace clustertwin::sim::stub {
namespace {

struct StubSettings : TwinSettings {
  double flops = 1e12;
  double gradient_bytes = 64e6;
};

class StubTwin : public Twin {
 public:
  std::string_view name() const override { return "stub"; }
  StatusOr<std::shared_ptr<const TwinSettings>> read_settings(cluster::FieldReader& entry,
                                                              const JobFrame&) const override {
    auto s = std::make_shared<StubSettings>();
    CT_RETURN_IF_ERROR(
        entry.number("flops", cluster::FieldReader::kPositive, &s->flops, cluster::FieldReader::kOptional));
    CT_RETURN_IF_ERROR(entry.quantity("gradient_bytes", cluster::Quantity::kSize, cluster::FieldReader::kNonNegative,
                                      &s->gradient_bytes, cluster::FieldReader::kOptional));
    return std::shared_ptr<const TwinSettings>(std::move(s));
  }
  int batch_per_worker(const TwinSettings&) const override { return 32; }
  Status check(const TwinSettings&, const cluster::ClusterProfile&, const JobFrame&) const override {
    return Status::ok();
  }
  StatusOr<std::unique_ptr<TwinJob>> prepare(const TwinSettings& settings, const cluster::ClusterProfile& profile,
                                             const JobFrame& frame) const override {
    const auto& s = static_cast<const StubSettings&>(settings);
    auto job = PlanJob::make(models::stub::stub_plan(s.flops, std::llround(s.gradient_bytes)), profile,
                             frame.apply(SimOptions{}), "stub");
    if (!job.is_ok()) return job.status().with_context(frame.job());
    return std::unique_ptr<TwinJob>(std::move(job).value());
  }
};

}  // namespace

const Twin& twin() {
  static const StubTwin instance;
  return instance;
}

}  // namespace clustertwin::sim::stub
