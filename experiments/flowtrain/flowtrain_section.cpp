// FlowTrain's section of the demo report (report_sections.h; its entry in common/systems.def).

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

// FlowTrain (../shared/papers/abstracts.md, FlowTrain's abstract).
constexpr double kFlowTrainMfu = 0.5;      // "over 50% MFU"
constexpr double kFlowTrainSpeedup = 1.7;  // "up to 1.7x throughput improvement"
// The configuration the study's headline is printed for (experiments/flowtrain/README.md).
constexpr const char* kFlowTrainModel = "6B+72B";
constexpr int kFlowTrainWorkers = 1024;
constexpr int kPackingMicroBatches = 32;

}  // namespace

Section flowtrain_section(const fs::path& out) {
  const JsonFile study(out / "flowtrain" / "study.json");
  const Field modes = study.root()["modes"];
  const Field flow = modes.find({{"mode", "flowtrain"}, {"model", kFlowTrainModel}, {"workers", kFlowTrainWorkers}});
  const Field sync = modes.find({{"mode", "disagg-sync"}, {"model", kFlowTrainModel}, {"workers", kFlowTrainWorkers}});

  Section s;
  s.id = "flowtrain";
  s.title = "FlowTrain: flow-based decoupled VLM training";
  s.platforms = {study.root()["platform"].string()};
  s.basis =
      "twin; datasheet peaks with the assumed efficiencies of models/flowtrain/timing.h, and beside them the "
      "efficiencies measured on an H200 (the h200 device profile, fitted from a kernel benchmark)";
  // The measured device profile's rows (the study's part 4) and what the assumed rows rest on.
  const Field device = study.root()["device_profile"];
  const Field assumed = study.root()["assumed_device"];
  const Field measured_flow = device["rows"].find({{"mode", "flowtrain"}, {"workers", kFlowTrainWorkers}});
  const Field measured_mono = device["rows"].find({{"mode", "monolithic"}, {"workers", kFlowTrainWorkers}});
  const std::string assumed_text = "assumed: GEMMs " + number(assumed["gemm_efficiency"].number(), 2) + ", attention " +
                                   number(assumed["attention_efficiency"].number(), 2) + " of peak";
  const std::string measured_text = "measured: " + device["name"].string() + " profile";
  // Nothing is fitted to the paper: its figures are only compared.
  s.measured = {"GEMM efficiency per GEMM shape and attention efficiency per sequence length: the " +
                device["name"].string() + " device profile (" + device["provenance"].string() +
                "), fitted from kernels timed on an H200; used by the rows marked measured."};
  s.assumed = {
      "The rows marked assumed: GEMMs at " + number(assumed["gemm_efficiency"].number(), 2) + " and attention at " +
          number(assumed["attention_efficiency"].number(), 2) +
          " of peak (models/flowtrain/timing.h, from public GEMM and FlashAttention benchmarks).",
      "Both rows: half of the tensor-parallel exchange hidden under GEMMs; the elementwise kernels' bytes; the "
      "platform's datasheet peak, memory and network; the encoder's full attention at the causal curve's "
      "efficiency (only causal attention was measured).",
      "The design (memory pool, throughput-matching allocator, cost-based packing) is a reconstruction from the "
      "paper's abstract; the 6B+72B model pair and its image and text lengths are our choice."};

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
      {"FlowTrain MFU, 6B+72B on 1,024 H100s (" + assumed_text + ")", "over " + percent(kFlowTrainMfu, 0), percent(mfu),
       (mfu > kFlowTrainMfu ? "above by " : "below by ") + number(100 * std::abs(mfu - kFlowTrainMfu), 1) + " points"},
      {"FlowTrain throughput over monolithic, 6B+72B on 1,024 H100s (" + assumed_text + ")",
       "up to " + times(kFlowTrainSpeedup, 1), times(speedup), relative_difference(speedup, kFlowTrainSpeedup)},
      {"FlowTrain MFU, 6B+72B on 1,024 H100s (" + measured_text + ")", "over " + percent(kFlowTrainMfu, 0),
       percent(measured_flow["mfu"].number()),
       (measured_flow["mfu"].number() > kFlowTrainMfu ? "above by " : "below by ") +
           number(100 * std::abs(measured_flow["mfu"].number() - kFlowTrainMfu), 1) + " points"},
      {"FlowTrain throughput over monolithic, 6B+72B on 1,024 H100s (" + measured_text + ")",
       "up to " + times(kFlowTrainSpeedup, 1), times(measured_flow["speedup"].number()),
       relative_difference(measured_flow["speedup"].number(), kFlowTrainSpeedup)},
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
  const Field assumed_flow = flow,
              assumed_mono =
                  modes.find({{"mode", "monolithic"}, {"model", kFlowTrainModel}, {"workers", kFlowTrainWorkers}});
  s.html += "<h3>Assumed or measured device efficiencies (6B+72B, 1,024 GPUs)</h3>\n";
  s.html +=
      "<p>What the FlowTrain figures rest on. <b>Assumed</b>: the constant efficiencies written next to their "
      "defaults in <code>models/flowtrain/timing.h</code> (public GEMM and FlashAttention benchmarks, not measured "
      "here). <b>Measured</b>: the <code>" +
      escape(device["name"].string()) + "</code> device profile (" + escape(device["provenance"].string()) +
      "): GEMM efficiency per GEMM shape and attention efficiency per sequence length, fitted by "
      "<code>clustertwin calibrate device</code> from kernels timed on an H200 (the H100's compute) under that "
      "software stack. Transformer Engine or torch.compile would reach other efficiencies; the peak, memory and "
      "network stay the platform's datasheet figures in both rows.</p>\n";
  s.html +=
      table({"device efficiencies", "basis", "monolithic MFU", "FlowTrain MFU", "FlowTrain speedup"},
            {{assumed_text, "assumptions (timing.h)", percent(assumed_mono["mfu"].number()),
              percent(assumed_flow["mfu"].number()), times(assumed_flow["speedup"].number())},
             {measured_text, "measured kernel times (traces/data/kernels)", percent(measured_mono["mfu"].number()),
              percent(measured_flow["mfu"].number()), times(measured_flow["speedup"].number())}});
  s.html += "<h3>MFU per mode (the twin, assumed efficiencies)</h3>\n";
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
