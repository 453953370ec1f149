// clustertwin run collectives|plan|nestpipe|flexmarl|flowtrain: the real executor, one rank per process
// (started by `clustertwin launch`, torchrun or srun).

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/run_options.h"
#include "cli/torch_commands.h"
#include "real/core/run_commands.h"

namespace clustertwin::cli {

const char kDeviceHelp[] =
    "Where the tensors live: cpu, cuda (GPU LOCAL_RANK mod the GPUs visible), or auto (cuda when this build has CUDA "
    "and a GPU is visible)";
const char kBackendHelp[] =
    "auto (NCCL when the tensors are on GPUs and each rank of the node has a GPU of its own, else Gloo), gloo (GPU "
    "tensors staged through host memory) or nccl";

Status in_run_flag_words(const Status& status) {
  return in_flag_words(status, {{"device", "--device"},
                                {"backend", "--backend"},
                                {"timeout_s", "--timeout"},
                                {"threads", "--threads"},
                                {"steps", "--steps"},
                                {"checkpoint_dir", "--checkpoint-dir"},
                                {"checkpoint_every", "--checkpoint-every"},
                                {"resume", "--resume"}});
}

void add_checkpoint_flags(CLI::App* app, std::string* dir, int* every, bool* resume, const std::string& kind,
                          const std::string& boundary) {
  app->add_option("--checkpoint-dir", *dir,
                  "Checkpoints go to DIR/step-NNNNNN/: each rank's full training state (rank-R.bin) and, written "
                  "last, manifest.json (step, world size, " +
                      kind + ", config, a CRC-32 per rank file); the last 2 complete ones are kept");
  app->add_option("--checkpoint-every", *every,
                  "Write a checkpoint after every N steps (needs --checkpoint-dir); " + boundary)
      ->capture_default_str();
  app->add_flag("--resume", *resume,
                "Start from the newest complete checkpoint in --checkpoint-dir (same world size, " + kind +
                    " and config); the run then equals an uninterrupted one bit for bit");
}

namespace {

using real::RealArgs;

// run collectives' and run plan's own fields (real/core/run_commands.h RealArgs).
Status in_real_flag_words(const Status& status) {
  return in_run_flag_words(
      in_flag_words(status, {{"ops", "--ops"}, {"sizes", "--sizes"}, {"iters", "--iters"}, {"warmup", "--warmup"}}));
}

void add_common(CLI::App* app, RealArgs* a) {
  app->add_option("--device", a->device, kDeviceHelp)->capture_default_str();
  app->add_option("--backend", a->backend, kBackendHelp)->capture_default_str();
  app->add_option("--timeout", a->timeout_s,
                  "Seconds a rendezvous or collective may wait for other ranks before failing")
      ->capture_default_str();
  app->add_option("--threads", a->threads, "Intra-op threads per rank (ranks share the machine's cores)")
      ->capture_default_str();
  app->add_option("--seed", a->seed, "Seed of the data")->capture_default_str();
  app->add_option("--trace", a->trace, "Write the merged trace of all ranks here (rank 0 writes it)");
}

}  // namespace

void add_real_command(CLI::App& app, Action* action) {
  auto a = std::make_shared<RealArgs>();
  CLI::App* run = app.add_subcommand("run", torch_command_description("run"));
  run->require_subcommand(1, 1);

  CLI::App* coll = run->add_subcommand(
      "collectives",
      "Benchmark c10d collectives as nccl-tests does: size, count, type, time, algbw, busbw (GB = 1e9 B), #wrong "
      "from a check of every element; the trace is the calibrators' network input");
  coll->add_option("--ops", a->ops, "Comma-separated: allreduce, alltoall, allgather, reducescatter, broadcast")
      ->capture_default_str();
  coll->add_option("--sizes", a->sizes, "A doubling range LO:HI or a list, K/M/G = powers of 1024")
      ->capture_default_str();
  coll->add_option("--iters", a->iters, "Timed iterations per size")->capture_default_str();
  coll->add_option("--warmup", a->warmup, "Untimed iterations before")->capture_default_str();
  coll->add_flag("--json", a->json, "Print JSON instead of the table");
  add_common(coll, a.get());
  coll->callback([a, action] { *action = [a] { return in_real_flag_words(real::run_collectives(*a)); }; });

  CLI::App* plan = run->add_subcommand(
      "plan",
      "Run a step plan (models/plan/README.md) for real with synthetic task bodies: matrix multiplies of each task's "
      "FLOPs, the real collectives on its bytes, copies and lookups of its bytes; one thread per stream");
  plan->add_option("PLAN", a->plan_file, "Plan file (.json)")->required();
  plan->add_option("--steps", a->steps, "Steps to run")->capture_default_str();
  plan->add_flag("--no-check-order", a->no_check_order,
                 "Skip comparing each collective across ranks before running it (saves a small all-gather)");
  add_common(plan, a.get());
  plan->callback([a, action] { *action = [a] { return in_real_flag_words(real::run_plan(*a)); }; });

#define CT_SYSTEM(name, title) add_run_##name(run, action);
#include "common/systems.def"
#undef CT_SYSTEM
}

}  // namespace clustertwin::cli
