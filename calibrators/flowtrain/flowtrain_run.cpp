// Reading a `run flowtrain --trace` run (flowtrain_fit.h): its trace, its
// config's setup and model facts, and its step times.
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "calibrators/flowtrain/flowtrain_fit.h"
#include "calibrators/recorded_run.h"
#include "traces/trace_reader.h"

namespace clustertwin::calibrators {
namespace {

Status bad_config(const std::string& path, const std::string& field, const std::string& why) {
  return Status::invalid_argument(path + ": field 'metadata.config." + field + "': " + why);
}

// Field `field` of config object `o` (at `prefix`: "" or "model."), an integer in [min, 1e9].
Status config_integer(const std::string& path, const nlohmann::json& o, const std::string& prefix, const char* field,
                      int64_t min, int64_t* out) {
  if (!o.contains(field) || !o[field].is_number_integer() || o[field].get<int64_t>() < min ||
      o[field].get<int64_t>() > 1'000'000'000) {
    return bad_config(path, prefix + field, "missing or not an integer >= " + std::to_string(min));
  }
  *out = o[field].get<int64_t>();
  return Status::ok();
}

// Field `field` of config object `o` (at `prefix`), a number >= 0.
Status config_real(const std::string& path, const nlohmann::json& o, const std::string& prefix, const char* field,
                   double* out) {
  if (!o.contains(field) || !o[field].is_number() || !(o[field].get<double>() >= 0)) {
    return bad_config(path, prefix + field, "missing or not a number >= 0");
  }
  *out = o[field].get<double>();
  return Status::ok();
}

// The run's mode and sizes, from its config's top level.
Status read_flowtrain_setup(const std::string& path, const nlohmann::json& config,
                            sim::flowtrain::FlowTrainProcessSetup* s) {
  if (!config.contains("mode") || !config["mode"].is_string())
    return bad_config(path, "mode", "missing or not a string");
  s->mode = config["mode"].get<std::string>();
  int64_t v = 0;
  CT_RETURN_IF_ERROR(config_integer(path, config, "", "world_size", 1, &v));
  s->world = static_cast<int>(v);
  CT_RETURN_IF_ERROR(config_integer(path, config, "", "encoder_workers", 0, &v));
  s->encoders = static_cast<int>(v);
  CT_RETURN_IF_ERROR(config_integer(path, config, "", "steps", 1, &v));
  s->steps = static_cast<int>(v);
  CT_RETURN_IF_ERROR(config_integer(path, config, "", "global_batch", 1, &v));
  s->global_batch = static_cast<int>(v);
  CT_RETURN_IF_ERROR(config_integer(path, config, "", "micro_batch_tokens", 1, &s->micro_batch_tokens));
  CT_RETURN_IF_ERROR(config_integer(path, config, "", "pool_slots", 1, &v));
  s->pool_slots = static_cast<int>(v);
  CT_RETURN_IF_ERROR(config_integer(path, config, "", "seed", 0, &v));
  s->seed = static_cast<uint64_t>(v);
  return Status::ok();
}

// The model's facts, from the config's "model" object.
Status read_tiny_facts(const std::string& path, const nlohmann::json& config, models::flowtrain::TinyFacts* f) {
  if (!config.contains("model") || !config["model"].is_object()) {
    return bad_config(path, "model", "missing or not an object");
  }
  const nlohmann::json& m = config["model"];
  for (const auto& [field, out] : {std::pair<const char*, double*>{"encoder_params", &f->encoder_params},
                                   {"backbone_params", &f->backbone_params},
                                   {"text_scale", &f->text_scale}}) {
    CT_RETURN_IF_ERROR(config_real(path, m, "model.", field, out));
  }
  for (const auto& [field, min, out] :
       {std::tuple<const char*, int64_t, int64_t*>{"tokens_per_image", 1, &f->tokens_per_image},
        {"max_images", 0, &f->max_images},
        {"context", 2, &f->context},
        {"d_vision", 1, &f->d_vision},
        {"enc_layers", 1, &f->enc_layers},
        {"d_model", 1, &f->d_model},
        {"layers", 1, &f->layers},
        {"vocab", 1, &f->vocab}}) {
    CT_RETURN_IF_ERROR(config_integer(path, m, "model.", field, min, out));
  }
  // Runs before the large preset (traces/data/h200) had only the tiny VLM's 4 x 4 patches and did not say so.
  if (m.contains("patch")) CT_RETURN_IF_ERROR(config_integer(path, m, "model.", "patch", 1, &f->patch));
  return Status::ok();
}

// Each step's time from its kFlowTrainStepKey event; there must be one per step of the setup.
Status read_step_times(FlowTrainRun* run) {
  std::map<int64_t, double> steps;
  for (const traces::Event& e : run->events) {
    if (e.cost_key == kFlowTrainStepKey && e.step) steps[*e.step] = e.dur_us * 1e-6;
  }
  for (const auto& [k, seconds] : steps)
    run->step_s.push_back(seconds);
  if (static_cast<int>(run->step_s.size()) != run->setup.steps) {
    return Status::invalid_argument(run->path + ": " + std::to_string(run->step_s.size()) + " '" + kFlowTrainStepKey +
                                    "' events for " + std::to_string(run->setup.steps) + " steps");
  }
  return Status::ok();
}

}  // namespace

StatusOr<FlowTrainRun> read_flowtrain_run(const std::string& path) {
  auto trace = read_system_trace(path, "flowtrain");
  if (!trace.is_ok()) return trace.status();
  FlowTrainRun run;
  run.path = path;
  run.metadata = std::move(trace->metadata);
  run.events = std::move(trace->events);
  const nlohmann::json& config = trace->config;
  sim::flowtrain::FlowTrainProcessSetup& s = run.setup;
  CT_RETURN_IF_ERROR(read_flowtrain_setup(path, config, &s));
  CT_RETURN_IF_ERROR(read_tiny_facts(path, config, &s.facts));
  // A run on a GPU: its ranks' device work shares the machine's GPUs (rank r on r % gpus, as the executor
  // places them; config.gpus where the run recorded it, else one: the device check's machine).
  if (run.metadata.hardware.rfind("cuda", 0) == 0) {
    s.gpus = 1;
    int64_t v = 0;
    if (config.contains("gpus")) CT_RETURN_IF_ERROR(config_integer(path, config, "", "gpus", 1, &v));
    if (config.contains("gpus")) s.gpus = static_cast<int>(v);
  }
  if (config.contains("matmul_flops_per_s") && config["matmul_flops_per_s"].is_number()) {
    run.matmul_flops_per_s = config["matmul_flops_per_s"].get<double>();
  }
  CT_RETURN_IF_ERROR(read_step_times(&run));
  sim::flowtrain::FlowTrainProcessCosts none;
  for (const char* key : {"flowtrain/data", "flowtrain/encoder", "flowtrain/encoder_backward", "flowtrain/backbone",
                          "flowtrain/allreduce", "flowtrain/optimizer", "flowtrain/transfer", "flowtrain/pool_put",
                          "flowtrain/pool_take"})
    none.keys[key] = {};
  if (Status ok = sim::flowtrain::validate(s, none); !ok.is_ok())
    return Status::invalid_argument(path + ": " + ok.message());
  return run;
}

}  // namespace clustertwin::calibrators
