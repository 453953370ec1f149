// The IGSP study's commands (real/igsp): `igsp train` (the ByteLm on the four
// domains, with checkpoints and resume), `igsp manifest` and `igsp relocate`
// (a checkpoint's corpus record), `prune` and `eval`.

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/torch_commands.h"
#include "common/text.h"
#include "real/igsp/calibration_set.h"
#include "real/igsp/evaluate.h"
#include "real/igsp/model_pruner.h"
#include "real/igsp/self_generation.h"
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

struct RelocateArgs {
  std::string model;
  std::vector<std::string> general, code;
};

struct PruneArgs {
  std::string model, out, method = "sparsegpt", calib = "mix", nm;
  double sparsity = 0.6;
  int64_t samples = 128;
  uint64_t seed = 0;
};

Status run_prune(const PruneArgs& a) {
  auto method = real::igsp::prune_method_from_name(a.method);
  if (!method.is_ok()) return method.status();
  real::igsp::ModelPruneOptions o;
  o.method = *method;
  o.layer.sparsity = a.sparsity;
  if (!a.nm.empty()) {
    const size_t colon = a.nm.find(':');
    int n = 0, m = 0;
    if (colon == std::string::npos || std::sscanf(a.nm.c_str(), "%d:%d", &n, &m) != 2 || n < 1 || m < 1 || n >= m) {
      return Status::invalid_argument("--nm '" + a.nm + "': expected N:M with 1 <= N < M, like 2:4");
    }
    o.layer.n = n;
    o.layer.m = m;
  }
  if (!(a.sparsity >= 0 && a.sparsity < 1))
    return Status::invalid_argument("--sparsity " + std::to_string(a.sparsity) + ": must be in [0, 1)");
  auto checkpoint = models::nets::load_byte_lm(a.model);
  if (!checkpoint.is_ok()) return checkpoint.status();
  auto corpus = real::igsp::corpus_for(checkpoint->meta_json, a.model);
  if (!corpus.is_ok()) return corpus.status();
  real::igsp::CalibrationSetOptions c;
  c.samples = a.samples;
  c.length = checkpoint->model->options().context;
  c.seed = a.seed;
  auto calib = real::igsp::make_calibration_set(a.calib, checkpoint->model, *corpus, c);
  if (!calib.is_ok()) return calib.status();
  const auto start = std::chrono::steady_clock::now();
  auto reports = real::igsp::prune_byte_lm(checkpoint->model, calib->bytes, o);
  if (!reports.is_ok()) return reports.status();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int64_t pruned = 0, total = 0;
  for (const auto& r : *reports) {
    pruned += r.pruned;
    total += r.rows * r.columns;
  }
  nlohmann::ordered_json meta = nlohmann::ordered_json::parse(checkpoint->meta_json);
  meta["pruned"] = {{"method", a.method},   {"sparsity", a.sparsity}, {"nm", a.nm},     {"calib", a.calib},
                    {"samples", a.samples}, {"seed", a.seed},         {"from", a.model}};
  CT_RETURN_IF_ERROR(models::nets::save_byte_lm(checkpoint->model, meta.dump(2), a.out));
  std::printf("pruned %zu Linears with %s on %lld samples of %s in %.1f s: %.2f%% of their weights zero; wrote %s\n",
              reports->size(), a.method.c_str(), static_cast<long long>(a.samples), a.calib.c_str(), seconds,
              100.0 * static_cast<double>(pruned) / static_cast<double>(std::max<int64_t>(1, total)), a.out.c_str());
  return Status::ok();
}

struct EvalArgs {
  std::string model;
  int items = 200;
  bool json = false;
};

Status run_eval(const EvalArgs& a) {
  if (a.items < 1) return Status::invalid_argument("--items " + std::to_string(a.items) + ": must be >= 1");
  auto checkpoint = models::nets::load_byte_lm(a.model);
  if (!checkpoint.is_ok()) return checkpoint.status();
  auto set = real::igsp::eval_set_for(checkpoint->meta_json, a.model, a.items);
  if (!set.is_ok()) return set.status();
  const auto scores = real::igsp::evaluate(checkpoint->model, *set);
  if (a.json) {
    nlohmann::ordered_json j;
    j["model"] = a.model;
    j["scores"] = nlohmann::ordered_json::array();
    for (const auto& s : scores) {
      j["scores"].push_back({{"dimension", clustertwin::models::igsp::domain_name(s.domain)},
                             {"metric", s.metric},
                             {"value", s.value},
                             {"items", s.items}});
    }
    return write_output("-", j.dump(2) + "\n");
  }
  std::printf("# clustertwin eval: %s\n", a.model.c_str());
  for (const auto& s : scores) {
    std::printf("  %-12s %-10s %8.4f  (%lld %s)\n", clustertwin::models::igsp::domain_name(s.domain), s.metric.c_str(),
                s.value, static_cast<long long>(s.items), s.metric == "perplexity" ? "bytes" : "items");
  }
  return Status::ok();
}

void add_prune_command(CLI::App& app, Action* action) {
  auto p = std::make_shared<PruneArgs>();
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
  prune->callback([p, action] { *action = [p] { return run_prune(*p); }; });
}

void add_eval_command(CLI::App& app, Action* action) {
  auto e = std::make_shared<EvalArgs>();
  CLI::App* eval = app.add_subcommand("eval", torch_command_description("eval"));
  eval->add_option("--model", e->model, "Checkpoint to score")->required();
  eval->add_option("--items", e->items, "Arithmetic and commonsense items each")->capture_default_str();
  eval->add_flag("--json", e->json, "Print JSON");
  eval->callback([e, action] { *action = [e] { return run_eval(*e); }; });
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
  train->callback([o, action] { *action = [o] { return run_train(*o); }; });
}

void add_igsp_manifest_command(CLI::App* igsp, Action* action) {
  auto manifest_model = std::make_shared<std::string>();
  CLI::App* manifest = igsp->add_subcommand(
      "manifest",
      "Print a checkpoint's manifest (JSON): the model options, seed, step and loss, and every corpus file with its "
      "size and CRC-32");
  manifest->add_option("--model", *manifest_model, "Checkpoint")->required();
  manifest->callback([manifest_model, action] {
    *action = [manifest_model]() -> Status {
      auto checkpoint = models::nets::load_byte_lm(*manifest_model);
      if (!checkpoint.is_ok()) return checkpoint.status();
      return write_output("-", checkpoint->meta_json + "\n");
    };
  });
}

void add_igsp_relocate_command(CLI::App* igsp, Action* action) {
  auto r = std::make_shared<RelocateArgs>();
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
      CT_RETURN_IF_ERROR(real::igsp::relocate_corpus(r->model, r->general, r->code));
      std::printf("%s: manifest rewritten, parameters unchanged\n", r->model.c_str());
      return Status::ok();
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
