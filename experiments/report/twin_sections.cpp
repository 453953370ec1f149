// The report's sections for the three systems the twin simulates: NestPipe,
// FlexMARL and FlowTrain (report_sections.h).

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

// FlexMARL (../shared/papers/flexmarl.md, "Setup and numbers you may use").
constexpr double kFlexMarlSpeedup = 7.3;      // "up to 7.3x" against MAS-RL
constexpr double kFlexMarlUtilization = 5.6;  // "up to 5.6x" hardware utilisation
constexpr double kFlexMarlSyncStepS = 914.4;  // MAS-RL's end-to-end step on MA

// FlowTrain (../shared/papers/abstracts.md, FlowTrain's abstract).
constexpr double kFlowTrainMfu = 0.5;      // "over 50% MFU"
constexpr double kFlowTrainSpeedup = 1.7;  // "up to 1.7x throughput improvement"
// The configuration the study's headline is printed for (experiments/flowtrain/README.md).
constexpr const char* kFlowTrainModel = "6B+72B";
constexpr int kFlowTrainWorkers = 1024;
constexpr int kPackingMicroBatches = 32;

// The shares pair "24.4% / 49.6%" and their gaps "+0.0 / -0.1 points".
ComparisonRow share_row(const std::string& figure, double paper_small, double paper_large, double small, double large) {
  return {figure, percent(paper_small) + " / " + percent(paper_large), percent(small) + " / " + percent(large),
          point_difference(100 * small, 100 * paper_small, 1) + " / " +
              point_difference(100 * large, 100 * paper_large, 1)};
}

// The distinct values of `key` over `rows`, in order of first appearance.
std::vector<std::string> distinct(const Field& rows, const std::string& key) {
  std::vector<std::string> out;
  for (const Field& r : rows.elements()) {
    const std::string v = r[key].string();
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

}  // namespace

Section nestpipe_section(const fs::path& out) {
  const JsonFile scaling(out / "nestpipe" / "scaling.json");
  const JsonFile gpu(out / "nestpipe" / "gpu128.json");
  const Field rows = scaling.root()["rows"];
  const Field fit = scaling.root()["calibration"];
  const Field nestpipe = rows.find({{"variant", "nestpipe"}, {"workers", kNestPipeLargeWorkers}});
  const Field torchrec = rows.find({{"variant", "torchrec"}, {"workers", kNestPipeLargeWorkers}});
  const Field nestpipe_gpu = gpu.root()["rows"].find({{"variant", "nestpipe"}, {"workers", kNestPipeGpuWorkers}});

  Section s;
  s.id = "nestpipe";
  s.title = "NestPipe: nested pipelining for 1,536-worker embedding training";
  s.platforms = {scaling.root()["platform"].string(), gpu.root()["platform"].string()};
  s.basis = "twin; TorchRec baseline fitted to the paper's TorchRec step and lookup and All2All shares (largest miss " +
            percent(fit["max_error"].number(), 2) + ")";

  const double speedup = nestpipe["speedup"].number();
  const double efficiency = 100 * nestpipe["scaling_efficiency"].number();
  const double gpu_speedup = nestpipe_gpu["speedup"].number();
  const double step_ms = torchrec["step_ms"].number();
  const std::vector<ComparisonRow> comparison = {
      {"NestPipe speedup over TorchRec, 1,536 NPUs", times(kNestPipeSpeedup), times(speedup),
       relative_difference(speedup, kNestPipeSpeedup)},
      {"NestPipe scaling efficiency at 1,536 NPUs (per-worker throughput against 128)",
       number(kNestPipeEfficiencyPercent, 2) + "%", number(efficiency, 2) + "%",
       point_difference(efficiency, kNestPipeEfficiencyPercent, 2)},
      {"NestPipe speedup over TorchRec, 128 GPUs (" + gpu.root()["model"].string() + ")", times(kNestPipeGpuSpeedup),
       times(gpu_speedup), relative_difference(gpu_speedup, kNestPipeGpuSpeedup)},
      {"TorchRec step at 1,536 NPUs (calibration target)", number(kTorchRecStepMs, 2) + " ms",
       number(step_ms, 2) + " ms", relative_difference(step_ms, kTorchRecStepMs)},
      share_row("TorchRec lookup share of the step, 128 / 1,536 NPUs (calibration target)", kLookupShareSmall,
                kLookupShareLarge, fit["lookup_share_small"].number(), fit["lookup_share_large"].number()),
      share_row("TorchRec All2All share of the step, 128 / 1,536 NPUs (calibration target)", kA2aShareSmall,
                kA2aShareLarge, fit["a2a_share_small"].number(), fit["a2a_share_large"].number()),
  };

  std::vector<std::vector<std::string>> variants;
  for (const Field& r : rows.elements()) {
    if (r["workers"].integer() != kNestPipeLargeWorkers) continue;
    variants.push_back({r["variant"].string(), number(r["step_ms"].number(), 1), number(r["qps"].number(), 0),
                        number(r["lookup_ms"].number(), 1), number(r["exposed_comm_ms"].number(), 1),
                        times(r["speedup"].number()), percent(r["scaling_efficiency"].number())});
  }

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

Section flexmarl_section(const fs::path& out) {
  const JsonFile frameworks(out / "flexmarl" / "frameworks.json");
  const Field root = frameworks.root();
  const Field rows = root["rows"];
  const Field fit = root["calibration"];

  Section s;
  s.id = "flexmarl";
  s.title = "FlexMARL: rollout-training co-design for multi-agent LLM RL";
  s.platforms = {root["platform"].string()};
  s.basis = "twin; one parameter (decode efficiency " + number(fit["decode_efficiency"].number(), 3) +
            ") fitted so that the synchronous baseline takes the paper's step on MA";

  // "Up to": the largest over the workloads, each figure on its own.
  const Field* best_speedup = nullptr;
  const Field* best_utilization = nullptr;
  const std::vector<Field> all = rows.elements();
  for (const Field& r : all) {
    if (r["framework"].string() != "flexmarl") continue;
    if (best_speedup == nullptr || r["speedup"].number() > (*best_speedup)["speedup"].number()) best_speedup = &r;
    if (best_utilization == nullptr ||
        r["utilization_gain"].number() > (*best_utilization)["utilization_gain"].number()) {
      best_utilization = &r;
    }
  }
  if (best_speedup == nullptr)
    throw InputError(frameworks.file() + ": no element of rows has framework = \"flexmarl\"");
  const double speedup = (*best_speedup)["speedup"].number();
  const double utilization = (*best_utilization)["utilization_gain"].number();
  const double sync_step = fit["sync_step_s"].number();
  const std::vector<std::string> workloads = distinct(rows, "workload");
  const std::vector<ComparisonRow> comparison = {
      {"Largest FlexMARL speedup over the synchronous baseline, over " + std::to_string(workloads.size()) +
           " workloads",
       "up to " + times(kFlexMarlSpeedup, 1), times(speedup) + " (" + (*best_speedup)["workload"].string() + ")",
       relative_difference(speedup, kFlexMarlSpeedup)},
      {"Largest hardware-utilisation gain over the synchronous baseline", "up to " + times(kFlexMarlUtilization, 1),
       times(utilization) + " (" + (*best_utilization)["workload"].string() + ")",
       relative_difference(utilization, kFlexMarlUtilization)},
      {"Synchronous (MAS-RL-like) step on MA (calibration target)", number(kFlexMarlSyncStepS, 1) + " s",
       number(sync_step, 1) + " s", relative_difference(sync_step, kFlexMarlSyncStepS)},
  };

  // Step time per framework and workload; the ablation order the paper's design implies.
  const std::vector<std::string> columns = {"sync", "marti", "flexmarl", "flexmarl-nobalance", "flexmarl-noasync"};
  std::vector<std::vector<std::string>> steps;
  int ordered = 0;
  for (const std::string& w : workloads) {
    const Field flex = rows.find({{"workload", w}, {"framework", "flexmarl"}});
    std::vector<std::string> line = {w, std::to_string(flex["devices"].integer())};
    for (const std::string& f : columns)
      line.push_back(number(rows.find({{"workload", w}, {"framework", f}})["step_s"].number(), 1));
    line.push_back(times(flex["speedup"].number()));
    line.push_back(times(flex["utilization_gain"].number()));
    steps.push_back(line);
    const double flexmarl = flex["step_s"].number();
    const double nobalance = rows.find({{"workload", w}, {"framework", "flexmarl-nobalance"}})["step_s"].number();
    const double noasync = rows.find({{"workload", w}, {"framework", "flexmarl-noasync"}})["step_s"].number();
    ordered += noasync > nobalance && nobalance > flexmarl;
  }

  s.html = heading(s.id, s.title);
  s.html +=
      "<p>The twin runs the synchronous baseline, a MARTI-like framework, FlexMARL and its two ablations on <code>" +
      escape(s.platforms[0]) +
      "</code>, on the paper's MA workload and its three scale tests. Only the decode "
      "efficiency is fitted (" +
      std::to_string(fit["runs"].integer()) + " runs), to the synchronous step; everything else is the model.</p>\n";
  s.html += comparison_table(comparison);
  s.html += "<h3>Seconds per step (the twin)</h3>\n";
  s.html += table({"workload", "devices", "sync", "MARTI", "FlexMARL", "no balance", "no async", "FlexMARL speedup",
                   "utilisation gain"},
                  steps);
  s.html += paragraph("Ablations in the expected order (no async slower than no balance, slower than FlexMARL) on " +
                      std::to_string(ordered) + " of " + std::to_string(workloads.size()) + " workloads.");
  s.html += plot(out, "flexmarl", "speedup.png", "speedup against sync per framework and workload");
  s.html += plot(out, "flexmarl", "utilization.png", "device utilisation per framework and workload");
  s.html += plot(out, "flexmarl", "step_time.png", "step time per framework and workload");
  // The study draws a timeline only for some workloads: those it wrote the CSV of.
  for (const std::string& w : workloads) {
    std::string slug = w;
    std::replace(slug.begin(), slug.end(), '+', '_');
    for (const char* f : {"sync", "flexmarl"}) {
      const std::string tag = "timeline_" + slug + "_" + f;
      std::error_code ec;
      if (!fs::exists(out / "flexmarl" / (tag + ".csv"), ec)) continue;
      s.html += plot(out, "flexmarl", tag + ".png", std::string("per-device utilisation, last step: ") + w + ", " + f);
    }
  }
  s.html +=
      "<p class=\"note\">Table: <a href=\"../flexmarl/frameworks.csv\">frameworks.csv</a>; Perfetto traces "
      "per framework in <code>flexmarl/traces/</code>.</p>\n";
  return s;
}

Section flowtrain_section(const fs::path& out) {
  const JsonFile study(out / "flowtrain" / "study.json");
  const Field modes = study.root()["modes"];
  const Field flow = modes.find({{"mode", "flowtrain"}, {"model", kFlowTrainModel}, {"workers", kFlowTrainWorkers}});
  const Field sync = modes.find({{"mode", "disagg-sync"}, {"model", kFlowTrainModel}, {"workers", kFlowTrainWorkers}});

  Section s;
  s.id = "flowtrain";
  s.title = "FlowTrain: flow-based decoupled VLM training";
  s.platforms = {study.root()["platform"].string()};
  s.basis = "twin; no fitted parameter: datasheet peaks with the efficiencies of models/flowtrain/timing.h";

  const double mfu = flow["mfu"].number();
  const double speedup = flow["speedup"].number();
  const Field* best = nullptr;
  const std::vector<Field> all = modes.elements();
  for (const Field& r : all) {
    if (r["mode"].string() == "flowtrain" && (best == nullptr || r["speedup"].number() > (*best)["speedup"].number()))
      best = &r;
  }
  // The packing figure: max/mean backbone cost at one micro-batch count, mean over the seeds.
  double by_cost = 0, by_tokens = 0;
  int seeds = 0;
  for (const Field& p : study.root()["packing"].elements()) {
    if (p["model"].string() != kFlowTrainModel || p["micro_batches"].integer() != kPackingMicroBatches) continue;
    by_cost += p["by_cost"].number();
    by_tokens += p["by_tokens"].number();
    ++seeds;
  }
  if (seeds == 0) {
    throw InputError(study.file() + ": no element of packing has model = \"" + kFlowTrainModel +
                     "\" and micro_batches = " + std::to_string(kPackingMicroBatches));
  }
  by_cost /= seeds;
  by_tokens /= seeds;
  const std::vector<ComparisonRow> comparison = {
      {"FlowTrain MFU, 6B+72B on 1,024 H100s", "over " + percent(kFlowTrainMfu, 0), percent(mfu),
       (mfu > kFlowTrainMfu ? "above by " : "below by ") + number(100 * std::abs(mfu - kFlowTrainMfu), 1) + " points"},
      {"FlowTrain throughput over monolithic, 6B+72B on 1,024 H100s", "up to " + times(kFlowTrainSpeedup, 1),
       times(speedup), relative_difference(speedup, kFlowTrainSpeedup)},
      {"Largest FlowTrain throughput gain over monolithic, both models, 128-1,024 H100s",
       "up to " + times(kFlowTrainSpeedup, 1),
       times((*best)["speedup"].number()) + " (" + (*best)["model"].string() + ", " +
           std::to_string((*best)["workers"].integer()) + " GPUs)",
       relative_difference((*best)["speedup"].number(), kFlowTrainSpeedup)},
      {"Micro-batch balance: max/mean backbone cost, cost packer vs token packer (6B+72B, " +
           std::to_string(kPackingMicroBatches) + " micro-batches, mean of " + std::to_string(seeds) + " seeds)",
       "balanced by cost (not quantified)", number(by_cost, 4) + " vs " + number(by_tokens, 4), "-"},
  };

  std::vector<std::vector<std::string>> mode_rows;
  for (const std::string& model : distinct(modes, "model")) {
    std::vector<int64_t> workers;
    for (const Field& r : all) {
      if (r["model"].string() == model && r["mode"].string() == "flowtrain") workers.push_back(r["workers"].integer());
    }
    for (int64_t w : workers) {
      std::vector<std::string> line = {model, number(static_cast<double>(w), 0)};
      for (const char* m : {"monolithic", "disagg-sync", "flowtrain"})
        line.push_back(percent(modes.find({{"mode", m}, {"model", model}, {"workers", w}})["mfu"].number()));
      const Field f = modes.find({{"mode", "flowtrain"}, {"model", model}, {"workers", w}});
      line.push_back(number(f["samples_per_s"].number(), 1));
      line.push_back(times(f["speedup"].number()));
      mode_rows.push_back(line);
    }
  }

  s.html = heading(s.id, s.title);
  s.html +=
      "<p>The twin runs monolithic (one layout for encoder and backbone), disagg-sync (the allocator's split, "
      "lock-step) and FlowTrain (the split, decoupled through the memory pool, packed by cost) on <code>" +
      escape(s.platforms[0]) + "</code>. At 1,024 GPUs the allocator gives 6B+72B " +
      std::to_string(flow["encoder_workers"].integer()) + " encoder workers (TP " +
      std::to_string(flow["encoder_tp"].integer()) + ") and a TP " + std::to_string(flow["backbone_tp"].integer()) +
      " x PP " + std::to_string(flow["backbone_pp"].integer()) + " backbone; disagg-sync reaches " +
      escape(percent(sync["mfu"].number())) +
      " MFU there. FlowTrain's paper is known only by its abstract: the design is a reconstruction.</p>\n";
  s.html += comparison_table(comparison);
  s.html += "<h3>MFU per mode (the twin)</h3>\n";
  s.html +=
      table({"model", "GPUs", "monolithic", "disagg-sync", "FlowTrain", "FlowTrain samples/s", "speedup"}, mode_rows);
  s.html += plot(out, "flowtrain", "mfu.png", "MFU per mode, 6B+72B");
  s.html += plot(out, "flowtrain", "throughput.png", "throughput per mode, 6B+72B");
  s.html +=
      "<p class=\"note\">Tables: <a href=\"../flowtrain/modes.csv\">modes.csv</a>, "
      "<a href=\"../flowtrain/packing.csv\">packing.csv</a>, "
      "<a href=\"../flowtrain/allocation.csv\">allocation.csv</a>; Perfetto traces in "
      "<code>flowtrain/traces/</code>.</p>\n";
  return s;
}

}  // namespace clustertwin::report
