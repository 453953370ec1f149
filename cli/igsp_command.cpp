// clustertwin igsp ...: the IGSP study's commands (real/igsp). So far:
// `igsp train`, the ByteLm on the four domains with checkpoints and resume.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "real/igsp/train.h"

namespace clustertwin::cli {
namespace {

Status run_train(const real::igsp::TrainOptions& o) {
  std::fprintf(stderr,
               "# clustertwin igsp train: %s, d_model %lld, %lld layers, context %lld, batch %lld, seed %llu%s\n",
               o.out.c_str(), static_cast<long long>(o.model.d_model), static_cast<long long>(o.model.layers),
               static_cast<long long>(o.model.context), static_cast<long long>(o.batch),
               static_cast<unsigned long long>(o.seed), o.resume ? ", resuming" : "");
  auto r = real::igsp::train_byte_lm(o, [](const real::igsp::TrainProgress& p) {
    std::fprintf(stderr, "step %7lld  loss %.4f  %8.0f bytes/s  %6.1f min%s\n", static_cast<long long>(p.step), p.loss,
                 p.tokens_per_s, p.elapsed_s / 60, p.checkpointed ? "  (checkpoint written)" : "");
  });
  if (!r.is_ok()) return r.status();
  std::printf("trained steps %lld..%lld in %.1f min, last loss %.4f, %d checkpoint(s): %s\n",
              static_cast<long long>(r->first_step), static_cast<long long>(r->steps), r->seconds / 60, r->last_loss,
              r->checkpoints, o.out.c_str());
  return Status::ok();
}

}  // namespace

void add_igsp_command(CLI::App& app, Action* action) {
  CLI::App* igsp = app.add_subcommand("igsp", "The IGSP study: calibration data for SparseGPT pruning, per capability");
  igsp->require_subcommand(1, 1);
  auto o = std::make_shared<real::igsp::TrainOptions>();
  o->max_minutes = 20;
  CLI::App* train = igsp->add_subcommand(
      "train",
      "Train the study's byte-level transformer on four domains (General: English prose from "
      "/usr/share/common-licenses and package READMEs; Code: /usr/include headers; Math and Commonsense: generated "
      "from the seed). Writes the checkpoint every --checkpoint-minutes and at the end (atomically); --resume "
      "continues exactly where the checkpoint stopped. The checkpoint's manifest names every corpus file with its "
      "size and CRC-32");
  train->add_option("-o,--out", o->out, "Checkpoint to write (OUT.state: the optimiser state for --resume)")
      ->required();
  train->add_option("--minutes", o->max_minutes, "Stop after this many minutes (0: no limit)")->capture_default_str();
  train->add_option("--steps", o->max_steps, "Steps of the learning-rate schedule, and a stop (0: no limit)")
      ->capture_default_str();
  train->add_option("--stop-at", o->stop_at, "Stop at this step without changing the schedule (0: none)");
  train->add_flag("--resume", o->resume, "Continue from --out and OUT.state");
  train->add_option("--seed", o->seed, "Seed of the initialisation, the batches and the generated domains")
      ->capture_default_str();
  train->add_option("--batch", o->batch, "Windows per step")->capture_default_str();
  train->add_option("--lr", o->lr, "Peak AdamW learning rate (linear warm-up, cosine to 10% over --steps)")
      ->capture_default_str();
  train->add_option("--context", o->model.context, "Bytes per window")->capture_default_str();
  train->add_option("--d-model", o->model.d_model, "Width")->capture_default_str();
  train->add_option("--layers", o->model.layers, "Blocks")->capture_default_str();
  train->add_option("--heads", o->model.heads, "Attention heads")->capture_default_str();
  train->add_option("--d-ff", o->model.d_ff, "MLP width")->capture_default_str();
  train->add_option("--domain-bytes", o->domain_bytes, "Training bytes per domain (General and Code: at most)")
      ->capture_default_str();
  train->add_option("--checkpoint-minutes", o->checkpoint_minutes, "Minutes between checkpoints")
      ->capture_default_str();
  train->callback([o, action] { *action = [o] { return run_train(*o); }; });
}

}  // namespace clustertwin::cli
