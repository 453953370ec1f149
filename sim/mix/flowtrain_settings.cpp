#include "sim/mix/flowtrain_settings.h"

#include <string>

#include "common/text.h"
#include "sim/flowtrain/flowtrain_job.h"

namespace clustertwin::sim::mix {

Status read_flowtrain_settings(cluster::FieldReader& job, JobSpec* out) {
  if (out->warmup >= 0 || out->drain >= 0) {
    return job.error(out->warmup >= 0 ? "warmup" : "drain",
                     "a flowtrain job warms up with its first step and has no drain: give only steps (>= 2)");
  }
  flowtrain::FlowTrainSetup& s = out->flowtrain;
  std::string mode = flowtrain::flowtrain_mode_name(out->flowtrain_mode);
  CT_RETURN_IF_ERROR(job.text("mode", &mode, cluster::FieldReader::kOptional));
  bool known = false;
  for (auto m : {flowtrain::FlowTrainMode::kMonolithic, flowtrain::FlowTrainMode::kDisaggSync,
                 flowtrain::FlowTrainMode::kFlowTrain}) {
    if (mode == flowtrain::flowtrain_mode_name(m)) {
      out->flowtrain_mode = m;
      known = true;
    }
  }
  if (!known) return job.error("mode", "'" + mode + "': unknown mode (allowed: monolithic, disagg-sync, flowtrain)");
  CT_RETURN_IF_ERROR(job.text("model", &s.model, cluster::FieldReader::kOptional));
  CT_RETURN_IF_ERROR(job.integer("encoder_workers", 1, &s.encoder_workers, cluster::FieldReader::kOptional));
  CT_RETURN_IF_ERROR(job.integer("global_batch", 1, &s.global_batch, cluster::FieldReader::kOptional));
  int micro_batch_tokens = static_cast<int>(s.micro_batch_tokens);
  CT_RETURN_IF_ERROR(job.integer("micro_batch_tokens", 1, &micro_batch_tokens, cluster::FieldReader::kOptional));
  s.micro_batch_tokens = micro_batch_tokens;
  CT_RETURN_IF_ERROR(job.quantity("pool_memory", cluster::Quantity::kSize, cluster::FieldReader::kPositive,
                                  &s.pool_bytes, cluster::FieldReader::kOptional));
  CT_RETURN_IF_ERROR(job.number("gemm_efficiency", cluster::FieldReader::kUnitInterval, &s.device.gemm_efficiency,
                                cluster::FieldReader::kOptional));
  CT_RETURN_IF_ERROR(job.number("attention_efficiency", cluster::FieldReader::kUnitInterval,
                                &s.device.attention_efficiency, cluster::FieldReader::kOptional));
  CT_RETURN_IF_ERROR(job.number("tp_overlap", cluster::FieldReader::kNonNegative, &s.device.tp_overlap,
                                cluster::FieldReader::kOptional));
  if (s.device.tp_overlap > 1)
    return job.error("tp_overlap", format_number("%g", s.device.tp_overlap) + " must be in [0, 1]");
  return Status::ok();
}

flowtrain::SettingName flowtrain_setting_name(const std::string& file, const JobSpec& job) {
  return [file, field = job.field](const std::string& option) {
    if (option == "profile") return file + ": field 'profile': ";
    // --pool-memory -> pool_memory, as the mix file spells it.
    std::string key = option.rfind("--", 0) == 0 ? option.substr(2) : option;
    for (char& c : key) {
      if (c == '-') c = '_';
    }
    return file + ": field '" + field + "." + key + "': ";
  };
}

flowtrain::FlowTrainSetup flowtrain_setup(const JobSpec& job, uint64_t seed) {
  flowtrain::FlowTrainSetup s = job.flowtrain;
  s.workers = job.workers;
  if (job.steps > 0) s.steps = job.steps;
  s.data.seed = seed;
  return s;
}

Status check_flowtrain_job(const MixSpec& mix, const JobSpec& job, const cluster::ClusterProfile& profile) {
  auto prepared = flowtrain::FlowTrainJob::prepare(flowtrain_setup(job, mix.seed), profile, job.flowtrain_mode,
                                                   flowtrain_setting_name(mix.file, job));
  return prepared.status();
}

}  // namespace clustertwin::sim::mix
