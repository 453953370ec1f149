#include "sim/flowtrain/flowtrain_entry.h"

#include <memory>
#include <string>

#include "common/text.h"
#include "sim/flowtrain/flowtrain_job.h"

namespace clustertwin::sim::flowtrain {
namespace {

using cluster::FieldReader;

Status read_mode(FieldReader& entry, FlowTrainMode* out) {
  std::string mode = flowtrain_mode_name(*out);
  CT_RETURN_IF_ERROR(entry.text("mode", &mode, FieldReader::kOptional));
  for (auto m : {FlowTrainMode::kMonolithic, FlowTrainMode::kDisaggSync, FlowTrainMode::kFlowTrain}) {
    if (mode == flowtrain_mode_name(m)) {
      *out = m;
      return Status::ok();
    }
  }
  return entry.error("mode", "'" + mode + "': unknown mode (allowed: monolithic, disagg-sync, flowtrain)");
}

Status read_setup(FieldReader& entry, FlowTrainSetup* s) {
  CT_RETURN_IF_ERROR(entry.text("model", &s->model, FieldReader::kOptional));
  CT_RETURN_IF_ERROR(entry.integer("encoder_workers", 1, &s->encoder_workers, FieldReader::kOptional));
  CT_RETURN_IF_ERROR(entry.integer("global_batch", 1, &s->global_batch, FieldReader::kOptional));
  int micro_batch_tokens = static_cast<int>(s->micro_batch_tokens);
  CT_RETURN_IF_ERROR(entry.integer("micro_batch_tokens", 1, &micro_batch_tokens, FieldReader::kOptional));
  s->micro_batch_tokens = micro_batch_tokens;
  CT_RETURN_IF_ERROR(entry.quantity("pool_memory", cluster::Quantity::kSize, FieldReader::kPositive, &s->pool_bytes,
                                    FieldReader::kOptional));
  CT_RETURN_IF_ERROR(
      entry.number("gemm_efficiency", FieldReader::kEfficiency, &s->device.gemm_efficiency, FieldReader::kOptional));
  CT_RETURN_IF_ERROR(entry.number("attention_efficiency", FieldReader::kEfficiency, &s->device.attention_efficiency,
                                  FieldReader::kOptional));
  CT_RETURN_IF_ERROR(
      entry.number("tp_overlap", FieldReader::kNonNegative, &s->device.tp_overlap, FieldReader::kOptional));
  if (s->device.tp_overlap > 1)
    return entry.error("tp_overlap", format_number("%g", s->device.tp_overlap) + " must be in [0, 1]");
  return Status::ok();
}

// FlowTrain's orchestrator, as `sim flowtrain` runs it.
class FlowTrainTwinRun : public TwinRun {
 public:
  FlowTrainTwinRun(const FlowTrainJob& job, const SimOptions& options, std::string platform, Platform& view)
      : job_(job), options_(options), platform_(std::move(platform)), view_(view) {}
  void start() override { actors_ = job_.start(view_); }
  Status check_complete() const override { return actors_->status(); }
  SimResult result() const override {
    const FlowTrainRow row = actors_->row();
    SimResult r;
    r.system = "flowtrain";
    r.variant = row.mode;
    r.platform = platform_;
    r.workers = row.workers;
    r.steps = options_.steps;
    r.warmup_steps = options_.warmup_steps;
    r.drain_steps = options_.drain_steps;
    r.fidelity = Fidelity::kFlow;  // its reduce-scatters run as aggregate flows, its transfers as one flow each
    // `sim flowtrain`'s own figure: the mean of the steps after the first.
    r.step_time_s = row.step_s;
    r.step_end_s = actors_->step_ends_s();
    r.mfu = row.mfu;
    r.simulated_workers = row.workers;
    return r;
  }
  Status write_trace(const std::string& path) override {
    return write_flowtrain_trace(actors_->row(), platform_, path);
  }

 private:
  const FlowTrainJob& job_;
  const SimOptions& options_;
  const std::string platform_;
  Platform& view_;
  std::unique_ptr<FlowTrainActors> actors_;
};

class FlowTrainTwinJob : public TwinJob {
 public:
  FlowTrainTwinJob(FlowTrainJob job, SimOptions options, std::string platform)
      : job_(std::move(job)), options_(std::move(options)), platform_(std::move(platform)) {}
  std::string runs() const override { return std::string("flowtrain/") + flowtrain_mode_name(job_.mode()); }
  const SimOptions& options() const override { return options_; }
  std::unique_ptr<TwinRun> run_on(Platform& view) const override {
    return std::make_unique<FlowTrainTwinRun>(job_, options_, platform_, view);
  }

 private:
  FlowTrainJob job_;
  SimOptions options_;
  std::string platform_;
};

class FlowTrainTwin : public Twin {
 public:
  std::string_view name() const override { return "flowtrain"; }

  StatusOr<std::shared_ptr<const TwinSettings>> read_settings(FieldReader& entry,
                                                              const JobFrame& frame) const override {
    CT_RETURN_IF_ERROR(frame.check_first_step_warms_up(entry, "flowtrain"));
    auto s = std::make_shared<FlowTrainJobSettings>();
    CT_RETURN_IF_ERROR(read_mode(entry, &s->mode));
    CT_RETURN_IF_ERROR(read_setup(entry, &s->setup));
    return std::shared_ptr<const TwinSettings>(std::move(s));
  }

  int batch_per_worker(const TwinSettings&) const override {
    return 0;  // its global batch is the job's, whatever its workers
  }

  Status check(const TwinSettings& settings, const cluster::ClusterProfile& profile,
               const JobFrame& frame) const override {
    const auto& s = static_cast<const FlowTrainJobSettings&>(settings);
    return FlowTrainJob::prepare(job_setup(s, frame), profile, s.mode, job_setting_name(frame)).status();
  }

  StatusOr<std::unique_ptr<TwinJob>> prepare(const TwinSettings& settings, const cluster::ClusterProfile& profile,
                                             const JobFrame& frame) const override {
    const auto& s = static_cast<const FlowTrainJobSettings&>(settings);
    const FlowTrainSetup setup = job_setup(s, frame);
    auto job = FlowTrainJob::prepare(setup, profile, s.mode, job_setting_name(frame));
    if (!job.is_ok()) return job.status();
    return std::unique_ptr<TwinJob>(std::make_unique<FlowTrainTwinJob>(
        std::move(job).value(), frame.first_step_warmup_options(setup.steps), profile.name));
  }
};

}  // namespace

FlowTrainSetup job_setup(const FlowTrainJobSettings& settings, const JobFrame& frame) {
  FlowTrainSetup s = settings.setup;
  s.workers = frame.workers;
  if (frame.steps > 0) s.steps = frame.steps;
  s.data.seed = frame.seed;
  return s;
}

SettingName job_setting_name(const JobFrame& frame) {
  return [frame](const std::string& field) {
    if (field == "profile") return frame.file + ": field 'profile': ";
    return frame.where(field);
  };
}

const Twin& twin() {
  static const FlowTrainTwin instance;
  return instance;
}

}  // namespace clustertwin::sim::flowtrain
