#include "sim/mix/job_target.h"

namespace clustertwin::sim::mix {

std::string target_unit_name(JobTarget::Unit unit) {
  switch (unit) {
    case JobTarget::Unit::kSamplesPerS:
      return "samples/s";
    case JobTarget::Unit::kStepsPerS:
      return "steps/s";
    case JobTarget::Unit::kNone:
      break;
  }
  return "";
}

std::string target_unit_key(JobTarget::Unit unit) {
  switch (unit) {
    case JobTarget::Unit::kSamplesPerS:
      return "samples_per_s";
    case JobTarget::Unit::kStepsPerS:
      return "steps_per_s";
    case JobTarget::Unit::kNone:
      break;
  }
  return "";
}

Status read_job_target(cluster::FieldReader& job, int own_batch, JobTarget* out) {
  auto section = job.section("target", cluster::FieldReader::kOptional);
  if (!section.is_ok()) return section.status();
  if (!section->has_value()) return Status::ok();
  cluster::FieldReader& t = **section;
  const bool samples = t.child("samples_per_s") != nullptr, steps = t.child("steps_per_s") != nullptr;
  if (samples == steps) {
    return t.error("samples_per_s", std::string(samples ? "and steps_per_s both given" : "missing") +
                                        ": give one of samples_per_s (workers x batch_per_worker / step) and "
                                        "steps_per_s (1 / step)");
  }
  const char* key = samples ? "samples_per_s" : "steps_per_s";
  out->unit = samples ? JobTarget::Unit::kSamplesPerS : JobTarget::Unit::kStepsPerS;
  CT_RETURN_IF_ERROR(t.number(key, cluster::FieldReader::kPositive, &out->value, cluster::FieldReader::kRequired));
  if (!samples && t.child("batch_per_worker") != nullptr)
    return t.error("batch_per_worker", "only with samples_per_s (a step rate counts no samples)");
  if (samples) {
    if (own_batch > 0) {
      if (t.child("batch_per_worker") != nullptr) {
        return t.error("batch_per_worker", "a system job's batch is its own (" + std::to_string(own_batch) +
                                               " samples a worker): leave it out");
      }
      out->batch_per_worker = own_batch;
    } else {
      if (t.child("batch_per_worker") == nullptr) {
        return t.error("batch_per_worker",
                       "missing: a samples/s target counts workers x batch_per_worker samples a step; give the "
                       "samples one worker takes per step");
      }
      CT_RETURN_IF_ERROR(t.integer("batch_per_worker", 1, &out->batch_per_worker, cluster::FieldReader::kRequired));
    }
  }
  return t.finish();
}

double job_throughput(const JobTarget& target, int workers, double step_s) {
  if (!(step_s > 0)) return 0;
  if (target.unit == JobTarget::Unit::kStepsPerS) return 1 / step_s;
  return static_cast<double>(workers) * target.batch_per_worker / step_s;
}

}  // namespace clustertwin::sim::mix
