#include "real/flowtrain/report.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "common/state_dump.h"
#include "traces/json_text.h"

namespace clustertwin::real::flowtrain {
namespace {

std::string quoted(const std::string& value) {
  std::string out;
  traces::append_json_string(&out, value);
  return out;
}

std::string numbers(const std::vector<double>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i)
    out += (i ? "," : "") + traces::json_number(values[i]);
  return out + "]";
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

std::string options_json(const FlowTrainRunArgs& a, int world, int encoders,
                         const ::clustertwin::models::flowtrain::TinyFacts& f, double matmul_rate) {
  std::string o = "{\"mode\":" + quoted(a.mode);
  o += ",\"world_size\":" + std::to_string(world) + ",\"encoder_workers\":" + std::to_string(encoders) +
       ",\"steps\":" + std::to_string(a.steps) + ",\"global_batch\":" + std::to_string(a.global_batch) +
       ",\"micro_batch_tokens\":" + std::to_string(a.micro_batch_tokens) +
       ",\"pool_slots\":" + std::to_string(a.pool_slots) + ",\"lr\":" + traces::json_number(a.lr) +
       ",\"width\":" + std::to_string(a.width) + ",\"seed\":" + std::to_string(a.seed) +
       ",\"threads\":" + std::to_string(a.threads) + ",\"matmul_flops_per_s\":" + traces::json_number(matmul_rate) +
       ",\"model\":{\"encoder_params\":" + traces::json_number(f.encoder_params) +
       ",\"backbone_params\":" + traces::json_number(f.backbone_params) +
       ",\"tokens_per_image\":" + std::to_string(f.tokens_per_image) +
       ",\"max_images\":" + std::to_string(f.max_images) + ",\"context\":" + std::to_string(f.context) +
       ",\"text_scale\":" + traces::json_number(f.text_scale) + ",\"d_vision\":" + std::to_string(f.d_vision) +
       ",\"enc_layers\":" + std::to_string(f.enc_layers) + ",\"d_model\":" + std::to_string(f.d_model) +
       ",\"layers\":" + std::to_string(f.layers) + ",\"vocab\":" + std::to_string(f.vocab) + "}}";
  return o;
}

void print_report(const FlowTrainRunArgs& a, const RunReport& r) {
  const double total_s = std::accumulate(r.step_s.begin(), r.step_s.end(), 0.0);
  const double median_s = median(r.step_s);
  const double samples_per_s = a.global_batch / median_s;
  const double mfu = r.model_flops / (total_s * r.world_size * r.matmul_rate);
  if (a.json) {
    std::string out = "{\"mode\":" + quoted(a.mode);
    out += ",\"world_size\":" + std::to_string(r.world_size) + ",\"encoder_workers\":" + std::to_string(r.encoders) +
           ",\"device\":" + quoted(r.device) + ",\"backend\":" + quoted(r.backend) +
           ",\"staging\":" + quoted(r.staging) + ",\"pool_transfer\":" + quoted(r.pool_transfer) +
           ",\"steps\":" + std::to_string(a.steps) + ",\"global_batch\":" + std::to_string(a.global_batch) +
           ",\"step_s\":" + traces::json_number(median_s) + ",\"step_times\":" + numbers(r.step_s) +
           ",\"samples_per_s\":" + traces::json_number(samples_per_s) + ",\"mfu\":" + traces::json_number(mfu) +
           ",\"matmul_flops_per_s\":" + traces::json_number(r.matmul_rate) + ",\"loss\":" + numbers(r.losses) + "}\n";
    std::fputs(out.c_str(), stdout);
    std::fflush(stdout);
    return;
  }
  const std::string sides = r.encoders == 0 ? "every rank runs encoder and backbone"
                                            : std::to_string(r.encoders) + " encoder and " +
                                                  std::to_string(r.world_size - r.encoders) + " backbone workers";
  std::printf("# clustertwin run flowtrain: %d ranks, %s; tiny VLM, %d samples a step; %s\n", r.world_size,
              r.communicator.c_str(), a.global_batch, sides.c_str());
  if (r.pool_transfer != "none") std::printf("# pool transfer: %s\n", r.pool_transfer.c_str());
  std::printf("  %-12s %5s %15s %10s %7s %12s\n", "mode", "steps", "median step (s)", "samples/s", "mfu",
              "loss (last)");
  std::printf("  %-12s %5d %15.4f %10.1f %6.2f%% %12.4f\n", a.mode.c_str(), a.steps, median_s, samples_per_s, 100 * mfu,
              r.losses.back());
  if (r.device == "cpu") {
    std::printf(
        "# MFU: the tiny VLM's model FLOPs over ranks x this machine's measured matmul rate (%.1f GFLOP/s, "
        "%d thread(s))\n",
        r.matmul_rate / 1e9, a.threads);
  } else {
    std::printf(
        "# MFU: the tiny VLM's model FLOPs over ranks x this GPU's measured fp32 matmul rate (%.1f GFLOP/s); "
        "each task is timed to its end on the device\n",
        r.matmul_rate / 1e9);
  }
  if (!a.trace.empty()) std::printf("# trace: %s\n", a.trace.c_str());
  if (!a.dump_params.empty()) std::printf("# final parameters: %s\n", state_dump_path(a.dump_params, 0).c_str());
  std::fflush(stdout);
}

}  // namespace clustertwin::real::flowtrain
