// FlowTrain's twin as a job: prepared outside the engine (the allocator's
// layouts), started on any platform or placed view of one.

#include "sim/flowtrain/flowtrain_job.h"

#include <simgrid/s4u.hpp>
#include <string>

#include "sim/core/platform.h"
#include "sim/flowtrain/flowtrain_model.h"

namespace sg = simgrid::s4u;

namespace clustertwin::sim::flowtrain {
namespace detail {

// What a started run reads: it keeps references into this, so runs share it.
struct Prepared {
  FlowTrainSetup setup;
  cluster::ClusterProfile profile;
  FlowTrainMode mode = FlowTrainMode::kFlowTrain;
  models::flowtrain::VlmSpec model;
  Layouts layouts;
};

}  // namespace detail

namespace {

models::flowtrain::AllocatorInputs allocator_inputs(const FlowTrainSetup& setup, const cluster::ClusterProfile& profile,
                                                    const models::flowtrain::VlmSpec& model) {
  models::flowtrain::AllocatorInputs in;
  in.model = model;
  in.workers = setup.workers;
  in.devices_per_node = profile.devices_per_node;
  in.device = flowtrain_device(setup, profile);
  in.memory_bytes = profile.device.memory_bytes;
  in.global_batch = setup.global_batch;
  in.micro_batch_tokens = setup.micro_batch_tokens;
  in.encoder_workers = setup.encoder_workers;
  models::flowtrain::set_dataset_means(&in, setup.data, detail::kMeanSamples);
  return in;
}

// The allocator's layouts for `mode`, or InvalidArgument when none fits the devices' memory: it names the model,
// or the encoder workers when they fix the split.
StatusOr<detail::Layouts> choose_layouts(const FlowTrainSetup& setup, const cluster::ClusterProfile& profile,
                                         FlowTrainMode mode, const models::flowtrain::VlmSpec& model,
                                         const SettingName& name) {
  auto say = [&](const std::string& option) { return name ? name(option) : option + " "; };
  const models::flowtrain::AllocatorInputs in = allocator_inputs(setup, profile, model);
  detail::Layouts layouts;
  if (mode == FlowTrainMode::kMonolithic) {
    layouts.monolithic = models::flowtrain::best_monolithic_layout(in, setup.workers);
    if (!(layouts.monolithic.rate > 0)) {
      return Status::invalid_argument(say("model") + setup.model + ": no uniform layout of " +
                                      std::to_string(setup.workers) + " workers fits the device's memory");
    }
    return layouts;
  }
  auto split = models::flowtrain::allocate(in);
  if (!split.is_ok()) {
    if (!name) return split.status();  // the allocator's own words, as `sim flowtrain` has always printed them
    const bool fixed = setup.encoder_workers > 0;
    return Status::invalid_argument(say(fixed ? "encoder_workers" : "model") +
                                    (fixed ? std::to_string(setup.encoder_workers) : setup.model) + ": " +
                                    split.status().message());
  }
  layouts.split = *split;
  return layouts;
}

}  // namespace

FlowTrainActors::FlowTrainActors() = default;
FlowTrainActors::~FlowTrainActors() = default;

Status FlowTrainActors::status() const {
  if (!status_.is_ok()) return status_;
  if (!run_->finished()) {
    return Status::internal("flowtrain twin: the engine stopped after " + std::to_string(run_->step_ends().size()) +
                            " steps");
  }
  return Status::ok();
}

FlowTrainRow FlowTrainActors::row() const {
  return run_->result();
}

const std::vector<double>& FlowTrainActors::step_ends_s() const {
  return run_->step_ends();
}

StatusOr<FlowTrainJob> FlowTrainJob::prepare(const FlowTrainSetup& setup, const cluster::ClusterProfile& profile,
                                             FlowTrainMode mode, const SettingName& name) {
  CT_RETURN_IF_ERROR(validate(setup, profile, name));
  auto prepared = std::make_shared<detail::Prepared>();
  prepared->setup = setup;
  prepared->profile = profile;
  prepared->mode = mode;
  prepared->model = *models::flowtrain::vlm_spec(setup.model);
  auto layouts = choose_layouts(setup, profile, mode, prepared->model, name);
  if (!layouts.is_ok()) return layouts.status();
  prepared->layouts = *layouts;
  return FlowTrainJob(std::move(prepared));
}

std::unique_ptr<FlowTrainActors> FlowTrainJob::start(Platform& platform) const {
  std::unique_ptr<FlowTrainActors> actors(new FlowTrainActors());
  const detail::Prepared& p = *prepared_;
  actors->run_ = std::make_unique<detail::FlowTrainRun>(p.setup, p.profile, platform, p.mode, p.model, p.layouts);
  FlowTrainActors* out = actors.get();
  sg::Actor::create("orchestrator", platform.device(0), [out] { out->status_ = out->run_->run(); });
  return actors;
}

const FlowTrainSetup& FlowTrainJob::setup() const {
  return prepared_->setup;
}

FlowTrainMode FlowTrainJob::mode() const {
  return prepared_->mode;
}

Status flowtrain_fits(const FlowTrainSetup& setup, const cluster::ClusterProfile& profile, FlowTrainMode mode) {
  return FlowTrainJob::prepare(setup, profile, mode).status();
}

}  // namespace clustertwin::sim::flowtrain
