#pragma once

// A job's throughput target (`target:` in a mix file), for `clustertwin plan
// mix`: the rate the job must reach in the mix, in samples/s or steps/s.

#include <string>

#include "common/status.h"
#include "models/cluster/field_reader.h"

namespace clustertwin::sim::mix {

/// What a job must reach. samples/s counts workers x batch_per_worker
/// samples a step (each worker's batch is fixed, so more workers raise it);
/// steps/s is one over the step time, which more workers do not raise, so a
/// steps/s target needs the job's `workers`.
struct JobTarget {
  enum class Unit { kNone, kSamplesPerS, kStepsPerS };
  Unit unit = Unit::kNone;
  double value = 0;          // > 0 when unit is not kNone
  int batch_per_worker = 0;  // samples a worker takes per step (samples/s targets)
  bool present() const { return unit != Unit::kNone; }
};

/// "samples/s", "steps/s" ("" for none), as printed; and as a JSON key.
std::string target_unit_name(JobTarget::Unit unit);
std::string target_unit_key(JobTarget::Unit unit);

/// Reads `target: {samples_per_s: X, batch_per_worker: B}` or `target:
/// {steps_per_s: X}` from a job's mapping. `batch_per_worker` is required
/// with samples_per_s, except for a system job whose batch is its own
/// (`own_batch` > 0, which must then not be given). InvalidArgument names
/// the file, the field and the value ("mix.yaml: field
/// 'jobs[1].target.samples_per_s': -5 must be > 0").
Status read_job_target(cluster::FieldReader& job, int own_batch, JobTarget* out);

/// The job's throughput in its target's unit, for a step of `step_s` at
/// `workers` workers; 0 when the step is not positive.
double job_throughput(const JobTarget& target, int workers, double step_s);

}  // namespace clustertwin::sim::mix
