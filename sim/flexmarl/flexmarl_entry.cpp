// FlexMARL's entry in the twin registry (sim/core/twin.h): a job's fields as
// `sim flexmarl` takes them (one framework), and the job as FlexMARL's
// orchestrator actor on the job's devices, so that its weight publishes,
// engine reloads and state swaps share a cluster's fabric with other jobs.
//
// A job has no calibration step: sync's engine decodes at the others'
// efficiency unless `sync_decode_efficiency` says otherwise (`sim flexmarl
// --calibration none`); the fit to the paper's sync step belongs to the
// paper's own cluster (calibrators/flexmarl/flexmarl_paper_fit.h).

#include <memory>
#include <simgrid/s4u.hpp>
#include <string>
#include <utility>

#include "common/text.h"
#include "models/flexmarl/agents.h"
#include "sim/core/twin.h"
#include "sim/flexmarl/flexmarl_model.h"
#include "sim/flexmarl/flexmarl_twin.h"

namespace clustertwin::sim::flexmarl {
namespace {

using cluster::FieldReader;
using models::flexmarl::Framework;

struct FlexMarlJobSettings : TwinSettings {
  FlexMarlSetup setup;
  Framework framework = Framework::kFlexMarl;
};

Status read_workload(FieldReader& entry, models::flexmarl::Workload* w) {
  std::string agents;
  CT_RETURN_IF_ERROR(entry.text("agents", &agents, FieldReader::kOptional));
  auto workload = models::flexmarl::workload_from_agents(agents);
  if (!workload.is_ok()) return entry.error("agents", workload.status().message());
  *w = std::move(workload).value();
  CT_RETURN_IF_ERROR(entry.integer("global_batch", 1, &w->global_batch, FieldReader::kOptional));
  CT_RETURN_IF_ERROR(entry.integer("micro_batch", 1, &w->micro_batch, FieldReader::kOptional));
  CT_RETURN_IF_ERROR(entry.integer("group", 1, &w->group, FieldReader::kOptional));
  CT_RETURN_IF_ERROR(entry.integer("inter_query", 1, &w->inter_query, FieldReader::kOptional));
  CT_RETURN_IF_ERROR(entry.integer("max_response", 1, &w->max_response_tokens, FieldReader::kOptional));
  Status checked = models::flexmarl::validate(*w);
  if (checked.is_ok()) return checked;
  // The workload's check names what it found wrong; the message names the field that sets it.
  const std::string& m = checked.message();
  for (auto [words, key] :
       {std::pair{"micro-batch", "micro_batch"}, std::pair{"group", "group"}, std::pair{"global batch", "global_batch"},
        std::pair{"inter-query", "inter_query"}, std::pair{"max response", "max_response"}}) {
    if (m.find(words) != std::string::npos) return entry.error(key, m);
  }
  return entry.error("agents", m);
}

// The engines' decode efficiency: given, or the device profile's measured one (sim flexmarl's default).
Status read_efficiency(FieldReader& entry, models::flexmarl::EngineEfficiency* e) {
  const bool given = entry.child("decode_efficiency") != nullptr;
  std::string device_profile = kDefaultDeviceProfile;
  CT_RETURN_IF_ERROR(entry.text("device_profile", &device_profile, FieldReader::kOptional));
  if (given && entry.child("device_profile") != nullptr)
    return entry.error("device_profile", "give decode_efficiency or device_profile, not both");
  if (given) {
    CT_RETURN_IF_ERROR(
        entry.number("decode_efficiency", FieldReader::kEfficiency, &e->decode, FieldReader::kRequired));
    if (!(e->decode > 0)) return entry.error("decode_efficiency", "0 must be in (0, 1]");
  } else {
    auto measured = engine_decode_efficiency(device_profile);
    if (!measured.is_ok()) return entry.error("device_profile", measured.status().message());
    e->decode = *measured;
  }
  e->sync_decode = e->decode;
  CT_RETURN_IF_ERROR(
      entry.number("sync_decode_efficiency", FieldReader::kEfficiency, &e->sync_decode, FieldReader::kOptional));
  if (!(e->sync_decode > 0)) return entry.error("sync_decode_efficiency", "0 must be in (0, 1]");
  return Status::ok();
}

// The orchestrator on the job's view, as `sim flexmarl` runs it on a platform of its own.
class FlexMarlTwinRun : public TwinRun {
 public:
  FlexMarlTwinRun(const FlexMarlSetup& setup, const cluster::ClusterProfile& profile, const SimOptions& options,
                  Framework framework, const models::flexmarl::Deployment& deployment, Platform& view)
      : profile_(profile), options_(options), view_(view), run_(setup, profile, view, framework, deployment) {}
  void start() override {
    simgrid::s4u::Actor::create("orchestrator", view_.cpu(0), [this] { status_ = run_.run(); });
  }
  Status check_complete() const override {
    if (!status_.is_ok()) return status_;
    if (!run_.finished()) {
      return Status::internal("flexmarl twin: the engine stopped after " + std::to_string(run_.step_ends().size()) +
                              " steps");
    }
    return Status::ok();
  }
  SimResult result() const override {
    const FlexMarlRow row = run_.result();
    SimResult r;
    r.system = "flexmarl";
    r.variant = row.framework;
    r.platform = profile_.name;
    r.workers = row.devices;
    r.steps = options_.steps;
    r.warmup_steps = options_.warmup_steps;
    r.drain_steps = options_.drain_steps;
    r.fidelity = Fidelity::kFlow;  // transfers are SimGrid flows
    r.step_time_s = row.step_s;    // `sim flexmarl`'s figure: the mean of the steps after the first
    r.step_end_s = run_.step_ends();
    r.simulated_workers = row.devices;
    return r;
  }
  Status write_trace(const std::string& path) override {
    return write_flexmarl_trace(run_.result(), profile_.name, path);
  }

 private:
  const cluster::ClusterProfile& profile_;
  const SimOptions& options_;
  Platform& view_;
  detail::FlexMarlRun run_;
  Status status_ = Status::ok();
};

class FlexMarlTwinJob : public TwinJob {
 public:
  FlexMarlTwinJob(FlexMarlSetup setup, cluster::ClusterProfile profile, SimOptions options, Framework framework,
                  models::flexmarl::Deployment deployment)
      : setup_(std::move(setup)),
        profile_(std::move(profile)),
        options_(std::move(options)),
        framework_(framework),
        deployment_(std::move(deployment)) {}
  std::string runs() const override { return "flexmarl/" + std::string(models::flexmarl::framework_name(framework_)); }
  const SimOptions& options() const override { return options_; }
  std::unique_ptr<TwinRun> run_on(Platform& view) const override {
    return std::make_unique<FlexMarlTwinRun>(setup_, profile_, options_, framework_, deployment_, view);
  }

 private:
  FlexMarlSetup setup_;
  cluster::ClusterProfile profile_;
  SimOptions options_;
  Framework framework_;
  models::flexmarl::Deployment deployment_;
};

class FlexMarlTwin : public Twin {
 public:
  std::string_view name() const override { return "flexmarl"; }

  StatusOr<std::shared_ptr<const TwinSettings>> read_settings(FieldReader& entry,
                                                              const JobFrame& frame) const override {
    CT_RETURN_IF_ERROR(frame.check_first_step_warms_up(entry, "flexmarl"));
    if (frame.steps == 1) return entry.error("steps", "1 must be >= 2 (the first step is warm-up)");
    auto s = std::make_shared<FlexMarlJobSettings>();
    std::string framework(models::flexmarl::framework_name(s->framework));
    CT_RETURN_IF_ERROR(entry.text("framework", &framework, FieldReader::kOptional));
    auto f = models::flexmarl::framework_from_name(framework);
    if (!f) {
      return entry.error("framework", "'" + framework +
                                          "': unknown framework (allowed: sync, marti, flexmarl, flexmarl-nobalance, "
                                          "flexmarl-noasync)");
    }
    s->framework = *f;
    CT_RETURN_IF_ERROR(read_workload(entry, &s->setup.workload));
    CT_RETURN_IF_ERROR(
        entry.number("load_gap", FieldReader::kPositive, &s->setup.gap_threshold, FieldReader::kOptional));
    CT_RETURN_IF_ERROR(read_efficiency(entry, &s->setup.efficiency));
    return std::shared_ptr<const TwinSettings>(std::move(s));
  }

  int batch_per_worker(const TwinSettings&) const override {
    return 0;  // its global batch is per agent, whatever its devices
  }

  Status check(const TwinSettings& settings, const cluster::ClusterProfile& profile,
               const JobFrame& frame) const override {
    return deployment(settings, profile, frame).status();
  }

  StatusOr<std::unique_ptr<TwinJob>> prepare(const TwinSettings& settings, const cluster::ClusterProfile& profile,
                                             const JobFrame& frame) const override {
    const auto& s = static_cast<const FlexMarlJobSettings&>(settings);
    auto d = deployment(settings, profile, frame);
    if (!d.is_ok()) return d.status();
    const FlexMarlSetup setup = job_setup(s, frame);
    return std::unique_ptr<TwinJob>(std::make_unique<FlexMarlTwinJob>(
        setup, profile, frame.first_step_warmup_options(setup.steps), s.framework, std::move(d).value()));
  }

 private:
  static FlexMarlSetup job_setup(const FlexMarlJobSettings& s, const JobFrame& frame) {
    FlexMarlSetup setup = s.setup;
    setup.devices = frame.workers;
    setup.seed = frame.seed;
    if (frame.steps > 0) setup.steps = frame.steps;
    return setup;
  }

  // The setup checked on the profile and the framework's deployment on the job's devices.
  static StatusOr<models::flexmarl::Deployment> deployment(const TwinSettings& settings,
                                                           const cluster::ClusterProfile& profile,
                                                           const JobFrame& frame) {
    const auto& s = static_cast<const FlexMarlJobSettings&>(settings);
    const FlexMarlSetup setup = job_setup(s, frame);
    Status valid = validate(setup, profile);
    if (!valid.is_ok()) return valid.with_context(frame.job());
    auto d = models::flexmarl::deploy(setup.workload, s.framework, setup.devices, device_facts(profile),
                                      models::flexmarl::engine_efficiency(setup.efficiency, s.framework));
    if (!d.is_ok()) return d.status().with_context(frame.job());
    return d;
  }
};

}  // namespace

const Twin& twin() {
  static const FlexMarlTwin instance;
  return instance;
}

}  // namespace clustertwin::sim::flexmarl
