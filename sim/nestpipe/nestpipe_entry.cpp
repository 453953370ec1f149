// NestPipe's entry in the twin registry: a NestPipe job is the step plan of
// its variant at the job's workers, with NestPipe's default costs and run
// options, run by sim/core as any plan.

#include "sim/nestpipe/nestpipe_entry.h"

#include <memory>
#include <string>

#include "models/nestpipe/plans.h"
#include "sim/core/plan_job.h"

namespace clustertwin::sim::nestpipe {
namespace {

class NestPipeTwin : public Twin {
 public:
  std::string_view name() const override { return "nestpipe"; }

  StatusOr<std::shared_ptr<const TwinSettings>> read_settings(cluster::FieldReader& entry,
                                                              const JobFrame&) const override {
    auto s = std::make_shared<NestPipeJobSettings>();
    CT_RETURN_IF_ERROR(entry.text("variant", &s->variant, cluster::FieldReader::kOptional));
    if (!models::nestpipe::variant_from_name(s->variant)) {
      return entry.error("variant", "'" + s->variant + "': unknown nestpipe variant (allowed: " +
                                        models::nestpipe::variant_list() + ")");
    }
    return std::shared_ptr<const TwinSettings>(std::move(s));
  }

  int batch_per_worker(const TwinSettings& settings) const override {
    return static_cast<const NestPipeJobSettings&>(settings).setup.batch_per_worker;
  }

  Status check(const TwinSettings&, const cluster::ClusterProfile&, const JobFrame&) const override {
    return Status::ok();  // the variant was checked when read; sizes need the key statistics (prepare)
  }

  StatusOr<std::unique_ptr<TwinJob>> prepare(const TwinSettings& settings, const cluster::ClusterProfile& profile,
                                             const JobFrame& frame) const override {
    const auto& s = static_cast<const NestPipeJobSettings&>(settings);
    NestPipeSetup setup = s.setup;
    setup.seed = frame.seed;
    auto plan = nestpipe_plan(setup, *models::nestpipe::variant_from_name(s.variant), frame.workers);
    if (!plan.is_ok()) return plan.status().with_context(frame.job());
    cluster::ClusterProfile priced = profile;
    add_nestpipe_default_costs(&priced);
    auto job = PlanJob::make(std::move(plan).value(), std::move(priced), frame.apply(nestpipe_sim_options()),
                             "nestpipe/" + s.variant);
    if (!job.is_ok()) return job.status().with_context(frame.job());
    return std::unique_ptr<TwinJob>(std::move(job).value());
  }
};

}  // namespace

const Twin& twin() {
  static const NestPipeTwin instance;
  return instance;
}

}  // namespace clustertwin::sim::nestpipe
