// clustertwin run flexmarl: FlexMARL's real executor (its entry in common/systems.def).

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/run_options.h"
#include "real/flexmarl/flexmarl_command.h"

namespace clustertwin::cli {
namespace {

// The library names FlexMarlArgs' fields (real/flexmarl/flexmarl_command.h); the command its flags.
Status in_run_flexmarl_flag_words(const Status& status) {
  return in_run_flag_words(in_flag_words(status, {{"framework", "--framework"},
                                                  {"task", "--task"},
                                                  {"queries", "--queries"},
                                                  {"group", "--group"},
                                                  {"micro_batch", "--micro-batch"},
                                                  {"rollout_batch", "--rollout-batch"},
                                                  {"trainers", "--trainers"},
                                                  {"load_gap", "--load-gap"},
                                                  {"loss", "--loss"},
                                                  {"lr", "--lr"},
                                                  {"transport", "--transport"}}));
}

}  // namespace

void add_run_flexmarl(CLI::App* run, Action* action) {
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
  fm->add_option("--task", a->task,
                 "The task's size: small (tiny policies, the planner writes ~10 tokens, at most 64; the shipped "
                 "traces' and the process twin's) or large (planner 512 x 12 layers, solver 384 x 8, checker 256 x 4; "
                 "the planner writes ~80 tokens, at most 512: generation dominates a step on a GPU)")
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
  fm->add_option("--dump-state", a->dump_state,
                 "Write each rank's final state to DIR/rank-R.bin: the controller's published weights, last "
                 "gradients, host copies of every agent's trainer state (parameters, Adam's moments) and the "
                 "schedule's placement; each worker's loaded policies and resident trainers");
  add_checkpoint_flags(fm, &a->checkpoint_dir, &a->checkpoint_every, &a->resume, "framework",
                       "between steps, every job done (the controller waits for the last replies)");
  fm->get_option("--resume")
      ->description(
          "Start from the newest complete checkpoint in --checkpoint-dir (same world size, framework and config): "
          "sync and marti then end bit for bit where an uninterrupted run does; the flexmarl variants, whose "
          "schedule follows the order replies arrive in, to the rounding by which two uninterrupted runs differ");
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
  fm->callback([a, action] { *action = [a] { return in_run_flexmarl_flag_words(real::flexmarl::run_flexmarl(*a)); }; });
}

}  // namespace clustertwin::cli
