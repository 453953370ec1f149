// The LLM twin's entry in the twin registry (sim/core/twin.h): a job's
// model and split from a config mapping (the keys are `sim llm`'s flags
// with underscores: tp, micro_batch, sequence_parallel, ...).

#include <memory>
#include <string>

#include "sim/core/twin.h"
#include "sim/llm/llm_twin.h"

namespace clustertwin::sim::llm {
namespace {

using cluster::FieldReader;

struct LlmSettings : TwinSettings {
  LlmSetup setup = default_llm_setup();
  bool dp_given = false;
};

// An int64 field read as an int of at least `minimum`.
Status read_count(FieldReader& entry, std::string_view key, int minimum, int64_t* out) {
  int value = static_cast<int>(*out);
  CT_RETURN_IF_ERROR(entry.integer(key, minimum, &value, FieldReader::kOptional));
  *out = value;
  return Status::ok();
}

Status read_model(FieldReader& entry, models::transformer::Transformer* m) {
  CT_RETURN_IF_ERROR(read_count(entry, "hidden", 1, &m->hidden));
  CT_RETURN_IF_ERROR(read_count(entry, "heads", 1, &m->heads));
  CT_RETURN_IF_ERROR(read_count(entry, "kv_heads", 0, &m->kv_heads));
  CT_RETURN_IF_ERROR(read_count(entry, "ffn", 0, &m->ffn));
  CT_RETURN_IF_ERROR(read_count(entry, "layers", 1, &m->layers));
  CT_RETURN_IF_ERROR(read_count(entry, "seq", 1, &m->seq));
  CT_RETURN_IF_ERROR(read_count(entry, "vocab", 1, &m->vocab));
  return entry.boolean("gated_mlp", &m->gated_mlp, FieldReader::kOptional);
}

Status read_split(FieldReader& entry, models::llm::Split* s, bool* dp_given) {
  CT_RETURN_IF_ERROR(entry.integer("tp", 1, &s->tp, FieldReader::kOptional));
  CT_RETURN_IF_ERROR(entry.integer("pp", 1, &s->pp, FieldReader::kOptional));
  int dp = 0;
  CT_RETURN_IF_ERROR(entry.integer("dp", 1, &dp, FieldReader::kOptional));
  *dp_given = dp > 0;
  if (*dp_given) s->dp = dp;
  CT_RETURN_IF_ERROR(read_count(entry, "micro_batch", 1, &s->micro_batch));
  CT_RETURN_IF_ERROR(read_count(entry, "global_batch", 1, &s->global_batch));
  CT_RETURN_IF_ERROR(entry.integer("virtual_stages", 1, &s->virtual_stages, FieldReader::kOptional));
  CT_RETURN_IF_ERROR(entry.integer("zero", 0, &s->zero, FieldReader::kOptional));
  CT_RETURN_IF_ERROR(entry.boolean("sequence_parallel", &s->sequence_parallel, FieldReader::kOptional));
  CT_RETURN_IF_ERROR(entry.boolean("overlap_grad_reduce", &s->overlap_grad_reduce, FieldReader::kOptional));
  CT_RETURN_IF_ERROR(entry.text("precision", &s->precision, FieldReader::kOptional));
  CT_RETURN_IF_ERROR(entry.text("grad_reduce", &s->grad_reduce, FieldReader::kOptional));
  std::string schedule(models::llm::schedule_name(s->schedule));
  CT_RETURN_IF_ERROR(entry.text("schedule", &schedule, FieldReader::kOptional));
  auto sched = models::llm::schedule_from_name(schedule);
  if (!sched) return entry.error("schedule", "'" + schedule + "': unknown (allowed: 1f1b, interleaved, gpipe)");
  s->schedule = *sched;
  std::string recompute(models::llm::recompute_name(s->recompute));
  CT_RETURN_IF_ERROR(entry.text("recompute", &recompute, FieldReader::kOptional));
  auto r = models::llm::recompute_from_name(recompute);
  if (!r) return entry.error("recompute", "'" + recompute + "': unknown (allowed: none, selective, full)");
  s->recompute = *r;
  return Status::ok();
}

class LlmTwin : public Twin {
 public:
  std::string_view name() const override { return "llm"; }
  StatusOr<std::shared_ptr<const TwinSettings>> read_settings(FieldReader& entry, const JobFrame&) const override {
    auto s = std::make_shared<LlmSettings>();
    CT_RETURN_IF_ERROR(read_model(entry, &s->setup.model));
    CT_RETURN_IF_ERROR(read_split(entry, &s->setup.split, &s->dp_given));
    CT_RETURN_IF_ERROR(entry.text("device_profile", &s->setup.device_profile, FieldReader::kOptional));
    return std::shared_ptr<const TwinSettings>(std::move(s));
  }
  int batch_per_worker(const TwinSettings&) const override { return 0; }  // the global batch is the job's
  Status check(const TwinSettings& settings, const cluster::ClusterProfile& profile,
               const JobFrame& frame) const override {
    auto setup = job_setup(static_cast<const LlmSettings&>(settings), frame);
    if (!setup.is_ok()) return setup.status();
    return check_llm(*setup, profile, frame.workers).with_context(frame.job());
  }
  StatusOr<std::unique_ptr<TwinJob>> prepare(const TwinSettings& settings, const cluster::ClusterProfile& profile,
                                             const JobFrame& frame) const override {
    CT_RETURN_IF_ERROR(check(settings, profile, frame));
    auto setup = job_setup(static_cast<const LlmSettings&>(settings), frame);
    if (!setup.is_ok()) return setup.status();
    auto job = make_llm_job(*setup, profile, frame.apply(llm_sim_options(frame.workers)));
    if (!job.is_ok()) return job.status().with_context(frame.job());
    return std::unique_ptr<TwinJob>(std::move(job).value());
  }

 private:
  // The settings' setup for the frame's workers: dp from them when the entry gives none.
  static StatusOr<LlmSetup> job_setup(const LlmSettings& s, const JobFrame& frame) {
    LlmSetup setup = s.setup;
    if (!s.dp_given) {
      const int model_parallel = setup.split.tp * setup.split.pp;
      if (frame.workers % model_parallel != 0) {
        return Status::invalid_argument(frame.where("tp") + std::to_string(setup.split.tp) + " x pp " +
                                        std::to_string(setup.split.pp) + " does not divide the job's " +
                                        std::to_string(frame.workers) + " workers");
      }
      setup.split.dp = frame.workers / model_parallel;
    }
    return setup;
  }
};

}  // namespace

LlmSetup default_llm_setup() {
  LlmSetup s;
  s.model.hidden = 12288;  // GPT-3 175B (Brown et al. 2020, table 2.1)
  s.model.heads = 96;
  s.model.layers = 96;
  s.model.seq = 2048;
  s.model.vocab = 51200;
  s.split.tp = 8;
  s.split.pp = 16;
  s.split.micro_batch = 1;
  s.split.global_batch = 1536;
  return s;
}

const Twin& twin() {
  static const LlmTwin instance;
  return instance;
}

}  // namespace clustertwin::sim::llm
