// `clustertwin run flexmarl` as a user starts it: 5 processes through
// `clustertwin launch` (a controller and four workers). One step of every
// framework trains on the same samples, so the micro-batch pipeline with
// swapped trainer state (flexmarl) ends where the synchronous full-batch
// update (sync: each agent on all workers, gradients all-reduced) does;
// a deliberately late weight publish is caught by the experience store; bad
// flags exit 2 with one line; --device says where the tensors live.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/state_dump.h"
#include "tests/cli/run_command.h"
#include "traces/trace_reader.h"

namespace clustertwin::real::flexmarl {
namespace {

using testing::CommandResult;
using testing::run_clustertwin;

std::string temp_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "ct_flexmarl_" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

CommandResult run_flexmarl(int nproc, const std::vector<std::string>& args) {
  std::vector<std::string> all = {"launch", "--nproc", std::to_string(nproc), "--", "run", "flexmarl", "--seed",
                                  "3",      "--json"};
  all.insert(all.end(), args.begin(), args.end());
  return run_clustertwin(all);
}

StateDump read_dump(const std::string& dir) {
  auto d = read_state_dump(state_dump_path(dir, 0));
  EXPECT_TRUE(d.is_ok()) << d.status().message();
  return d.is_ok() ? *d : StateDump{};
}

// max |a - b| / max |b| per tensor, the worst over the tensors whose name
// ends with `suffix` ("" for the weights, ".grad" for the last gradients).
double worst_relative_difference(const std::string& dir, const std::string& reference, const std::string& suffix) {
  const StateDump a = read_dump(dir), b = read_dump(reference);
  EXPECT_EQ(a.tensors.size(), 6u) << "weights and gradient of three agents";
  EXPECT_EQ(a.tensors.size(), b.tensors.size());
  double worst = 0;
  for (size_t t = 0; t < std::min(a.tensors.size(), b.tensors.size()); ++t) {
    EXPECT_EQ(a.tensors[t].name, b.tensors[t].name);
    const bool is_grad = a.tensors[t].name.ends_with(".grad");
    if (is_grad != (suffix == ".grad")) continue;
    const std::vector<double> x = a.tensors[t].values(), y = b.tensors[t].values();
    EXPECT_EQ(x.size(), y.size());
    double diff = 0, scale = 0;
    for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
      diff = std::max(diff, std::abs(x[i] - y[i]));
      scale = std::max(scale, std::abs(y[i]));
    }
    EXPECT_GT(scale, 0) << a.tensors[t].name << " is all zeros";
    worst = std::max(worst, scale > 0 ? diff / scale : diff);
  }
  return worst;
}

const std::vector<std::string> kCommon = {"--steps", "2", "--queries", "4", "--group", "4", "--micro-batch", "4"};

std::string run_and_dump(const std::string& framework, const std::vector<std::string>& extra = {}, int nproc = 5) {
  const std::string dir = temp_dir(framework + (extra.empty() ? "" : "_" + extra.back()) + std::to_string(nproc));
  // kCommon, with extra's --queries in place of its own.
  std::vector<std::string> args = kCommon;
  const auto queries = std::find(extra.begin(), extra.end(), "--queries");
  if (queries != extra.end() && queries + 1 != extra.end()) {
    *(std::find(args.begin(), args.end(), "--queries") + 1) = *(queries + 1);
  }
  args.insert(args.end(), {"--framework", framework, "--dump-params", dir});
  for (auto it = extra.begin(); it != extra.end(); ++it) {
    if (it == queries) {
      ++it;
      continue;
    }
    args.push_back(*it);
  }
  const CommandResult r = run_flexmarl(nproc, args);
  EXPECT_EQ(r.exit_code, 0) << framework << ": " << r.err;
  EXPECT_NE(r.out.find("\"framework\":\"" + framework + "\""), std::string::npos) << r.out;
  return dir;
}

// Two steps (the second's Adam update depends on the first's moments); the
// last step's gradient is compared too, since Adam's first update is nearly
// the gradient's sign and would hide a wrong scale.
TEST(FlexMarlRunTest, EveryFrameworkEqualsTheSynchronousUpdate) {
  const std::string sync = run_and_dump("sync");
  for (const std::string framework : {"marti", "flexmarl", "flexmarl-noasync", "flexmarl-nobalance"}) {
    const std::string dir = run_and_dump(framework);
    const double weights = worst_relative_difference(dir, sync, "");
    const double grads = worst_relative_difference(dir, sync, ".grad");
    std::printf("%s vs sync after two steps: weights %.3g, last gradient %.3g (worst relative difference)\n",
                framework.c_str(), weights, grads);
    EXPECT_LE(weights, 1e-6) << framework;
    EXPECT_LE(grads, 1e-6) << framework;
  }
  // The runs above pass weights and state through shared memory (--transport auto on one machine); through Gloo
  // they end at the same place.
  const std::string gloo = run_and_dump("flexmarl", {"--transport", "gloo"});
  EXPECT_LE(worst_relative_difference(gloo, sync, ""), 1e-6);
  // The trace: every worker job with its cost key and its cost driver
  // (FLOPs for compute, bytes for transfers), the step on the controller.
  const std::string trace = temp_dir("trace") + ".json";
  std::vector<std::string> traced = kCommon;
  traced.insert(traced.end(), {"--framework", "flexmarl", "--trace", trace});
  ASSERT_EQ(run_flexmarl(5, traced).exit_code, 0);
  auto reader = traces::TraceReader::open(trace);
  ASSERT_TRUE(reader.is_ok()) << reader.status().message();
  std::map<std::string, int> seen;
  traces::Event e;
  while ((*reader)->next(&e)) {
    ++seen[e.cost_key];
    const bool compute = e.cost_key.starts_with("flexmarl/generate/") || e.cost_key.starts_with("flexmarl/train/");
    const bool transfer = e.cost_key.starts_with("flexmarl/load/") || e.cost_key.starts_with("flexmarl/swap-");
    if (compute) {
      EXPECT_GT(e.flops.value_or(0), 0) << e.cost_key;
    }
    if (transfer) {
      EXPECT_GT(e.bytes.value_or(0), 0) << e.cost_key;
    }
  }
  EXPECT_TRUE((*reader)->status().is_ok()) << (*reader)->status().message();
  EXPECT_EQ(seen["flexmarl/step"], 2);
  for (const std::string agent : {"planner", "solver", "checker"}) {
    EXPECT_GT(seen["flexmarl/generate/" + agent], 0) << agent;
    EXPECT_EQ(seen["flexmarl/step/" + agent], 2) << agent << ": one optimizer step per training step";
    EXPECT_EQ(seen["flexmarl/train/" + agent], 8) << agent << ": 16 samples in micro-batches of 4, two steps";
  }

  // The comparison can fail: another loss (DAPO's token mean) gives another gradient.
  const std::string dapo = run_and_dump("flexmarl", {"--loss", "dapo"});
  EXPECT_GT(worst_relative_difference(dapo, sync, ".grad"), 1e-3);
}

// Three trainers: an agent's micro-batches spread over replicas of its
// state that all-reduce at the step, and the update is still sync's.
TEST(FlexMarlRunTest, ReplicatedTrainersEqualTheSynchronousUpdate) {
  const std::vector<std::string> wide = {"--queries", "8", "--trainers", "3"};
  const std::string sync = run_and_dump("sync", {"--queries", "8"});
  const std::string trace = temp_dir("replicas") + ".json";
  std::vector<std::string> traced = wide;
  traced.insert(traced.end(), {"--trace", trace});
  const std::string dir = run_and_dump("flexmarl", traced, 8);
  const double weights = worst_relative_difference(dir, sync, "");
  const double grads = worst_relative_difference(dir, sync, ".grad");
  std::printf("flexmarl, 3 trainers, vs sync: weights %.3g, last gradient %.3g\n", weights, grads);
  EXPECT_LE(weights, 1e-6);
  EXPECT_LE(grads, 1e-6);
  auto reader = traces::TraceReader::open(trace);
  ASSERT_TRUE(reader.is_ok()) << reader.status().message();
  int all_reduced = 0;
  traces::Event e;
  while ((*reader)->next(&e)) {
    all_reduced += e.cost_key.starts_with("flexmarl/step/") && e.bytes.value_or(0) > 0;
    if (e.cost_key.starts_with("flexmarl/train/")) {
      EXPECT_GE(e.rank, 5) << "the trainers are the last three workers";
    }
  }
  EXPECT_GT(all_reduced, 0) << "no agent stepped on two replicas";
}

TEST(FlexMarlRunTest, ALatePublishIsCaughtByTheStore) {
  const CommandResult r = run_flexmarl(5, {"--framework", "flexmarl", "--steps", "2", "--fault-late-publish"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("(a rollout on a stale policy)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("written while version 1 is published"), std::string::npos) << r.err;
}

// The process twin (validate flexmarl) runs the orchestrator the real
// controller ran: on sync, whose schedule does not depend on timing, it
// posts exactly the jobs the real run did, per cost key and step. Its step
// time is printed, not bounded: the tests share this machine's cores.
TEST(FlexMarlRunTest, TheProcessTwinRunsTheRealSchedule) {
  const std::string trace = temp_dir("twin") + ".json";
  const CommandResult real = run_flexmarl(5, {"--framework", "sync", "--steps", "3", "--trace", trace});
  ASSERT_EQ(real.exit_code, 0) << real.err;
  const CommandResult v = run_clustertwin({"validate", "flexmarl", "--real", trace, "--json"});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  const nlohmann::json j = nlohmann::json::parse(v.out);
  ASSERT_EQ(j["runs"].size(), 1u);
  const nlohmann::json& run = j["runs"][0];
  std::printf("sync, 4 workers: real step %.3f s, twin (replay) %.3f s, error %+.1f%%\n",
              run["real_step_s"].get<double>(), run["twin_step_s"].get<double>(),
              100 * run["step_error"].get<double>());
  EXPECT_GT(run["twin_step_s"].get<double>(), 0);
  int keys = 0;
  for (const auto& k : run["per_key"]) {
    ++keys;
    EXPECT_EQ(k["twin_jobs"], k["real_jobs"]) << k["cost_key"];
  }
  EXPECT_GE(keys, 9) << "generate, train and step of three agents";

  // A what-if on more cores: sync's schedule is fixed, so its jobs only get faster.
  const CommandResult wide = run_clustertwin({"validate", "flexmarl", "--real", trace, "--cores", "8", "--json"});
  ASSERT_EQ(wide.exit_code, 0) << wide.err;
  const double eight = nlohmann::json::parse(wide.out)["runs"][0]["twin_step_s"].get<double>();
  EXPECT_LE(eight, run["twin_step_s"].get<double>() * (1 + 1e-9));
  EXPECT_GT(eight, 0);
  // A rollout-heavier what-if: sync's fixed schedule only gets longer.
  const CommandResult heavy =
      run_clustertwin({"validate", "flexmarl", "--real", trace, "--scale-costs", "generate=5", "--json"});
  ASSERT_EQ(heavy.exit_code, 0) << heavy.err;
  EXPECT_GT(nlohmann::json::parse(heavy.out)["runs"][0]["twin_step_s"].get<double>(), run["twin_step_s"].get<double>());
  const CommandResult bad_scale =
      run_clustertwin({"validate", "flexmarl", "--real", trace, "--scale-costs", "decode=2"});
  EXPECT_EQ(bad_scale.exit_code, 2);
  EXPECT_EQ(bad_scale.err,
            "clustertwin: --scale-costs: no cost key starts with 'flexmarl/decode/' (kinds: generate, train, step, "
            "load, swap-in, swap-out)\n");
  const CommandResult no_factor =
      run_clustertwin({"validate", "flexmarl", "--real", trace, "--scale-costs", "generate=x"});
  EXPECT_EQ(no_factor.exit_code, 2);
  EXPECT_EQ(no_factor.err,
            "clustertwin: --scale-costs 'generate=x': not KIND=FACTOR with a factor > 0 (for example generate=5)\n");
  const CommandResult no_cores = run_clustertwin({"validate", "flexmarl", "--real", trace, "--cores", "-1"});
  EXPECT_EQ(no_cores.exit_code, 2);
  EXPECT_EQ(no_cores.err, "clustertwin: --cores -1: must be >= 1\n");

  // A trace without the responses' lengths is refused with the field's name.
  std::stringstream text;
  text << std::ifstream(trace).rdbuf();
  std::string edited = text.str();
  const size_t at = edited.find("\"response_tokens\"");
  ASSERT_NE(at, std::string::npos);
  edited.replace(at, 17, "\"response_tokenz\"");
  const std::string bad = temp_dir("twin_bad") + ".json";
  std::ofstream(bad) << edited;
  const CommandResult refused = run_clustertwin({"validate", "flexmarl", "--real", bad});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find(bad + ": field 'metadata.config.response_tokens': missing"), std::string::npos)
      << refused.err;
  // So is a large task's: the twin's costs and parameter counts are the small task's.
  std::string large = text.str();
  const size_t task = large.find("\"task\":\"small\"");
  ASSERT_NE(task, std::string::npos) << "the trace's config names its task";
  large.replace(task, 14, "\"task\":\"large\"");
  const std::string big = temp_dir("twin_large") + ".json";
  std::ofstream(big) << large;
  const CommandResult unknown = run_clustertwin({"validate", "flexmarl", "--real", big});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.err;
  EXPECT_NE(
      unknown.err.find(big + ": field 'metadata.config.task': \"large\": the process twin knows only the small task"),
      std::string::npos)
      << unknown.err;
}

// Whether this binary can put tensors on a GPU: its --version says "cuda yes (N device(s) visible)" with N > 0.
bool gpu_visible() {
  const CommandResult v = run_clustertwin({"--version"});
  const std::string text = v.out + v.err;
  return text.find("cuda yes (") != std::string::npos && text.find("cuda yes (0 ") == std::string::npos;
}

// Where the tensors live: --device cpu says so in the JSON (and auto picks
// Gloo for tensors on the CPU); --device cuda without a GPU (or without a
// CUDA build) is one line naming the flag, said before any rank waits for
// another; with a GPU the run reports cuda.
TEST(FlexMarlRunTest, TheDeviceFlagSaysWhereTheTensorsLive) {
  const std::vector<std::string> tiny = {"--framework", "sync", "--steps",       "1", "--queries", "1",
                                         "--group",     "2",    "--micro-batch", "2"};
  auto with_device = [&](const std::string& device) {
    std::vector<std::string> args = tiny;
    args.insert(args.end(), {"--device", device});
    return run_flexmarl(2, args);
  };
  const CommandResult cpu = with_device("cpu");
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  EXPECT_NE(cpu.out.find("\"device\":\"cpu\",\"backend\":\"gloo\""), std::string::npos) << cpu.out;

  const CommandResult cuda = with_device("cuda");
  if (gpu_visible()) {
    EXPECT_EQ(cuda.exit_code, 0) << cuda.err;
    EXPECT_NE(cuda.out.find("\"device\":\"cuda\""), std::string::npos) << cuda.out;
    return;
  }
  EXPECT_EQ(cuda.exit_code, 2) << cuda.err;
  EXPECT_NE(cuda.err.find("clustertwin: --device cuda: "), std::string::npos) << cuda.err;
  EXPECT_EQ(cuda.out, "") << "nothing ran";
}

TEST(FlexMarlRunTest, BadFlagsExit2WithOneLine) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--micro-batch", "17"}, "--micro-batch 17: must be in [1, the global batch 16 (queries 4 x group 4)]"},
      {{"--load-gap", "0"}, "--load-gap 0: must be > 0"},
      {{"--framework", "mappo"}, "--framework 'mappo': unknown (allowed: sync, marti, flexmarl"},
      {{"--task", "huge"}, "--task 'huge': unknown (allowed: small, large)"},
      {{"--loss", "tis"}, "--loss 'tis': unknown (allowed: ppo, dapo, gspo)"},
      {{"--rollout-batch", "0"}, "--rollout-batch 0: must be >= 1"},
      {{"--transport", "rdma"}, "--transport 'rdma': unknown (allowed: shm, gloo, auto)"},
      {{"--group", "1"}, "--group 1: GRPO needs at least 2 trajectories"},
      {{"--trainers", "-1"}, "--trainers -1: must be >= 0"},
      {{"--steps", "0"}, "--steps 0: must be at least 1"},
      {{"--device", "tpu"}, "--device 'tpu': unknown device (allowed: cpu, cuda, auto)"},
      {{"--backend", "mpi"}, "--backend 'mpi': unknown backend (allowed: auto, gloo, nccl)"},
  };
  // A flag is checked before the process count: one process (no launcher) names it, as every rank would.
  for (const Case& c : cases) {
    std::vector<std::string> args = {"run", "flexmarl"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const CommandResult r = run_clustertwin(args);
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
  // NCCL needs the tensors on GPUs (and a build with c10d NCCL, which this one may lack: either way one line),
  // decided once the ranks are there: through the launcher.
  const CommandResult nccl = run_flexmarl(2, {"--backend", "nccl", "--device", "cpu", "--framework", "sync"});
  EXPECT_EQ(nccl.exit_code, 2) << nccl.err;
  EXPECT_NE(nccl.err.find("--backend nccl: "), std::string::npos) << nccl.err;
  // sync needs one worker, marti a rollout worker and a trainer, flexmarl one rollout worker per agent more.
  const CommandResult marti = run_flexmarl(4, {"--framework", "marti", "--steps", "1"});
  EXPECT_EQ(marti.exit_code, 0) << marti.err;
  const CommandResult lone = run_flexmarl(2, {"--framework", "marti"});
  EXPECT_EQ(lone.exit_code, 2) << lone.err;
  EXPECT_NE(lone.err.find("--framework marti: 2 processes leave 0 rollout workers; needs at least 3"),
            std::string::npos)
      << lone.err;
  const CommandResult few = run_flexmarl(4, {"--framework", "flexmarl"});
  EXPECT_EQ(few.exit_code, 2) << few.err;
  EXPECT_NE(few.err.find("4 processes leave 2 rollout workers for 3 agents; needs at least 5"), std::string::npos)
      << few.err;
}

}  // namespace
}  // namespace clustertwin::real::flexmarl
