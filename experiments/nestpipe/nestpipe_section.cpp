// NestPipe's section of the demo report (report_sections.h; its entry in common/systems.def).

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "experiments/report/report_html.h"
#include "experiments/report/report_input.h"
#include "experiments/report/report_sections.h"

namespace clustertwin::report {
namespace {

namespace fs = std::filesystem;

// NestPipe (../shared/papers/nestpipe.md, "Setup and numbers you may use").
constexpr int kNestPipeLargeWorkers = 1536;                             // the NPU cluster
constexpr int kNestPipeGpuWorkers = 128;                                // the GPU cluster
constexpr double kNestPipeSpeedup = 3.06;                               // over TorchRec at 1,536 NPUs
constexpr double kNestPipeEfficiencyPercent = 94.07;                    // scaling efficiency at 1,536, relative to 128
constexpr double kNestPipeGpuSpeedup = 1.36;                            // on the 128 GPUs
constexpr double kTorchRecStepMs = 5793.83;                             // TorchRec's step at 1,536 NPUs
constexpr double kLookupShareSmall = 0.244, kLookupShareLarge = 0.496;  // of TorchRec's step, 128 and 1,536
constexpr double kA2aShareSmall = 0.092, kA2aShareLarge = 0.205;        // the same for All2All

// The shares pair "24.4% / 49.6%" and their gaps "+0.0 / -0.1 points".
ComparisonRow share_row(const std::string& figure, double paper_small, double paper_large, double small, double large) {
  return {figure, percent(paper_small) + " / " + percent(paper_large), percent(small) + " / " + percent(large),
          point_difference(100 * small, 100 * paper_small, 1) + " / " +
              point_difference(100 * large, 100 * paper_large, 1)};
}

// The NestPipe figures the paper reports, and the TorchRec ones the baseline was fitted to, against the twin's.
std::vector<ComparisonRow> scaling_comparison(const Field& nestpipe, const Field& torchrec, const Field& nestpipe_gpu,
                                              const Field& gpu_model, const Field& fit) {
  const double speedup = nestpipe["speedup"].number();
  const double efficiency = 100 * nestpipe["scaling_efficiency"].number();
  const double gpu_speedup = nestpipe_gpu["speedup"].number();
  const double step_ms = torchrec["step_ms"].number();
  return {
      {"NestPipe speedup over TorchRec, 1,536 NPUs", times(kNestPipeSpeedup), times(speedup),
       relative_difference(speedup, kNestPipeSpeedup)},
      {"NestPipe scaling efficiency at 1,536 NPUs (per-worker throughput against 128)",
       number(kNestPipeEfficiencyPercent, 2) + "%", number(efficiency, 2) + "%",
       point_difference(efficiency, kNestPipeEfficiencyPercent, 2)},
      {"NestPipe speedup over TorchRec, 128 GPUs (" + gpu_model.string() + ")", times(kNestPipeGpuSpeedup),
       times(gpu_speedup), relative_difference(gpu_speedup, kNestPipeGpuSpeedup)},
      {"TorchRec step at 1,536 NPUs (calibration target)", number(kTorchRecStepMs, 2) + " ms",
       number(step_ms, 2) + " ms", relative_difference(step_ms, kTorchRecStepMs)},
      share_row("TorchRec lookup share of the step, 128 / 1,536 NPUs (calibration target)", kLookupShareSmall,
                kLookupShareLarge, fit["lookup_share_small"].number(), fit["lookup_share_large"].number()),
      share_row("TorchRec All2All share of the step, 128 / 1,536 NPUs (calibration target)", kA2aShareSmall,
                kA2aShareLarge, fit["a2a_share_small"].number(), fit["a2a_share_large"].number()),
  };
}

// The paper's qualitative claims the micro-batch study (microbatch.json) checks.
std::vector<ComparisonRow> micro_batch_comparison(const Field& micro) {
  return {
      {"Key-centric clustering: exposed All2All at 16-sample micro-batches, 1,536 NPUs", "an order of magnitude less",
       times(micro["exposed_a2a_16_unclustered_ms"].number() / micro["exposed_a2a_16_clustered_ms"].number(), 1) +
           " less (" + number(micro["exposed_a2a_16_clustered_ms"].number(), 0) + " against " +
           number(micro["exposed_a2a_16_unclustered_ms"].number(), 0) + " ms)",
       "-"},
      {"Micro-batch size of the fastest NestPipe step, 16 to 256 samples, 1,536 NPUs",
       "an interior optimum (sensitivity study)",
       std::to_string(micro["best_micro_batch_samples"].integer()) + " samples (" +
           number(micro["best_step_ms"].number(), 0) + " ms)",
       "-"},
      {"2D sparse parallelism against DBP, speedup over TorchRec at 1,536 NPUs", "a weak baseline, well below DBP",
       times(micro["sp2d_speedup"].number()) + " against " + times(micro["dbp_speedup"].number()), "-"},
  };
}

// Every variant at 1,536 workers: step, throughput, lookup and exposed All2All, speedup and scaling efficiency.
std::vector<std::vector<std::string>> variant_rows(const Field& rows) {
  std::vector<std::vector<std::string>> variants;
  for (const Field& r : rows.elements()) {
    if (r["workers"].integer() != kNestPipeLargeWorkers) continue;
    variants.push_back({r["variant"].string(), number(r["step_ms"].number(), 1), number(r["qps"].number(), 0),
                        number(r["lookup_ms"].number(), 1), number(r["exposed_comm_ms"].number(), 1),
                        times(r["speedup"].number()), percent(r["scaling_efficiency"].number())});
  }
  return variants;
}

// What the twin rests on besides the fit: assumptions, each with its source or reason.
const std::vector<std::string> kNestPipeAssumed = {
    "The NPU cluster's datasheet figures (npu-1536.yaml: 376 TFLOP/s bf16, 200 Gb/s RoCE per NPU, HCCS in a "
    "node).",
    "Each All2All member's fixed setup per peer (2 us on npu-1536, 1 us on gpu-128, about the NIC latency); each "
    "dense call's kernel launches (40 per layer at 5 us).",
    "The industrial dataset's users: 8 samples per user sharing 90% of their keys (the paper gives no figure); "
    "Zipf keys with the generator's exponent and batch-to-batch overlap.",
    "2D-SP synchronises its replicas' changed rows and their row-wise Adagrad state every step (TorchRec's "
    "DMPCollection.sync, called after each step)."};

}  // namespace

Section nestpipe_section(const fs::path& out) {
  const JsonFile scaling(out / "nestpipe" / "scaling.json");
  const JsonFile gpu(out / "nestpipe" / "gpu128.json");
  const Field rows = scaling.root()["rows"];
  const Field fit = scaling.root()["calibration"];
  const Field nestpipe = rows.find({{"variant", "nestpipe"}, {"workers", kNestPipeLargeWorkers}});
  const Field torchrec = rows.find({{"variant", "torchrec"}, {"workers", kNestPipeLargeWorkers}});
  const Field nestpipe_gpu = gpu.root()["rows"].find({{"variant", "nestpipe"}, {"workers", kNestPipeGpuWorkers}});
  const JsonFile micro_file(out / "nestpipe" / "microbatch.json");
  const Field micro = micro_file.root();

  Section s;
  s.id = "nestpipe";
  s.title = "NestPipe: nested pipelining for 1,536-worker embedding training";
  s.platforms = {scaling.root()["platform"].string(), gpu.root()["platform"].string()};
  s.basis = "twin; TorchRec baseline fitted to the paper's TorchRec step and lookup and All2All shares (largest miss " +
            percent(fit["max_error"].number(), 2) + ")";

  std::vector<ComparisonRow> comparison =
      scaling_comparison(nestpipe, torchrec, nestpipe_gpu, gpu.root()["model"], fit);
  for (const ComparisonRow& row : micro_batch_comparison(micro))
    comparison.push_back(row);
  s.fitted = {"TorchRec's dense FLOP rate (" + number(fit["dense_flop_rate"].number() / 1e12, 2) +
              " TFLOP/s), lookup byte rate (" + number(fit["lookup_byte_rate"].number() / 1e9, 3) +
              " GB/s) and per-requester cost, All2All efficiency and congestion: to the paper's TorchRec step "
              "and its lookup and All2All shares at 128 and 1,536 NPUs (largest miss " +
              percent(fit["max_error"].number(), 2) + ")."};
  s.assumed = kNestPipeAssumed;
  const std::vector<std::vector<std::string>> variants = variant_rows(rows);

  s.html = heading(s.id, s.title);
  s.html += "<p>The twin runs every variant's step plan on <code>" + escape(s.platforms[0]) + "</code> (" +
            escape(scaling.root()["model"].string()) +
            ") from 128 to 1,536 workers. Only TorchRec is fitted, to the rows marked calibration target; "
            "NestPipe's figures come out of the modelled schedule.</p>\n";
  s.html += comparison_table(comparison);
  s.html += "<h3>Every variant at 1,536 workers (the twin)</h3>\n";
  s.html += table({"variant", "step ms", "samples/s", "lookup ms", "exposed All2All ms", "speedup", "scaling eff."},
                  variants);
  s.html += plot(out, "nestpipe", "scaling_efficiency.png", "scaling efficiency per variant, 128-1,536 workers");
  s.html += plot(out, "nestpipe", "step_time.png", "step time per variant");
  s.html += plot(out, "nestpipe", "breakdown_1536.png", "where the step goes at 1,536 workers");
  s.html += plot(out, "nestpipe", "microbatch.png", "NestPipe at 1,536 workers against micro-batch size");
  s.html +=
      "<p class=\"note\">Tables: <a href=\"../nestpipe/scaling.csv\">scaling.csv</a>, "
      "<a href=\"../nestpipe/microbatch.csv\">microbatch.csv</a>; one Perfetto trace per variant in "
      "<code>nestpipe/traces/</code> (open in ui.perfetto.dev).</p>\n";
  return s;
}

}  // namespace clustertwin::report
