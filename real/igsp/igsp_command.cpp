// The IGSP kernel's commands: what cli/igsp_command.cpp runs once it has
// parsed the flags.

#include "real/igsp/igsp_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "models/torch/byte_lm.h"
#include "real/igsp/calibration_set.h"
#include "real/igsp/corpus_manifest.h"
#include "real/igsp/evaluate.h"
#include "real/igsp/model_pruner.h"
#include "real/igsp/train.h"

namespace clustertwin::real::igsp {
namespace {

// `nm` ("2:4") as the layer options' n and m; InvalidArgument naming the field otherwise.
Status parse_nm(const std::string& nm, PruneOptions& layer) {
  const size_t colon = nm.find(':');
  int n = 0, m = 0;
  if (colon == std::string::npos || std::sscanf(nm.c_str(), "%d:%d", &n, &m) != 2 || n < 1 || m < 1 || n >= m) {
    return Status::invalid_argument("nm '" + nm + "': expected N:M with 1 <= N < M, like 2:4");
  }
  layer.n = n;
  layer.m = m;
  return Status::ok();
}

// The options of `prune` that are checked before the checkpoint is read.
StatusOr<ModelPruneOptions> prune_options(const PruneArgs& a) {
  auto method = prune_method_from_name(a.method);
  if (!method.is_ok()) return method.status();
  ModelPruneOptions o;
  o.method = *method;
  o.layer.sparsity = a.sparsity;
  if (!a.nm.empty()) CT_RETURN_IF_ERROR(parse_nm(a.nm, o.layer));
  if (!(a.sparsity >= 0 && a.sparsity < 1))
    return Status::invalid_argument("sparsity " + std::to_string(a.sparsity) + ": must be in [0, 1)");
  return o;
}

}  // namespace

Status run_igsp_train(const TrainOptions& o) {
  std::fprintf(stderr,
               "# clustertwin igsp train: %s, d_model %lld, %lld layers, context %lld, batch %lld, seed %llu%s\n",
               o.out.c_str(), static_cast<long long>(o.model.d_model), static_cast<long long>(o.model.layers),
               static_cast<long long>(o.model.context), static_cast<long long>(o.batch),
               static_cast<unsigned long long>(o.seed), o.resume ? ", resuming" : "");
  auto r = train_byte_lm(o, [](const TrainProgress& p) {
    std::fprintf(stderr, "step %7lld  loss %.4f  %8.0f bytes/s  %6.1f min%s\n", static_cast<long long>(p.step), p.loss,
                 p.tokens_per_s, p.elapsed_s / 60, p.checkpointed ? "  (checkpoint written)" : "");
  });
  if (!r.is_ok()) return r.status();
  std::printf("trained steps %lld..%lld in %.1f min, last loss %.4f, %d checkpoint(s): %s\n",
              static_cast<long long>(r->first_step), static_cast<long long>(r->steps), r->seconds / 60, r->last_loss,
              r->checkpoints, o.out.c_str());
  return Status::ok();
}

Status run_igsp_manifest(const ManifestArgs& a) {
  auto checkpoint = models::nets::load_byte_lm(a.model);
  if (!checkpoint.is_ok()) return checkpoint.status();
  return write_stdout(checkpoint->meta_json + "\n");
}

Status run_igsp_relocate(const RelocateArgs& a) {
  CT_RETURN_IF_ERROR(relocate_corpus(a.model, a.general, a.code));
  std::printf("%s: manifest rewritten, parameters unchanged\n", a.model.c_str());
  return Status::ok();
}

Status run_prune(const PruneArgs& a) {
  auto o = prune_options(a);
  if (!o.is_ok()) return o.status();
  auto checkpoint = models::nets::load_byte_lm(a.model);
  if (!checkpoint.is_ok()) return checkpoint.status();
  auto corpus = corpus_for(checkpoint->meta_json, a.model);
  if (!corpus.is_ok()) return corpus.status();
  CalibrationSetOptions c;
  c.samples = a.samples;
  c.length = checkpoint->model->options().context;
  c.seed = a.seed;
  auto calib = make_calibration_set(a.calib, checkpoint->model, *corpus, c);
  if (!calib.is_ok()) return calib.status();
  const auto start = std::chrono::steady_clock::now();
  auto reports = prune_byte_lm(checkpoint->model, calib->bytes, *o);
  if (!reports.is_ok()) return reports.status();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int64_t pruned = 0, total = 0;
  for (const auto& r : *reports) {
    pruned += r.pruned;
    total += r.rows * r.columns;
  }
  nlohmann::ordered_json meta = nlohmann::ordered_json::parse(manifest_for_copy(checkpoint->meta_json, a.model, a.out));
  meta["pruned"] = {{"method", a.method},   {"sparsity", a.sparsity}, {"nm", a.nm},     {"calib", a.calib},
                    {"samples", a.samples}, {"seed", a.seed},         {"from", a.model}};
  CT_RETURN_IF_ERROR(models::nets::save_byte_lm(checkpoint->model, meta.dump(2), a.out));
  std::printf("pruned %zu Linears with %s on %lld samples of %s in %.1f s: %.2f%% of their weights zero; wrote %s\n",
              reports->size(), a.method.c_str(), static_cast<long long>(a.samples), a.calib.c_str(), seconds,
              100.0 * static_cast<double>(pruned) / static_cast<double>(std::max<int64_t>(1, total)), a.out.c_str());
  return Status::ok();
}

Status run_eval(const EvalArgs& a) {
  if (a.items < 1) return Status::invalid_argument("items " + std::to_string(a.items) + ": must be >= 1");
  auto checkpoint = models::nets::load_byte_lm(a.model);
  if (!checkpoint.is_ok()) return checkpoint.status();
  auto set = eval_set_for(checkpoint->meta_json, a.model, a.items);
  if (!set.is_ok()) return set.status();
  const auto scores = evaluate(checkpoint->model, *set);
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
    return write_stdout(j.dump(2) + "\n");
  }
  std::printf("# clustertwin eval: %s\n", a.model.c_str());
  for (const auto& s : scores) {
    std::printf("  %-12s %-10s %8.4f  (%lld %s)\n", clustertwin::models::igsp::domain_name(s.domain), s.metric.c_str(),
                s.value, static_cast<long long>(s.items), s.metric == "perplexity" ? "bytes" : "items");
  }
  return Status::ok();
}

}  // namespace clustertwin::real::igsp
