// `clustertwin run flowtrain` as a user starts it: 4 processes through
// `clustertwin launch`. Two steps of each mode train on the same samples, so
// the disaggregated modes (lock-step send/recv, and the decoupled flow
// through the shared-memory pool) end where monolithic data parallelism
// does, within 1e-5; the trace carries every task's cost key and FLOPs; bad
// flags exit 2 with one line; the device, backend and pool transfer are
// reported.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/state_dump.h"
#include "tests/cli/run_command.h"
#include "traces/trace_reader.h"

namespace clustertwin::real::flowtrain {
namespace {

using testing::CommandResult;
using testing::run_clustertwin;

std::string temp_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "ct_flowtrain_" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

CommandResult run_flowtrain(int nproc, const std::vector<std::string>& args) {
  std::vector<std::string> all = {"launch", "--nproc", std::to_string(nproc), "--", "run",     "flowtrain",
                                  "--seed", "5",       "--timeout",           "60", "--steps", "2",
                                  "--json"};
  all.insert(all.end(), args.begin(), args.end());
  return run_clustertwin(all);
}

StateDump read_dump(const std::string& dir) {
  auto d = read_state_dump(state_dump_path(dir, 0));
  EXPECT_TRUE(d.is_ok()) << d.status().message();
  return d.is_ok() ? *d : StateDump{};
}

// max |a - b| / max |b| per tensor, the worst over the tensors.
double worst_relative_difference(const std::string& dir, const std::string& reference) {
  const StateDump a = read_dump(dir), b = read_dump(reference);
  EXPECT_EQ(a.tensors.size(), b.tensors.size());
  EXPECT_GT(a.tensors.size(), 20u) << "every parameter of the tiny VLM";
  double worst = 0;
  for (size_t t = 0; t < std::min(a.tensors.size(), b.tensors.size()); ++t) {
    EXPECT_EQ(a.tensors[t].name, b.tensors[t].name);
    const std::vector<double> x = a.tensors[t].values(), y = b.tensors[t].values();
    EXPECT_EQ(x.size(), y.size());
    double diff = 0, scale = 0;
    for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
      diff = std::max(diff, std::abs(x[i] - y[i]));
      scale = std::max(scale, std::abs(y[i]));
    }
    worst = std::max(worst, scale > 0 ? diff / scale : diff);
  }
  return worst;
}

nlohmann::json run_and_dump(const std::string& mode, const std::string& dir, std::vector<std::string> extra = {}) {
  extra.insert(extra.end(), {"--mode", mode, "--dump-params", dir});
  const CommandResult r = run_flowtrain(4, extra);
  EXPECT_EQ(r.exit_code, 0) << mode << ": " << r.err;
  const size_t brace = r.out.find('{');
  return brace == std::string::npos ? nlohmann::json() : nlohmann::json::parse(r.out.substr(brace));
}

TEST(FlowTrainRunTest, DisaggregatedModesEndWhereMonolithicDoes) {
  const std::string mono = temp_dir("monolithic");
  const nlohmann::json m = run_and_dump("monolithic", mono);
  ASSERT_TRUE(m.contains("loss"));
  for (const std::string mode : {"disagg-sync", "flowtrain"}) {
    const std::string dir = temp_dir(mode);
    const nlohmann::json j = run_and_dump(mode, dir);
    const double worst = worst_relative_difference(dir, mono);
    std::printf("%s vs monolithic after two steps: worst relative parameter difference %.3g\n", mode.c_str(), worst);
    EXPECT_LE(worst, 1e-5) << mode;
    EXPECT_EQ(j["encoder_workers"], 1);
    ASSERT_EQ(j["loss"].size(), 2u);
    for (int s = 0; s < 2; ++s)
      EXPECT_NEAR(j["loss"][s].get<double>(), m["loss"][s].get<double>(), 1e-6 * m["loss"][s].get<double>());
    EXPECT_GT(j["samples_per_s"].get<double>(), 0);
    EXPECT_GT(j["mfu"].get<double>(), 0);
  }
  // Two encoder workers with a pool of one slot each (the most back-pressure) still agree; the comparison can fail:
  // another learning rate does not.
  const std::string two = temp_dir("two_encoders");
  run_and_dump("flowtrain", two, {"--encoder-workers", "2", "--pool-slots", "1"});
  EXPECT_LE(worst_relative_difference(two, mono), 1e-5);
  const std::string other = temp_dir("other_lr");
  run_and_dump("flowtrain", other, {"--lr", "0.1"});
  EXPECT_GT(worst_relative_difference(other, mono), 1e-3);
}

TEST(FlowTrainRunTest, TheTraceHasEveryTaskWithItsCost) {
  const std::string trace = temp_dir("trace") + ".json";
  ASSERT_EQ(run_flowtrain(4, {"--mode", "flowtrain", "--trace", trace}).exit_code, 0);
  auto reader = traces::TraceReader::open(trace);
  ASSERT_TRUE(reader.is_ok()) << reader.status().message();
  std::map<std::string, int> seen;
  traces::Event e;
  while ((*reader)->next(&e)) {
    ++seen[e.cost_key];
    if (e.cost_key == "flowtrain/encoder" || e.cost_key == "flowtrain/backbone" ||
        e.cost_key == "flowtrain/encoder_backward") {
      EXPECT_GT(e.flops.value_or(0), 0) << e.cost_key;
    }
    if (e.cost_key.starts_with("flowtrain/pool_")) {
      EXPECT_GT(e.bytes.value_or(0), 0) << e.cost_key;
    }
    if (e.cost_key != "flowtrain/step") {
      EXPECT_TRUE(e.cpu_us.has_value()) << e.cost_key;
    }
  }
  EXPECT_TRUE((*reader)->status().is_ok()) << (*reader)->status().message();
  EXPECT_EQ((*reader)->metadata().system, "flowtrain");
  EXPECT_EQ((*reader)->metadata().variant, "flowtrain");
  EXPECT_EQ(seen["flowtrain/backbone"], 32) << "16 samples a step, two steps";
  // Each image sample: one forward into the pool and one recomputed before its backward.
  EXPECT_EQ(seen["flowtrain/encoder"], 2 * seen["flowtrain/encoder_backward"]);
  EXPECT_GT(seen["flowtrain/encoder_backward"], 10);
  EXPECT_EQ(seen["flowtrain/allreduce"], 8) << "one per rank and step";
  EXPECT_EQ(seen["flowtrain/step"], 2);

  // The process twin replays it (validate flowtrain, costs fitted on the run itself) and predicts the monolithic
  // mode from it.
  const CommandResult v = run_clustertwin({"validate", "flowtrain", "--real", trace, "--json"});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  const auto j = nlohmann::json::parse(v.out);
  EXPECT_EQ(j["system"], "flowtrain");
  ASSERT_EQ(j["runs"].size(), 1u);
  EXPECT_EQ(j["runs"][0]["mode"], "flowtrain");
  EXPECT_GT(j["runs"][0]["twin_step_s"].get<double>(), 0);
  EXPECT_LT(std::abs(j["runs"][0]["step_error"].get<double>()), 1.0);
  const std::string mono = temp_dir("trace_mono") + ".json";
  ASSERT_EQ(run_flowtrain(4, {"--mode", "monolithic", "--trace", mono}).exit_code, 0);
  const CommandResult p = run_clustertwin({"validate", "flowtrain", "--real", mono, "--costs-from", trace, "--json"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(nlohmann::json::parse(p.out)["costs"], "runs");
  // A trace of another system is refused with one line.
  const CommandResult wrong =
      run_clustertwin({"validate", "flowtrain", "--real", std::string(CT_TEST_DATA_DIR) + "/traces/valid.json"});
  EXPECT_EQ(wrong.exit_code, 2) << wrong.err;
  EXPECT_NE(wrong.err.find("is not the system asked for ('flowtrain')"), std::string::npos) << wrong.err;
}

// --device cpu (what auto picks here) says so in the JSON and the table's first lines, with the backend, what the
// collectives stage and how the pool moves embeddings: on the CPU through the shared memory itself.
TEST(FlowTrainRunTest, ReportsItsDeviceBackendAndPoolTransfer) {
  const CommandResult json = run_flowtrain(2, {"--device", "cpu"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out.substr(json.out.find('{')));
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["backend"], "gloo") << "auto picks Gloo for tensors on the CPU";
  EXPECT_EQ(j["staging"], "none");
  EXPECT_EQ(j["pool_transfer"], "host");
  const CommandResult table = run_clustertwin({"launch", "--nproc", "2", "--", "run", "flowtrain", "--device", "cpu",
                                               "--steps", "1", "--timeout", "60", "--mode", "disagg-sync"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("[rank 0] # clustertwin run flowtrain: 2 ranks, device cpu, backend gloo, staging none;"),
            std::string::npos)
      << table.out;
  EXPECT_EQ(table.out.find("pool transfer"), std::string::npos) << "disagg-sync has no pool: " << table.out;
}

// The report names the model and its dtype and counts its parameters (tiny_vlm_test derives the tiny model's:
// 31,488 and 75,136) and its FLOPs. In bfloat16 (--dtype bf16; the pool and the gradients sent back stay float32)
// the flowtrain mode trains the same samples: its first loss, before any update, is the float32 run's up to
// bfloat16's rounding, and not bitwise the same.
TEST(FlowTrainRunTest, ReportsTheModelsParametersFlopsAndDtype) {
  const CommandResult fp32 = run_flowtrain(2, {"--mode", "flowtrain"});
  ASSERT_EQ(fp32.exit_code, 0) << fp32.err;
  const auto f = nlohmann::json::parse(fp32.out.substr(fp32.out.find('{')));
  EXPECT_EQ(f["model"], "tiny");
  EXPECT_EQ(f["dtype"], "fp32") << "the tiny preset's default";
  EXPECT_EQ(f["params"]["encoder"], 31488);
  EXPECT_EQ(f["params"]["backbone"], 75136);
  EXPECT_EQ(f["params"]["total"], 31488 + 75136);
  // Achieved FLOP/s: the model FLOPs of both steps over their summed wall time.
  double wall = 0;
  for (const auto& t : f["step_times"])
    wall += t.get<double>();
  const double per_step = f["model_flops_per_step"].get<double>();
  EXPECT_GT(per_step, 0);
  EXPECT_NEAR(f["flops_per_s"].get<double>(), 2 * per_step / wall, 1e-9 * per_step / wall);
  EXPECT_NEAR(f["mfu"].get<double>(), f["flops_per_s"].get<double>() / (2 * f["matmul_flops_per_s"].get<double>()),
              1e-12);

  const CommandResult bf16 = run_flowtrain(2, {"--mode", "flowtrain", "--dtype", "bf16"});
  ASSERT_EQ(bf16.exit_code, 0) << bf16.err;
  const auto b = nlohmann::json::parse(bf16.out.substr(bf16.out.find('{')));
  EXPECT_EQ(b["dtype"], "bf16");
  EXPECT_EQ(b["params"], f["params"]);
  EXPECT_EQ(b["model_flops_per_step"], f["model_flops_per_step"]) << "the same samples";
  const double first = f["loss"][0].get<double>(), first_bf16 = b["loss"][0].get<double>();
  EXPECT_NEAR(first_bf16, first, 1e-2 * first);
  EXPECT_NE(first_bf16, first);
  EXPECT_TRUE(std::isfinite(b["loss"][1].get<double>()));
}

// On a machine without a GPU (or a build without CUDA) --device cuda is a user's mistake, refused before the
// rendezvous with one line naming the flag; where a GPU is, the run works and the test has nothing to check.
TEST(FlowTrainRunTest, DeviceCudaWithoutAGpuExitsTwoNamingTheFlag) {
  const CommandResult r = run_clustertwin(
      {"launch", "--nproc", "2", "--", "run", "flowtrain", "--device", "cuda", "--steps", "1", "--timeout", "60"});
  if (r.exit_code == 0) GTEST_SKIP() << "this machine has a GPU and this build CUDA";
  EXPECT_EQ(r.exit_code, 2) << r.err;
  // Each rank's one line (the launcher stops the others once one exits, so not every rank may get to print), then
  // the launcher's.
  std::istringstream lines(r.err);
  int errors = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("clustertwin launch: ")) continue;
    EXPECT_TRUE(line.starts_with("[rank ")) << line;
    EXPECT_NE(line.find("] clustertwin: --device cuda: "), std::string::npos) << line;
    ++errors;
  }
  EXPECT_GE(errors, 1) << r.err;
}

struct BadFlag {
  std::vector<std::string> args;
  const char* line;
};

class FlowTrainRunBadFlagTest : public ::testing::TestWithParam<BadFlag> {};

TEST_P(FlowTrainRunBadFlagTest, ExitsTwoWithOneLine) {
  std::vector<std::string> args = {"launch", "--nproc", "2", "--", "run", "flowtrain"};
  args.insert(args.end(), GetParam().args.begin(), GetParam().args.end());
  const CommandResult r = run_clustertwin(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(GetParam().line), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FlowTrainRunBadFlagTest,
    ::testing::Values(
        BadFlag{{"--mode", "pipeline"}, "--mode 'pipeline': unknown (allowed: monolithic, disagg-sync, flowtrain)"},
        BadFlag{{"--encoder-workers", "2"},
                "--encoder-workers 2 of 2 ranks: each side needs at least one worker (1..1; launch --nproc 2 or more)"},
        BadFlag{{"--pool-slots", "0"},
                "--pool-slots 0: smaller than one sample (a slot holds one sample's embeddings)"},
        BadFlag{{"--micro-batch-tokens", "100"}, "--micro-batch-tokens 100: must hold the longest sample (256 tokens)"},
        BadFlag{{"--steps", "0"}, "--steps 0: must be at least 1"}, BadFlag{{"--lr", "0"}, "--lr 0: must be > 0"},
        BadFlag{{"--threads", "0"}, "--threads 0: must be >= 1"},
        BadFlag{{"--timeout", "0"}, "--timeout 0: must be > 0"},
        BadFlag{{"--width", "0"}, "--width 0: must be in [1, 64]"},
        BadFlag{{"--model", "huge"}, "--model 'huge': unknown (allowed: tiny, large)"},
        BadFlag{{"--model", "large", "--width", "2"},
                "--width 2 with --model large: the preset sets its own widths (width scales the tiny model only)"},
        BadFlag{{"--dtype", "fp16"}, "--dtype 'fp16': unknown (allowed: fp32, bf16)"},
        BadFlag{{"--device", "tpu"}, "--device 'tpu': unknown device (allowed: cpu, cuda, auto)"},
        BadFlag{{"--backend", "mpi"}, "--backend 'mpi': unknown backend (allowed: auto, gloo, nccl)"},
        // Without CUDA: "no c10d NCCL"; with it: "the tensors are on the CPU".
        BadFlag{{"--backend", "nccl", "--device", "cpu"}, "--backend nccl: "},
        BadFlag{{"--pool-transfer", "rdma"}, "--pool-transfer 'rdma': unknown (allowed: auto, host, cuda-ipc)"},
        BadFlag{{"--pool-transfer", "cuda-ipc", "--device", "cpu"},
                "--pool-transfer cuda-ipc: the tensors are on the CPU (device cpu); CUDA IPC hands GPU memory "
                "between processes (use host or auto)"}));

}  // namespace
}  // namespace clustertwin::real::flowtrain
