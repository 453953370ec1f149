// The mix file: what parses, and one line naming the file, field and value for each class of bad file.

#include "sim/mix/mix_spec.h"

#include <gtest/gtest.h>

#include "sim/flowtrain/flowtrain_entry.h"
#include "sim/nestpipe/nestpipe_entry.h"
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
  EXPECT_EQ(dynamic_cast<const nestpipe::NestPipeJobSettings&>(*mix->jobs[2].settings).variant, "dbp");
  EXPECT_EQ(mix->jobs[2].steps, -1);  // the kind's default
}

TEST(MixSpecTest, AFlowTrainJobTakesSimFlowtrainsSettings) {
  auto mix = parse_mix(R"(profile: h100-1024
seed: 7
jobs:
  - name: vlm
    workers: 64
    system: flowtrain
    mode: disagg-sync
    model: 300M+7B
    encoder_workers: 16
    global_batch: 256
    micro_batch_tokens: 32768
    pool_memory: 4GB
    gemm_efficiency: 0.7
    attention_efficiency: 0.5
    tp_overlap: 0.25
    steps: 4
  - {name: defaults, workers: 16, system: flowtrain}
)",
                       "mix.yaml", "");
  ASSERT_TRUE(mix.is_ok()) << mix.status().message();
  const JobSpec& vlm = mix->jobs[0];
  EXPECT_EQ(vlm.kind, JobSpec::Kind::kSystem);
  EXPECT_EQ(vlm.system, "flowtrain");
  const auto& vlm_settings = dynamic_cast<const flowtrain::FlowTrainJobSettings&>(*vlm.settings);
  EXPECT_EQ(vlm_settings.mode, flowtrain::FlowTrainMode::kDisaggSync);
  const flowtrain::FlowTrainSetup s = flowtrain::job_setup(vlm_settings, job_frame(vlm, mix->seed));
  EXPECT_EQ(s.model, "300M+7B");
  EXPECT_EQ(s.workers, 64);  // the job's workers and steps, the mix's seed
  EXPECT_EQ(s.steps, 4);
  EXPECT_EQ(s.data.seed, 7u);
  EXPECT_EQ(s.encoder_workers, 16);
  EXPECT_EQ(s.global_batch, 256);
  EXPECT_EQ(s.micro_batch_tokens, 32768);
  EXPECT_DOUBLE_EQ(s.pool_bytes, 4e9);
  EXPECT_DOUBLE_EQ(s.device.gemm_efficiency, 0.7);
  EXPECT_DOUBLE_EQ(s.device.attention_efficiency, 0.5);
  EXPECT_DOUBLE_EQ(s.device.tp_overlap, 0.25);
  // Left out: `sim flowtrain`'s defaults (the allocator's split among them).
  const auto& defaults = dynamic_cast<const flowtrain::FlowTrainJobSettings&>(*mix->jobs[1].settings);
  const flowtrain::FlowTrainSetup d = flowtrain::job_setup(defaults, job_frame(mix->jobs[1], mix->seed));
  const flowtrain::FlowTrainSetup cli;
  EXPECT_EQ(defaults.mode, flowtrain::FlowTrainMode::kFlowTrain);
  EXPECT_EQ(d.model, cli.model);
  EXPECT_EQ(d.encoder_workers, -1);
  EXPECT_EQ(d.global_batch, cli.global_batch);
  EXPECT_EQ(d.steps, cli.steps);
  EXPECT_DOUBLE_EQ(d.pool_bytes, cli.pool_bytes);
}

// An unknown key of a flowtrain job: the reader names the file, the field and the settings it knows.
TEST(MixSpecTest, AnUnknownFlowTrainSettingIsNamed) {
  auto mix =
      parse_mix("profile: p\njobs: [{name: a, workers: 16, system: flowtrain, pool_size: 8GB}]\n", "mix.yaml", "");
  ASSERT_FALSE(mix.is_ok());
  EXPECT_EQ(mix.status().code(), Status::Code::kInvalidArgument);
  const std::string& m = mix.status().message();
  EXPECT_EQ(m.rfind("mix.yaml: field 'jobs[0].pool_size'", 0), 0u) << m;
  EXPECT_NE(m.find("pool_memory"), std::string::npos) << m;  // among the keys it knows
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  // `variant` is NestPipe's; FlowTrain's is `mode`.
  auto variant =
      parse_mix("profile: p\njobs: [{name: a, workers: 16, system: flowtrain, variant: dbp}]\n", "mix.yaml", "");
  ASSERT_FALSE(variant.is_ok());
  EXPECT_EQ(variant.status().message().rfind("mix.yaml: field 'jobs[0].variant'", 0), 0u) << variant.status().message();
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
        BadFile{
            "unknown_system", "profile: p\njobs: [{name: a, workers: 2, system: astra}]\n",
            "mix.yaml: field 'jobs[0].system': 'astra': unknown system (allowed: nestpipe, flexmarl, flowtrain, llm)"},
        BadFile{"flexmarl_unknown_framework",
                "profile: p\njobs: [{name: a, workers: 2, system: flexmarl, framework: fast}]\n",
                "mix.yaml: field 'jobs[0].framework': 'fast': unknown framework (allowed: sync, marti, flexmarl, "
                "flexmarl-nobalance, flexmarl-noasync)"},
        BadFile{"flexmarl_decode_and_device_profile",
                "profile: p\njobs: [{name: a, workers: 2, system: flexmarl, decode_efficiency: 0.5, device_profile: "
                "h200}]\n",
                "mix.yaml: field 'jobs[0].device_profile': give decode_efficiency or device_profile, not both"},
        BadFile{"flexmarl_load_gap", "profile: p\njobs: [{name: a, workers: 2, system: flexmarl, load_gap: 0}]\n",
                "mix.yaml: field 'jobs[0].load_gap': 0 must be > 0"},
        BadFile{"flexmarl_sync_decode_efficiency",
                "profile: p\njobs: [{name: a, workers: 2, system: flexmarl, sync_decode_efficiency: 0}]\n",
                "mix.yaml: field 'jobs[0].sync_decode_efficiency': 0 must be in [0.001, 1] (a share of a rate)"},
        BadFile{"flexmarl_decode_efficiency",
                "profile: p\njobs: [{name: a, workers: 2, system: flexmarl, decode_efficiency: 1.5}]\n",
                "mix.yaml: field 'jobs[0].decode_efficiency': 1.5 must be in [0.001, 1] (a share of a rate)"},
        BadFile{"flexmarl_micro_batch", "profile: p\njobs: [{name: a, workers: 2, system: flexmarl, micro_batch: 0}]\n",
                "mix.yaml: field 'jobs[0].micro_batch': 0 must be >= 1"},
        BadFile{"flexmarl_drain", "profile: p\njobs: [{name: a, workers: 2, system: flexmarl, drain: 1}]\n",
                "mix.yaml: field 'jobs[0].drain': a flexmarl job warms up with its first step and has no drain: "
                "give only steps (>= 2)"},
        BadFile{"flexmarl_agents", "profile: p\njobs: [{name: a, workers: 2, system: flexmarl, agents: 3x13B}]\n",
                "mix.yaml: field 'jobs[0].agents': '3x13B': unknown model size '13B' (known: 0.5B, 1.5B, 7B, 14B, 32B, "
                "72B)"},
        BadFile{"flowtrain_unknown_mode", "profile: p\njobs: [{name: a, workers: 2, system: flowtrain, mode: all}]\n",
                "mix.yaml: field 'jobs[0].mode': 'all': unknown mode (allowed: monolithic, disagg-sync, flowtrain)"},
        BadFile{"flowtrain_no_encoder_worker",
                "profile: p\njobs: [{name: a, workers: 16, system: flowtrain, encoder_workers: 0}]\n",
                "mix.yaml: field 'jobs[0].encoder_workers': 0 must be >= 1"},
        BadFile{"flowtrain_warmup", "profile: p\njobs: [{name: a, workers: 16, system: flowtrain, warmup: 2}]\n",
                "mix.yaml: field 'jobs[0].warmup': a flowtrain job warms up with its first step and has no drain: "
                "give only steps (>= 2)"},
        BadFile{"flowtrain_efficiency_above_one",
                "profile: p\njobs: [{name: a, workers: 16, system: flowtrain, gemm_efficiency: 1.5}]\n",
                "mix.yaml: field 'jobs[0].gemm_efficiency': 1.5 must be in [0.001, 1] (a share of a rate)"},
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

// A flowtrain job checked on h100-1024 as FlowTrain's twin checks it, before
// anything runs: one line naming the mix file and the job's field.
TEST(MixCheckTest, AFlowTrainJobThatCannotRunNamesItsField) {
  auto profile = cluster::load_cluster_profile("h100-1024");  // 8 GPUs of 80 GB a node
  ASSERT_TRUE(profile.is_ok());
  struct Case {
    const char* job;
    const char* start;  // the message starts so; the rest is the twin's or the allocator's own words
  } cases[] = {
      {"{name: v, workers: 16, system: flowtrain, model: 300M+7B, encoder_workers: 16}",
       "mix.yaml: field 'jobs[0].encoder_workers': 16 of 16 workers: each side needs at least one worker (1..15)"},
      {"{name: v, workers: 8, system: flowtrain}",  // 6B+72B: its backbone's shards do not fit 8 GPUs
       "mix.yaml: field 'jobs[0].model': 6B+72B: allocator: no split of 8 workers fits 6B+72B"},
      {"{name: v, workers: 16, system: flowtrain, encoder_workers: 12}",
       "mix.yaml: field 'jobs[0].encoder_workers': 12: allocator: no split of 16 workers fits 6B+72B"},
      {"{name: v, workers: 8, system: flowtrain, mode: monolithic}",
       "mix.yaml: field 'jobs[0].model': 6B+72B: no uniform layout of 8 workers fits the device's memory"},
      {"{name: v, workers: 16, system: flowtrain, model: 300M+7B, pool_memory: 1MB}",
       "mix.yaml: field 'jobs[0].pool_memory': 1 MB: smaller than one sample"},
      {"{name: v, workers: 16, system: flowtrain, model: 1B+1B}", "mix.yaml: field 'jobs[0].model': '1B+1B'"},
      {"{name: v, workers: 16, system: flowtrain, model: 300M+7B, steps: 1}",
       "mix.yaml: field 'jobs[0].steps': 1: must be >= 2 (the first step is warm-up)"},
  };
  for (const Case& c : cases) {
    auto mix = parse_mix(std::string("profile: h100-1024\njobs: [") + c.job + "]\n", "mix.yaml", "");
    ASSERT_TRUE(mix.is_ok()) << mix.status().message();
    const Status s = check_mix(*mix, *profile);
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << c.job;
    EXPECT_EQ(s.message().rfind(c.start, 0), 0u) << c.job << "\n" << s.message();
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace clustertwin::sim::mix
