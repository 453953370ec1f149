#include "real/flowtrain/report.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "common/json.h"
#include "common/state_dump.h"
#include "common/text.h"

namespace clustertwin::real::flowtrain {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// The table's header and its one row.
void print_table(const FlowTrainRunArgs& a, const RunReport& r, double median_s, double samples_per_s, double mfu) {
  const std::string sides = r.encoders == 0 ? "every rank runs encoder and backbone"
                                            : std::to_string(r.encoders) + " encoder and " +
                                                  std::to_string(r.world_size - r.encoders) + " backbone workers";
  std::printf("# clustertwin run flowtrain: %d ranks, %s; %s VLM, %d samples a step; %s\n", r.world_size,
              r.communicator.c_str(), a.model.c_str(), a.global_batch, sides.c_str());
  if (r.pool_transfer != "none") std::printf("# pool transfer: %s\n", r.pool_transfer.c_str());
  std::printf("  %-12s %5s %15s %10s %7s %12s\n", "mode", "steps", "median step (s)", "samples/s", "mfu",
              "loss (last)");
  std::printf("  %-12s %5d %15.4f %10.1f %6.2f%% %12.4f\n", a.mode.c_str(), a.steps, median_s, samples_per_s, 100 * mfu,
              r.losses.back());
}

}  // namespace

std::string options_json(const FlowTrainRunArgs& a, int world, int encoders,
                         const ::clustertwin::models::flowtrain::TinyFacts& f, double matmul_rate) {
  // The parameter counts are whole numbers held in doubles: written as integers.
  const nlohmann::ordered_json model = {{"encoder_params", static_cast<int64_t>(f.encoder_params)},
                                        {"backbone_params", static_cast<int64_t>(f.backbone_params)},
                                        {"tokens_per_image", f.tokens_per_image},
                                        {"max_images", f.max_images},
                                        {"context", f.context},
                                        {"patch", f.patch},
                                        {"text_scale", f.text_scale},
                                        {"d_vision", f.d_vision},
                                        {"enc_layers", f.enc_layers},
                                        {"d_model", f.d_model},
                                        {"layers", f.layers},
                                        {"vocab", f.vocab}};
  const nlohmann::ordered_json o = {{"mode", a.mode},
                                    {"world_size", world},
                                    {"encoder_workers", encoders},
                                    {"steps", a.steps},
                                    {"global_batch", a.global_batch},
                                    {"micro_batch_tokens", a.micro_batch_tokens},
                                    {"pool_slots", a.pool_slots},
                                    {"lr", a.lr},
                                    {"model_preset", a.model},
                                    {"width", a.width},
                                    {"dtype", a.dtype},
                                    {"seed", a.seed},
                                    {"threads", a.threads},
                                    {"matmul_flops_per_s", matmul_rate},
                                    {"model", model}};
  return o.dump();
}

void print_report(const FlowTrainRunArgs& a, const RunReport& r) {
  const double total_s = std::accumulate(r.step_s.begin(), r.step_s.end(), 0.0);
  const double median_s = median(r.step_s);
  const double samples_per_s = a.global_batch / median_s;
  const double flops_per_s = r.model_flops / total_s;
  const double mfu = flops_per_s / (r.world_size * r.matmul_rate);
  const double flops_per_step = r.model_flops / static_cast<double>(r.step_s.size());
  const int64_t total_params = r.encoder_params + r.backbone_params;
  if (a.json) {
    const nlohmann::ordered_json params = {
        {"encoder", r.encoder_params}, {"backbone", r.backbone_params}, {"total", total_params}};
    const nlohmann::ordered_json out = {{"mode", a.mode},
                                        {"model", a.model},
                                        {"dtype", a.dtype},
                                        {"params", params},
                                        {"world_size", r.world_size},
                                        {"encoder_workers", r.encoders},
                                        {"device", r.device},
                                        {"backend", r.backend},
                                        {"staging", r.staging},
                                        {"pool_transfer", r.pool_transfer},
                                        {"steps", a.steps},
                                        {"global_batch", a.global_batch},
                                        {"step_s", median_s},
                                        {"step_times", r.step_s},
                                        {"samples_per_s", samples_per_s},
                                        {"model_flops_per_step", flops_per_step},
                                        {"flops_per_s", flops_per_s},
                                        {"mfu", mfu},
                                        {"matmul_flops_per_s", r.matmul_rate},
                                        {"loss", r.losses}};
    std::fputs(json_document(out).c_str(), stdout);
    std::fflush(stdout);
    return;
  }
  print_table(a, r, median_s, samples_per_s, mfu);
  std::printf("# model: %s, %s; %s parameters (encoder %s, backbone %s); %.4g model FLOP a step, %.4g FLOP/s\n",
              a.model.c_str(), a.dtype.c_str(), with_thousands(static_cast<double>(total_params)).c_str(),
              with_thousands(static_cast<double>(r.encoder_params)).c_str(),
              with_thousands(static_cast<double>(r.backbone_params)).c_str(), flops_per_step, flops_per_s);
  if (r.device == "cpu") {
    std::printf(
        "# MFU: the model FLOPs over ranks x this machine's measured %s matmul rate (%.1f GFLOP/s, %d thread(s))\n",
        a.dtype.c_str(), r.matmul_rate / 1e9, a.threads);
  } else {
    std::printf(
        "# MFU: the model FLOPs over ranks x this GPU's measured %s matmul rate (%.1f GFLOP/s); each task is timed to "
        "its end on the device\n",
        a.dtype.c_str(), r.matmul_rate / 1e9);
  }
  if (!a.trace.empty()) std::printf("# trace: %s\n", a.trace.c_str());
  if (!a.dump_params.empty()) std::printf("# final parameters: %s\n", state_dump_path(a.dump_params, 0).c_str());
  std::fflush(stdout);
}

}  // namespace clustertwin::real::flowtrain
