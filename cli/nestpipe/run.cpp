// clustertwin run nestpipe: NestPipe's real executor (its entry in common/systems.def).

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/run_options.h"
#include "real/nestpipe/nestpipe_command.h"

namespace clustertwin::cli {
namespace {

// The library names NestPipeArgs' fields (real/nestpipe/nestpipe_command.h); the command its flags.
Status in_run_nestpipe_flag_words(const Status& status) {
  return in_run_flag_words(in_flag_words(status, {{"variant", "--variant"},
                                                  {"micro_batches", "--micro-batches"},
                                                  {"batch", "--batch"},
                                                  {"model", "--model"},
                                                  {"optimizer", "--optimizer"},
                                                  {"dense_optimizer", "--dense-optimizer"},
                                                  {"lr", "--lr"},
                                                  {"dense_lr", "--dense-lr"},
                                                  {"zipf", "--zipf"},
                                                  {"overlap", "--overlap"},
                                                  {"vocab", "--vocab"},
                                                  {"criteo", "--criteo"},
                                                  {"no_patch", "--no-patch"},
                                                  {"strict", "--strict"},
                                                  {"store", "--store"},
                                                  {"trace", "--trace"}}));
}

}  // namespace

void add_run_nestpipe(CLI::App* run, Action* action) {
  auto a = std::make_shared<real::nestpipe::NestPipeArgs>();
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
  add_checkpoint_flags(np, &a->checkpoint_dir, &a->checkpoint_every, &a->resume, "variant",
                       "the pipeline drains there");
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
  np->callback([a, action] { *action = [a] { return in_run_nestpipe_flag_words(real::nestpipe::run_nestpipe(*a)); }; });
}

}  // namespace clustertwin::cli
