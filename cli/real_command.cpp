// clustertwin run collectives|plan|nestpipe|flexmarl|flowtrain: the real executor, one rank per process
// (started by `clustertwin launch`, torchrun or srun).

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/torch_commands.h"
#include "real/core/run_commands.h"
#include "real/flexmarl/flexmarl_command.h"
#include "real/flowtrain/flowtrain_command.h"
#include "real/nestpipe/nestpipe_command.h"

namespace clustertwin::cli {
namespace {

using real::RealArgs;

constexpr char kDeviceHelp[] =
    "Where the tensors live: cpu, cuda (GPU LOCAL_RANK mod the GPUs visible), or auto (cuda when this build has CUDA "
    "and a GPU is visible)";
constexpr char kBackendHelp[] =
    "auto (NCCL when the tensors are on GPUs and each rank of the node has a GPU of its own, else Gloo), gloo (GPU "
    "tensors staged through host memory) or nccl";

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

void add_nestpipe(CLI::App* run, Action* action) {
  auto a = std::make_shared<nestpipe::NestPipeArgs>();
  CLI::App* np = run->add_subcommand(
      "nestpipe",
      "Train a recommender with NestPipe's schedules for real: a sharded embedding store (key mod ranks), key and row "
      "All2Alls, the dense model data-parallel, one plan (models/nestpipe/plans.h) per variant; a per-row version "
      "oracle checks that every row served is as fresh as synchronous training makes it");
  np->add_option("--variant", a->variant, "torchrec, semisync, dbp, fwp or nestpipe (2dsp is twin-only)")
      ->capture_default_str();
  np->add_option("--steps", a->steps, "Batches to train")->capture_default_str();
  np->add_option("--micro-batches", a->micro_batches,
                 "Micro-batches per batch: fwp and nestpipe pipeline them, the others compute over the same split")
      ->capture_default_str();
  np->add_option("--batch", a->batch, "Samples per rank and batch")->capture_default_str();
  np->add_option("--model", a->model, "Model spec: dlrm-small or hstu-small (any dlrm or hstu spec)")
      ->capture_default_str();
  np->add_option("--optimizer", a->optimizer, "Embedding optimizer: sgd or adagrad (row-wise)")->capture_default_str();
  np->add_option("--dense-optimizer", a->dense_optimizer, "Dense optimizer: sgd or adam")->capture_default_str();
  np->add_option("--lr", a->lr, "Embedding learning rate")->capture_default_str();
  np->add_option("--dense-lr", a->dense_lr, "Dense learning rate")->capture_default_str();
  np->add_option("--zipf", a->zipf, "Synthetic keys: Zipf exponent")->capture_default_str();
  np->add_option("--overlap", a->overlap, "Synthetic keys: share of a batch's keys copied from the previous batch")
      ->capture_default_str();
  np->add_option("--vocab", a->vocab, "Rows of the embedding table (one table shared by all features)")
      ->capture_default_str();
  np->add_option("--criteo", a->criteo,
                 "Train on a Criteo TSV (plain or .gz) instead of synthetic keys: rank r takes lines r, r+N, ...");
  np->add_flag("--no-patch", a->no_patch, "dbp, nestpipe: skip the dual buffer's patch (the negative control)");
  np->add_flag("--strict", a->strict, "Exit 1 when the version oracle finds a stale row");
  np->add_option("--dump-state", a->dump_state,
                 "Write each rank's embedding shard, versions, dense parameters and optimizer state to DIR/rank-R.bin");
  np->add_flag("--json", a->json, "Print one JSON object instead of the table");
  np->add_flag("--no-check-order", a->no_check_order,
               "Skip comparing each collective across ranks before running it (saves a small all-gather)");
  np->add_option("--device", a->device, kDeviceHelp)->capture_default_str();
  np->add_option("--backend", a->backend, kBackendHelp)->capture_default_str();
  np->add_option("--store", a->store,
                 "The embedding store: host (pinned host memory on a GPU, as the paper keeps its tables) or device")
      ->capture_default_str();
  np->add_option("--timeout", a->timeout_s,
                 "Seconds a rendezvous or collective may wait for other ranks before failing")
      ->capture_default_str();
  np->add_option("--threads", a->threads, "Intra-op threads per rank (1 keeps CPU kernels deterministic)")
      ->capture_default_str();
  np->add_option("--seed", a->seed, "Seed of the data, the embedding rows and the dense model")->capture_default_str();
  np->add_option("--trace", a->trace, "Write the merged trace of all ranks here (rank 0 writes it)");
  np->callback([a, action] { *action = [a] { return nestpipe::run_nestpipe(*a); }; });
}

void add_flexmarl(CLI::App* run, Action* action) {
  auto a = std::make_shared<real::flexmarl::FlexMarlArgs>();
  CLI::App* fm = run->add_subcommand(
      "flexmarl",
      "Multi-agent RL for real with FlexMARL's designs: three GPT policies of different sizes (planner, solver, "
      "checker) answer arithmetic problems in turn, GRPO trains each; rank 0 is the controller (experience store, "
      "load balancer, published weights), ranks 1..N-1 are workers. Frameworks: sync (colocated: each agent's "
      "engine on every worker, agents roll out turn by turn, then train in turn on every worker), "
      "marti (a rollout pool and a training pool: turn-by-turn rollout, then the agents train side by side), "
      "flexmarl (rollout instances apart from trainers, hierarchical load balancing, micro-batches trained as soon "
      "as rewarded on whichever trainers are free, state copied between host and trainers), flexmarl-nobalance, "
      "flexmarl-noasync. marti needs 3 processes at least, the flexmarl variants a controller, one rollout worker "
      "per agent and the trainers: 5 at least");
  fm->add_option("--framework", a->framework, "sync, marti, flexmarl, flexmarl-nobalance or flexmarl-noasync")
      ->capture_default_str();
  fm->add_option("--steps", a->steps, "Training steps (each: a global batch per agent, one update per agent)")
      ->capture_default_str();
  fm->add_option("--queries", a->queries, "Problems per step")->capture_default_str();
  fm->add_option("--group", a->group, "Trajectories per problem: GRPO's group")->capture_default_str();
  fm->add_option("--micro-batch", a->micro_batch,
                 "Samples per micro-batch (at most --queries x --group, the global batch)")
      ->capture_default_str();
  fm->add_option("--rollout-batch", a->rollout_batch,
                 "Requests an instance takes per rollout job at most: the engine's static batch (a row that stops "
                 "early waits for the batch's longest)")
      ->capture_default_str();
  fm->add_option("--trainers", a->trainers,
                 "marti and the flexmarl variants: trainer workers, the last ones; the rest roll out (0: a quarter "
                 "of the workers, at least 1)")
      ->capture_default_str();
  fm->add_option("--load-gap", a->load_gap,
                 "The balancer's threshold: requests of load gap between instances (or agents, per instance) that "
                 "trigger a move; > 0")
      ->capture_default_str();
  fm->add_option("--loss", a->loss, "ppo (GRPO's clipped token loss), dapo or gspo")->capture_default_str();
  fm->add_flag("--sis", a->sis, "Selective importance sampling on top of the loss (real/sis)");
  fm->add_option("--lr", a->lr, "Adam's learning rate")->capture_default_str();
  fm->add_option("--dump-params", a->dump_params,
                 "Write each agent's final weights and its last step's gradient to DIR/rank-0.bin (float64)");
  fm->add_flag("--fault-late-publish", a->fault_late_publish,
               "Testing: worker 1 ignores its first weight load after an update, so its next rollout runs a stale "
               "policy; the experience store must refuse it (exit 1)");
  fm->add_flag("--json", a->json, "Print one JSON object instead of the table");
  fm->add_option("--device", a->device,
                 std::string(kDeviceHelp) +
                     ". The workers' policies, rollout engines, trainers and optimizer state live there; a state swap "
                     "copies between pinned host memory and the GPU; the controller stays on the host")
      ->capture_default_str();
  fm->add_option("--backend", a->backend,
                 std::string(kBackendHelp) +
                     ". For weights, gradients and trainer state; the controller's messages always go over Gloo")
      ->capture_default_str();
  fm->add_option("--transport", a->transport,
                 "Weights and trainer state between ranks: shm (shared memory), gloo (the data process groups, "
                 "whatever --backend), auto (shm when every rank is on this machine)")
      ->capture_default_str();
  fm->add_option("--timeout", a->timeout_s, "Seconds a receive or collective may wait before failing")
      ->capture_default_str();
  fm->add_option("--threads", a->threads, "Intra-op threads per rank")->capture_default_str();
  fm->add_option("--seed", a->seed, "Seed of the problems, the policies and the sampling")->capture_default_str();
  fm->add_option("--trace", a->trace, "Write the merged trace of all ranks here (rank 0 writes it)");
  fm->callback([a, action] { *action = [a] { return real::flexmarl::run_flexmarl(*a); }; });
}

void add_flowtrain(CLI::App* run, Action* action) {
  auto a = std::make_shared<real::flowtrain::FlowTrainRunArgs>();
  CLI::App* ft = run->add_subcommand(
      "flowtrain",
      "Vision-language model training for real with FlowTrain's designs: a tiny VLM (ViT encoder, projector, GPT "
      "backbone) on the synthetic multimodal dataset (0-8 images and a heavy-tailed text per sample), SGD with "
      "momentum on the summed loss of each global batch. Modes: monolithic (every rank runs encoder and backbone "
      "for its share of the samples, one all-reduce), disagg-sync (ranks [0, E) encode, the rest train the "
      "backbone; micro-batches packed by tokens, lock-step rounds over send/recv), flowtrain (the same split, "
      "decoupled through a shared-memory pool: micro-batches packed by backbone cost, encoders put embeddings as "
      "fast as the pool's slots allow, backbones take them and put the embeddings' gradients back, encoders "
      "recompute and run their backward; encoder updates at step boundaries). All modes end a step with the same "
      "parameters up to rounding. The split modes need 2 processes at least");
  ft->add_option("--mode", a->mode, "monolithic, disagg-sync or flowtrain")->capture_default_str();
  ft->add_option("--steps", a->steps, "Training steps")->capture_default_str();
  ft->add_option("--global-batch", a->global_batch, "Samples per step")->capture_default_str();
  ft->add_option("--encoder-workers", a->encoder_workers,
                 "Split modes: encoder workers, ranks 0..E-1 (0: a quarter of the ranks, at least 1)")
      ->capture_default_str();
  ft->add_option("--micro-batch-tokens", a->micro_batch_tokens, "Backbone tokens per packed micro-batch")
      ->capture_default_str();
  ft->add_option("--pool-slots", a->pool_slots,
                 "flowtrain: embedding slots of each encoder worker's pool, one sample each (how far it may run ahead)")
      ->capture_default_str();
  ft->add_option("--lr", a->lr, "SGD's learning rate (momentum 0.9)")->capture_default_str();
  ft->add_option("--width", a->width,
                 "The tiny VLM's widths (d_vision, d_model and their MLPs) times this, depth and tokens unchanged: "
                 "a GPU needs 8 or more to have work")
      ->capture_default_str();
  ft->add_option("--seed", a->seed, "Seed of the model and the data")->capture_default_str();
  ft->add_option("--trace", a->trace, "Write the merged trace of all ranks here (rank 0 writes it)");
  ft->add_option("--dump-params", a->dump_params, "Write the final parameters to DIR/rank-0.bin (float64)");
  ft->add_flag("--json", a->json, "Print one JSON object instead of the table");
  ft->add_option("--device", a->device, kDeviceHelp)->capture_default_str();
  ft->add_option("--backend", a->backend, kBackendHelp)->capture_default_str();
  ft->add_option("--pool-transfer", a->pool_transfer,
                 "flowtrain on a GPU: how the pool moves embeddings between processes: cuda-ipc (device to device "
                 "through CUDA IPC handles), host (staged through pinned host memory) or auto (cuda-ipc where every "
                 "rank can share GPU memory, else host)")
      ->capture_default_str();
  ft->add_option("--timeout", a->timeout_s, "Seconds a receive, pool access or collective may wait before failing")
      ->capture_default_str();
  ft->add_option("--threads", a->threads, "Intra-op threads per rank")->capture_default_str();
  ft->callback([a, action] { *action = [a] { return real::flowtrain::run_flowtrain(*a); }; });
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
  coll->callback([a, action] { *action = [a] { return real::run_collectives(*a); }; });

  CLI::App* plan = run->add_subcommand(
      "plan",
      "Run a step plan (models/plan/README.md) for real with synthetic task bodies: matrix multiplies of each task's "
      "FLOPs, the real collectives on its bytes, copies and lookups of its bytes; one thread per stream");
  plan->add_option("PLAN", a->plan_file, "Plan file (.json)")->required();
  plan->add_option("--steps", a->steps, "Steps to run")->capture_default_str();
  plan->add_flag("--no-check-order", a->no_check_order,
                 "Skip comparing each collective across ranks before running it (saves a small all-gather)");
  add_common(plan, a.get());
  plan->callback([a, action] { *action = [a] { return real::run_plan(*a); }; });

  add_nestpipe(run, action);
  add_flexmarl(run, action);
  add_flowtrain(run, action);
}

}  // namespace clustertwin::cli
