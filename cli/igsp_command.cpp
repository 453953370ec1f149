// The IGSP study's commands: `igsp train` (the ByteLm on the four domains,
// with checkpoints and resume), `igsp manifest` and `igsp relocate` (a
// checkpoint's corpus record), `prune` and `eval`. Their flags; what they run
// is real/igsp/igsp_command.h.

#include "real/igsp/igsp_command.h"

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/command.h"
#include "cli/torch_commands.h"

namespace clustertwin::cli {
namespace {

// The library names the arguments' fields ("sparsity 1.000000: must be in [0, 1)"); these are the flags that set
// them.
Status in_prune_flag_words(const Status& status) {
  return in_flag_words(status, {{"method", "--method"},
                                {"nm", "--nm"},
                                {"sparsity", "--sparsity"},
                                {"calib", "--calib"},
                                {"samples", "--samples"}});
}

// train's, and its one message that names two fields, the step count and the time limit ("max_steps 0 max_minutes
// 0.000000: give a positive step count or time limit"), both in flag words.
Status in_train_flag_words(const Status& status) {
  const Status s = in_flag_words(status, {{"out", "--out"},
                                          {"batch", "--batch"},
                                          {"lr", "--lr"},
                                          {"max_steps", "--steps"},
                                          {"checkpoint_minutes", "--checkpoint-minutes"},
                                          {"resume", "--resume"}});
  const std::string& m = s.message();
  const std::string minutes = " max_minutes ";
  const size_t at = m.find(minutes);
  if (m.rfind("--steps ", 0) != 0 || at == std::string::npos) return s;
  return s.with_message(m.substr(0, at) + " --minutes " + m.substr(at + minutes.size()));
}

void add_prune_command(CLI::App& app, Action* action) {
  auto p = std::make_shared<real::igsp::PruneArgs>();
  CLI::App* prune = app.add_subcommand("prune", torch_command_description("prune"));
  prune->add_option("--model", p->model, "Checkpoint to prune")->required();
  prune->add_option("--out", p->out, "Pruned checkpoint to write")->required();
  prune->add_option("--method", p->method, "sparsegpt, wanda or magnitude")->capture_default_str();
  prune->add_option("--sparsity", p->sparsity, "Unstructured fraction pruned, in [0, 1)")->capture_default_str();
  prune->add_option("--nm", p->nm, "N:M structured sparsity instead (2:4 prunes 2 of every 4)");
  prune
      ->add_option("--calib", p->calib,
                   "Calibration set: a domain (general, code, math, commonsense) or several joined by + or , (their "
                   "uniform mix); mix (all four); random (bytes, the negative control); selfcal (the model's own "
                   "text, temperature rising); sgs (continuations of source prefixes, perplexity-filtered); igsp "
                   "(self-generated, selected for least repeated 4-grams with perplexity strata balanced); "
                   "igsp-unique (the other sign: least unique 4-grams)")
      ->capture_default_str();
  prune->add_option("--samples", p->samples, "Calibration windows of the model's context")->capture_default_str();
  prune->add_option("--seed", p->seed, "Seed of the calibration draw")->capture_default_str();
  prune->callback([p, action] { *action = [p] { return in_prune_flag_words(real::igsp::run_prune(*p)); }; });
}

void add_eval_command(CLI::App& app, Action* action) {
  auto e = std::make_shared<real::igsp::EvalArgs>();
  CLI::App* eval = app.add_subcommand("eval", torch_command_description("eval"));
  eval->add_option("--model", e->model, "Checkpoint to score")->required();
  eval->add_option("--items", e->items, "Arithmetic and commonsense items each")->capture_default_str();
  eval->add_flag("--json", e->json, "Print JSON");
  eval->callback([e, action] {
    *action = [e] { return in_flag_words(real::igsp::run_eval(*e), {{"items", "--items"}}); };
  });
}

void add_igsp_train_command(CLI::App* igsp, Action* action) {
  auto o = std::make_shared<real::igsp::TrainOptions>();
  o->max_minutes = 20;
  CLI::App* train = igsp->add_subcommand(
      "train",
      "Train the study's byte-level transformer on four domains (General: English prose, licence texts and "
      "package READMEs; Code: C++ headers; both from the packs shipped in models/igsp/data/corpus unless --general "
      "or --code say otherwise; Math and Commonsense: generated from the seed). Writes the checkpoint every "
      "--checkpoint-minutes and at the end (atomically); --resume continues exactly where the checkpoint stopped. "
      "The checkpoint's manifest names every corpus file with its size and CRC-32");
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
  train->add_option("--general", o->general_roots,
                    "General text instead of the shipped pack: folders (their licence texts and README files), "
                    "packs (.tar or .tar.gz) or files, each in sorted path order");
  train->add_option("--code", o->code_roots,
                    "Code text instead of the shipped pack: folders (their .h and .hpp files), packs or files");
  train->callback([o, action] { *action = [o] { return in_train_flag_words(real::igsp::run_igsp_train(*o)); }; });
}

void add_igsp_manifest_command(CLI::App* igsp, Action* action) {
  auto m = std::make_shared<real::igsp::ManifestArgs>();
  CLI::App* manifest = igsp->add_subcommand(
      "manifest",
      "Print a checkpoint's manifest (JSON): the model options, seed, step and loss, and every corpus file with its "
      "size and CRC-32");
  manifest->add_option("--model", m->model, "Checkpoint")->required();
  manifest->callback([m, action] { *action = [m] { return real::igsp::run_igsp_manifest(*m); }; });
}

void add_igsp_relocate_command(CLI::App* igsp, Action* action) {
  auto r = std::make_shared<real::igsp::RelocateArgs>();
  CLI::App* relocate = igsp->add_subcommand(
      "relocate",
      "Point a checkpoint's manifest at other copies of its General and Code text (folders, packs or files, as "
      "train's --general and --code take them), after checking that they hold byte for byte the text the manifest "
      "names (whose files must still be there); rewrites the checkpoint, its parameters unchanged (read back and "
      "compared bit for bit)");
  relocate->add_option("--model", r->model, "Checkpoint to rewrite")->required();
  relocate->add_option("--general", r->general, "Where the General text now is");
  relocate->add_option("--code", r->code, "Where the Code text now is");
  relocate->callback([r, action] {
    *action = [r]() -> Status {
      if (r->general.empty() && r->code.empty()) return Status::invalid_argument("relocate: give --general or --code");
      return real::igsp::run_igsp_relocate(*r);
    };
  });
}

}  // namespace

void add_igsp_command(CLI::App& app, Action* action) {
  add_prune_command(app, action);
  add_eval_command(app, action);
  CLI::App* igsp = app.add_subcommand("igsp", torch_command_description("igsp"));
  igsp->require_subcommand(1, 1);
  add_igsp_train_command(igsp, action);
  add_igsp_manifest_command(igsp, action);
  add_igsp_relocate_command(igsp, action);
}

}  // namespace clustertwin::cli
