// sim/mix/job_target.h: a job's `target:` in a mix file, each bad one a line
// naming the field and the value, and the throughput in the target's unit.

#include "sim/mix/job_target.h"

#include <gtest/gtest.h>

namespace clustertwin::sim::mix {
namespace {

// Reads `yaml` (one job's mapping) as jobs[1] of mix.yaml.
Status read_target(const std::string& yaml, int own_batch, JobTarget* out) {
  auto root = cluster::parse_config_yaml(yaml, "mix.yaml");
  if (!root.is_ok()) return root.status();
  auto job = cluster::FieldReader::open("mix.yaml", "jobs[1]", *root);
  if (!job.is_ok()) return job.status();
  return read_job_target(*job, own_batch, out);
}

TEST(JobTargetTest, AbsentIsNoTarget) {
  JobTarget t;
  ASSERT_TRUE(read_target("name: a\n", 0, &t).is_ok());
  EXPECT_FALSE(t.present());
  EXPECT_EQ(target_unit_name(t.unit), "");
}

TEST(JobTargetTest, SamplesPerSecondTakesABatchOrTheSystemsOwn) {
  JobTarget t;
  ASSERT_TRUE(read_target("target: {samples_per_s: 5000, batch_per_worker: 32}\n", 0, &t).is_ok());
  EXPECT_EQ(t.unit, JobTarget::Unit::kSamplesPerS);
  EXPECT_EQ(t.value, 5000);
  EXPECT_EQ(t.batch_per_worker, 32);
  JobTarget own;
  ASSERT_TRUE(read_target("target: {samples_per_s: 5000}\n", 64, &own).is_ok());
  EXPECT_EQ(own.batch_per_worker, 64);
  EXPECT_EQ(target_unit_name(own.unit), "samples/s");
  EXPECT_EQ(target_unit_key(own.unit), "samples_per_s");
}

TEST(JobTargetTest, StepsPerSecondNeedsNoBatch) {
  JobTarget t;
  ASSERT_TRUE(read_target("target: {steps_per_s: 2.5}\n", 0, &t).is_ok());
  EXPECT_EQ(t.unit, JobTarget::Unit::kStepsPerS);
  EXPECT_EQ(t.value, 2.5);
  EXPECT_EQ(target_unit_name(t.unit), "steps/s");
  EXPECT_EQ(target_unit_key(t.unit), "steps_per_s");
}

struct BadTarget {
  std::string yaml;
  int own_batch;
  std::string message;
};

TEST(JobTargetTest, EachBadTargetIsOneLineNamingTheFieldAndValue) {
  const std::string one_of =
      ": give one of samples_per_s (workers x batch_per_worker / step) and steps_per_s (1 / step)";
  const std::vector<BadTarget> cases = {
      {"target: {}", 0, "mix.yaml: field 'jobs[1].target.samples_per_s': missing" + one_of},
      {"target: {samples_per_s: 1, steps_per_s: 1, batch_per_worker: 1}", 0,
       "mix.yaml: field 'jobs[1].target.samples_per_s': and steps_per_s both given" + one_of},
      {"target: {samples_per_s: -5, batch_per_worker: 1}", 0,
       "mix.yaml: field 'jobs[1].target.samples_per_s': -5 must be > 0"},
      {"target: {steps_per_s: 1, batch_per_worker: 8}", 0,
       "mix.yaml: field 'jobs[1].target.batch_per_worker': only with samples_per_s (a step rate counts no samples)"},
      {"target: {samples_per_s: 100, batch_per_worker: 8}", 16,
       "mix.yaml: field 'jobs[1].target.batch_per_worker': a system job's batch is its own (16 samples a worker): "
       "leave it out"},
      {"target: {samples_per_s: 100}", 0,
       "mix.yaml: field 'jobs[1].target.batch_per_worker': missing: a samples/s target counts workers x "
       "batch_per_worker samples a step; give the samples one worker takes per step"},
      {"target: {samples_per_s: 100, batch_per_worker: 0}", 0,
       "mix.yaml: field 'jobs[1].target.batch_per_worker': 0 must be >= 1"},
      {"target: {steps_per_s: 1, rate: 2}", 0,
       "mix.yaml: field 'jobs[1].target.rate': unknown field (allowed in 'jobs[1].target': samples_per_s, "
       "steps_per_s, batch_per_worker)"},
      {"target: 5", 0, "mix.yaml: field 'jobs[1].target': expected a mapping of fields, got the single value '5'"},
  };
  for (const BadTarget& c : cases) {
    JobTarget t;
    const Status s = read_target(c.yaml, c.own_batch, &t);
    ASSERT_FALSE(s.is_ok()) << c.yaml;
    EXPECT_EQ(s.message(), c.message) << c.yaml;
  }
}

TEST(JobTargetTest, ThroughputIsInTheTargetsUnit) {
  JobTarget samples{JobTarget::Unit::kSamplesPerS, 1000, 32};
  // 8 workers x 32 samples / 0.5 s = 512 samples/s.
  EXPECT_DOUBLE_EQ(job_throughput(samples, 8, 0.5), 512);
  JobTarget steps{JobTarget::Unit::kStepsPerS, 1, 0};
  // One step every 0.25 s, whatever the workers.
  EXPECT_DOUBLE_EQ(job_throughput(steps, 8, 0.25), 4);
  EXPECT_DOUBLE_EQ(job_throughput(steps, 64, 0.25), 4);
  EXPECT_EQ(job_throughput(samples, 8, 0), 0);
  EXPECT_EQ(job_throughput(samples, 8, -1), 0);
}

}  // namespace
}  // namespace clustertwin::sim::mix
