// The mix file: what parses, and one line naming the file, field and value for each class of bad file.

#include "sim/mix/mix_spec.h"

#include <gtest/gtest.h>

#include "tests/mix/mix_test_util.h"

namespace clustertwin::sim::mix {
namespace {

using testing::two_leaf_profile;

TEST(MixSpecTest, ParsesEveryKindOfJob) {
  auto mix = parse_mix(R"(profile: my.yaml
placement: spread
seed: 3
jobs:
  - {name: ddp, workers: 4, steps: 8, warmup: 3, drain: 0, nodes: [4, 5, 6, 7], data_parallel: {compute: 2ms, allreduce_bytes: 1GiB}}
  - {name: hand, workers: 2, plan: plans/p.json}
  - {name: rec, workers: 2, system: nestpipe, variant: dbp}
)",
                       "mix.yaml", "/mixes");
  ASSERT_TRUE(mix.is_ok()) << mix.status().message();
  EXPECT_EQ(mix->profile, "/mixes/my.yaml");  // a path, resolved against the mix file's folder
  EXPECT_EQ(mix->placement, "spread");
  EXPECT_EQ(mix->seed, 3u);
  ASSERT_EQ(mix->jobs.size(), 3u);
  const JobSpec& ddp = mix->jobs[0];
  EXPECT_EQ(ddp.kind, JobSpec::Kind::kDataParallel);
  EXPECT_DOUBLE_EQ(ddp.compute_s, 2e-3);
  EXPECT_EQ(ddp.allreduce_bytes, int64_t{1} << 30);
  EXPECT_EQ(ddp.steps, 8);
  EXPECT_EQ(ddp.warmup, 3);
  EXPECT_EQ(ddp.drain, 0);
  EXPECT_EQ(ddp.nodes, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(mix->jobs[1].kind, JobSpec::Kind::kPlan);
  EXPECT_EQ(mix->jobs[1].plan_file, "/mixes/plans/p.json");
  EXPECT_EQ(mix->jobs[2].kind, JobSpec::Kind::kSystem);
  EXPECT_EQ(mix->jobs[2].system, "nestpipe");
  EXPECT_EQ(mix->jobs[2].variant, "dbp");
  EXPECT_EQ(mix->jobs[2].steps, -1);  // the kind's default
}

TEST(MixSpecTest, AShippedProfileIsANameNotAPath) {
  auto mix =
      parse_mix("profile: gpu-128\njobs: [{name: a, workers: 8, data_parallel: {compute: 0, allreduce_bytes: 0}}]\n",
                "mix.yaml", "/mixes");
  ASSERT_TRUE(mix.is_ok()) << mix.status().message();
  EXPECT_EQ(mix->profile, "gpu-128");
}

struct BadFile {
  const char* what;
  const char* yaml;
  const char* message;  // the whole line
};

class MixSpecBadFileTest : public ::testing::TestWithParam<BadFile> {};

TEST_P(MixSpecBadFileTest, NamesTheFileAndTheField) {
  auto mix = parse_mix(GetParam().yaml, "mix.yaml", "");
  ASSERT_FALSE(mix.is_ok());
  EXPECT_EQ(mix.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(mix.status().message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MixSpecBadFileTest,
    ::testing::Values(
        BadFile{"unknown_system", "profile: p\njobs: [{name: a, workers: 2, system: astra}]\n",
                "mix.yaml: field 'jobs[0].system': 'astra': unknown system (allowed: nestpipe)"},
        BadFile{"system_without_a_plan", "profile: p\njobs: [{name: a, workers: 2, system: flowtrain}]\n",
                "mix.yaml: field 'jobs[0].system': 'flowtrain': cannot join a mix yet: its twin runs actors of its "
                "own rather than a step plan (allowed: nestpipe)"},
        BadFile{"negative_workers",
                "profile: p\njobs: [{name: a, workers: -4, data_parallel: {compute: 1ms, allreduce_bytes: 1MiB}}]\n",
                "mix.yaml: field 'jobs[0].workers': -4 must be >= 1"},
        BadFile{"negative_compute",
                "profile: p\njobs: [{name: a, workers: 4, data_parallel: {compute: -1ms, allreduce_bytes: 1MiB}}]\n",
                "mix.yaml: field 'jobs[0].data_parallel.compute': -1ms must be >= 0"},
        BadFile{"negative_node",
                "profile: p\njobs: [{name: a, workers: 1, nodes: [-1], data_parallel: {compute: 1ms, "
                "allreduce_bytes: 1MiB}}]\n",
                "mix.yaml: field 'jobs[0].nodes': '-1' is not a node index (a whole number >= 0)"},
        BadFile{"two_kinds", "profile: p\njobs: [{name: a, workers: 4, plan: p.json, system: nestpipe}]\n",
                "mix.yaml: field 'jobs[0].plan': give exactly one of data_parallel, plan and system (what the job "
                "runs), got 2"},
        BadFile{"no_kind", "profile: p\njobs: [{name: a, workers: 4}]\n",
                "mix.yaml: field 'jobs[0].data_parallel': give exactly one of data_parallel, plan and system (what "
                "the job runs), got 0"},
        BadFile{"same_name_twice",
                "profile: p\njobs: [{name: a, workers: 4, plan: p.json}, {name: a, workers: 4, "
                "plan: q.json}]\n",
                "mix.yaml: field 'jobs[1].name': 'a' names two jobs"},
        BadFile{"unknown_placement", "profile: p\nplacement: tight\njobs: [{name: a, workers: 4, plan: p.json}]\n",
                "mix.yaml: field 'placement': 'tight': unknown policy (allowed: packed, spread, random)"},
        BadFile{"no_jobs", "profile: p\njobs: []\n",
                "mix.yaml: field 'jobs': expected a non-empty list of jobs, got a list"},
        // Targets (sim/mix/job_target.h), for clustertwin plan mix.
        BadFile{"neither_workers_nor_a_target", "profile: p\njobs: [{name: a, plan: p.json}]\n",
                "mix.yaml: field 'jobs[0].workers': missing: give workers (the job's size), or a target that "
                "`clustertwin plan mix` sizes it by"},
        BadFile{"zero_target",
                "profile: p\njobs: [{name: a, target: {samples_per_s: 0, batch_per_worker: 8}, plan: p.json}]\n",
                "mix.yaml: field 'jobs[0].target.samples_per_s': 0 must be > 0"},
        BadFile{"negative_step_rate",
                "profile: p\njobs: [{name: a, workers: 4, target: {steps_per_s: -2}, plan: p.json}]\n",
                "mix.yaml: field 'jobs[0].target.steps_per_s': -2 must be > 0"},
        BadFile{"step_rate_without_workers", "profile: p\njobs: [{name: a, target: {steps_per_s: 2}, plan: p.json}]\n",
                "mix.yaml: field 'jobs[0].target.steps_per_s': needs the job's workers: more workers do not raise a "
                "step rate (each worker's batch is fixed); give workers, or a samples_per_s target"},
        BadFile{"samples_without_a_batch",
                "profile: p\njobs: [{name: a, target: {samples_per_s: 100}, plan: p.json}]\n",
                "mix.yaml: field 'jobs[0].target.batch_per_worker': missing: a samples/s target counts workers x "
                "batch_per_worker samples a step; give the samples one worker takes per step"},
        BadFile{"a_system_batch_given",
                "profile: p\njobs: [{name: a, target: {samples_per_s: 100, batch_per_worker: 4}, system: nestpipe}]\n",
                "mix.yaml: field 'jobs[0].target.batch_per_worker': a system job's batch is its own (512 samples a "
                "worker): leave it out"},
        BadFile{"two_target_units",
                "profile: p\njobs: [{name: a, workers: 2, target: {samples_per_s: 1, steps_per_s: 1}, plan: p.json}]\n",
                "mix.yaml: field 'jobs[0].target.samples_per_s': and steps_per_s both given: give one of "
                "samples_per_s (workers x batch_per_worker / step) and steps_per_s (1 / step)"}),
    [](const auto& info) { return std::string(info.param.what); });

TEST(MixSpecTest, TargetsAreReadInTheirUnit) {
  auto mix = parse_mix(
      "profile: p\njobs:\n  - {name: a, target: {samples_per_s: 5e4, batch_per_worker: 32}, plan: p.json}\n"
      "  - {name: b, workers: 16, target: {steps_per_s: 2.5}, plan: p.json}\n"
      "  - {name: c, target: {samples_per_s: 1000}, system: nestpipe}\n",
      "mix.yaml", "");
  ASSERT_TRUE(mix.is_ok()) << mix.status().message();
  EXPECT_EQ(mix->jobs[0].workers, 0);  // sized by plan mix
  EXPECT_EQ(mix->jobs[0].target.unit, JobTarget::Unit::kSamplesPerS);
  EXPECT_EQ(mix->jobs[0].target.value, 5e4);
  EXPECT_EQ(mix->jobs[0].target.batch_per_worker, 32);
  EXPECT_EQ(mix->jobs[1].target.unit, JobTarget::Unit::kStepsPerS);
  EXPECT_EQ(mix->jobs[2].target.batch_per_worker, 512);  // NestPipe's own batch
  // 16 workers x 32 samples / 0.25 s = 2,048 samples/s; a step rate is 1 / 0.25 s.
  EXPECT_EQ(job_throughput(mix->jobs[0].target, 16, 0.25), 2048);
  EXPECT_EQ(job_throughput(mix->jobs[1].target, 16, 0.25), 4);
}

// Unknown keys: the reader's own message, checked for the file, the field and the key.
TEST(MixSpecTest, UnknownKeysAreNamed) {
  auto job = parse_mix("profile: p\njobs: [{name: a, workers: 4, wrokers: 4, plan: p.json}]\n", "mix.yaml", "");
  ASSERT_FALSE(job.is_ok());
  EXPECT_NE(job.status().message().find("mix.yaml: field 'jobs[0].wrokers'"), std::string::npos)
      << job.status().message();
  auto top = parse_mix("profile: p\nseeds: 3\njobs: [{name: a, workers: 4, plan: p.json}]\n", "mix.yaml", "");
  ASSERT_FALSE(top.is_ok());
  EXPECT_NE(top.status().message().find("mix.yaml: field 'seeds'"), std::string::npos) << top.status().message();
}

struct BadAgainstProfile {
  const char* what;
  const char* jobs;
  const char* message;
};

class MixCheckTest : public ::testing::TestWithParam<BadAgainstProfile> {};

// Against two_leaf_profile: 8 nodes of 1 device.
TEST_P(MixCheckTest, NamesTheFileAndTheField) {
  auto mix = parse_mix(std::string("profile: two-leaf\njobs:\n") + GetParam().jobs, "mix.yaml", "");
  ASSERT_TRUE(mix.is_ok()) << mix.status().message();
  const Status s = check_mix(*mix, two_leaf_profile(1));
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MixCheckTest,
    ::testing::Values(
        BadAgainstProfile{"more_workers_than_the_profile", "  - {name: a, workers: 16, plan: p.json}\n",
                          "mix.yaml: field 'jobs[0].workers': 16 is more workers than profile 'two-leaf' has (8 "
                          "devices)"},
        BadAgainstProfile{"jobs_together_too_many",
                          "  - {name: a, workers: 6, plan: p.json}\n  - {name: b, workers: 3, plan: p.json}\n",
                          "mix.yaml: field 'jobs': the jobs take 9 nodes, more than profile 'two-leaf' has (8 nodes "
                          "of 1 devices)"},
        BadAgainstProfile{"overlapping_explicit_nodes",
                          "  - {name: a, workers: 2, nodes: [0, 1], plan: p.json}\n"
                          "  - {name: b, workers: 2, nodes: [1, 2], plan: p.json}\n",
                          "mix.yaml: field 'jobs[1].nodes': node 1 is also job 'a''s: explicit placements overlap"},
        BadAgainstProfile{"node_outside_the_profile", "  - {name: a, workers: 2, nodes: [0, 8], plan: p.json}\n",
                          "mix.yaml: field 'jobs[0].nodes': node 8 is not in profile 'two-leaf' (nodes 0-7)"},
        BadAgainstProfile{"nodes_and_workers_disagree", "  - {name: a, workers: 2, nodes: [0], plan: p.json}\n",
                          "mix.yaml: field 'jobs[0].nodes': 1 nodes given, 2 workers take 2 (1 devices a node)"},
        BadAgainstProfile{"a_target_without_workers",
                          "  - {name: a, target: {samples_per_s: 100, batch_per_worker: 4}, plan: p.json}\n",
                          "mix.yaml: field 'jobs[0].workers': missing: a mix runs jobs of a given size; `clustertwin "
                          "plan mix` sizes a job by its target"}),
    [](const auto& info) { return std::string(info.param.what); });

}  // namespace
}  // namespace clustertwin::sim::mix
