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

// The packing figure: max/mean backbone cost at one micro-batch count, mean over the seeds.
struct PackingBalance {
  double by_cost = 0, by_tokens = 0;
  int seeds = 0;
};
PackingBalance packing_balance(const JsonFile& study) {
  PackingBalance b;
  for (const Field& p : study.root()["packing"].elements()) {
    if (p["model"].string() != kFlowTrainModel || p["micro_batches"].integer() != kPackingMicroBatches) continue;
    b.by_cost += p["by_cost"].number();
    b.by_tokens += p["by_tokens"].number();
    ++b.seeds;
  }
  if (b.seeds == 0) {
    throw InputError(study.file() + ": no element of packing has model = \"" + kFlowTrainModel +
                     "\" and micro_batches = " + std::to_string(kPackingMicroBatches));
  }
  b.by_cost /= b.seeds;
  b.by_tokens /= b.seeds;
  return b;
}

// The FlowTrain row with the largest speedup over monolithic, any model and worker count.
const Field* best_flowtrain(const std::vector<Field>& all) {
  const Field* best = nullptr;
  for (const Field& r : all) {
    if (r["mode"].string() == "flowtrain" && (best == nullptr || r["speedup"].number() > (*best)["speedup"].number()))
      best = &r;
  }
  return best;
}

std::string mfu_difference(double mfu) {
  return (mfu > kFlowTrainMfu ? "above by " : "below by ") + number(100 * std::abs(mfu - kFlowTrainMfu), 1) + " points";
}

// The headline rows at 1,024 GPUs, with assumed and with measured efficiencies, against the abstract's figures.
struct Headline {
  Field flow, measured_flow;
  std::string assumed_text, measured_text;
};
std::vector<ComparisonRow> flowtrain_comparison(const Headline& h, const std::vector<Field>& all,
                                                const JsonFile& study) {
  const double mfu = h.flow["mfu"].number();
  const double speedup = h.flow["speedup"].number();
  const Field& best = *best_flowtrain(all);
  const PackingBalance packing = packing_balance(study);
  return {
      {"FlowTrain MFU, 6B+72B on 1,024 H100s (" + h.assumed_text + ")", "over " + percent(kFlowTrainMfu, 0),
       percent(mfu), mfu_difference(mfu)},
      {"FlowTrain throughput over monolithic, 6B+72B on 1,024 H100s (" + h.assumed_text + ")",
       "up to " + times(kFlowTrainSpeedup, 1), times(speedup), relative_difference(speedup, kFlowTrainSpeedup)},
      {"FlowTrain MFU, 6B+72B on 1,024 H100s (" + h.measured_text + ")", "over " + percent(kFlowTrainMfu, 0),
       percent(h.measured_flow["mfu"].number()), mfu_difference(h.measured_flow["mfu"].number())},
      {"FlowTrain throughput over monolithic, 6B+72B on 1,024 H100s (" + h.measured_text + ")",
       "up to " + times(kFlowTrainSpeedup, 1), times(h.measured_flow["speedup"].number()),
       relative_difference(h.measured_flow["speedup"].number(), kFlowTrainSpeedup)},
      {"Largest FlowTrain throughput gain over monolithic, both models, 128-1,024 H100s",
       "up to " + times(kFlowTrainSpeedup, 1),
       times(best["speedup"].number()) + " (" + best["model"].string() + ", " +
           std::to_string(best["workers"].integer()) + " GPUs)",
       relative_difference(best["speedup"].number(), kFlowTrainSpeedup)},
      {"Micro-batch balance: max/mean backbone cost, cost packer vs token packer (6B+72B, " +
           std::to_string(kPackingMicroBatches) + " micro-batches, mean of " + std::to_string(packing.seeds) +
           " seeds)",
       "balanced by cost (not quantified)", number(packing.by_cost, 4) + " vs " + number(packing.by_tokens, 4), "-"},
  };
}

// Each model and worker count FlowTrain ran at: MFU per mode, FlowTrain's throughput and speedup.
std::vector<std::vector<std::string>> mode_rows(const Field& modes, const std::vector<Field>& all) {
  std::vector<std::vector<std::string>> rows;
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
      rows.push_back(line);
    }
  }
  return rows;
}

// The allocator's split at 1,024 GPUs and how the modes differ; the design is a reconstruction.
std::string flowtrain_intro(const std::string& platform, const Field& flow, const Field& sync) {
  return "<p>The twin runs monolithic (one layout for encoder and backbone), disagg-sync (the allocator's split, "
         "lock-step) and FlowTrain (the split, decoupled through the memory pool, packed by cost) on <code>" +
         escape(platform) + "</code>. At 1,024 GPUs the allocator gives 6B+72B " +
         std::to_string(flow["encoder_workers"].integer()) + " encoder workers (TP " +
         std::to_string(flow["encoder_tp"].integer()) + ") and a TP " + std::to_string(flow["backbone_tp"].integer()) +
         " x PP " + std::to_string(flow["backbone_pp"].integer()) + " backbone; disagg-sync reaches " +
         escape(percent(sync["mfu"].number())) +
         " MFU there. FlowTrain's paper is known only by its abstract: the design is a reconstruction.</p>\n";
}

// The headline configuration with assumed and with measured device efficiencies, and what each rests on.
std::string efficiency_table(const Headline& h, const Field& device, const Field& assumed_mono,
                             const Field& measured_mono) {
  std::string html = "<h3>Assumed or measured device efficiencies (6B+72B, 1,024 GPUs)</h3>\n";
  html +=
      "<p>What the FlowTrain figures rest on. <b>Assumed</b>: the constant efficiencies written next to their "
      "defaults in <code>models/transformer/stack_cost.h</code> (public GEMM and FlashAttention benchmarks, not "
      "measured "
      "here). <b>Measured</b>: the <code>" +
      escape(device["name"].string()) + "</code> device profile (" + escape(device["provenance"].string()) +
      "): GEMM efficiency per GEMM shape and attention efficiency per sequence length, fitted by "
      "<code>clustertwin calibrate device</code> from kernels timed on an H200 (the H100's compute) under that "
      "software stack. Transformer Engine or torch.compile would reach other efficiencies; the peak, memory and "
      "network stay the platform's datasheet figures in both rows.</p>\n";
  html +=
      table({"device efficiencies", "basis", "monolithic MFU", "FlowTrain MFU", "FlowTrain speedup"},
            {{h.assumed_text, "assumptions (stack_cost.h)", percent(assumed_mono["mfu"].number()),
              percent(h.flow["mfu"].number()), times(h.flow["speedup"].number())},
             {h.measured_text, "measured kernel times (traces/data/kernels)", percent(measured_mono["mfu"].number()),
              percent(h.measured_flow["mfu"].number()), times(h.measured_flow["speedup"].number())}});
  return html;
}

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
      "twin; datasheet peaks with the assumed efficiencies of models/transformer/stack_cost.h, and beside them the "
      "efficiencies measured on an H200 (the h200 device profile, fitted from a kernel benchmark)";
  // The measured device profile's rows (the study's part 4) and what the assumed rows rest on.
  const Field device = study.root()["device_profile"];
  const Field assumed = study.root()["assumed_device"];
  const Field measured_flow = device["rows"].find({{"mode", "flowtrain"}, {"workers", kFlowTrainWorkers}});
  const Field measured_mono = device["rows"].find({{"mode", "monolithic"}, {"workers", kFlowTrainWorkers}});
  const Headline h{flow, measured_flow,
                   "assumed: GEMMs " + number(assumed["gemm_efficiency"].number(), 2) + ", attention " +
                       number(assumed["attention_efficiency"].number(), 2) + " of peak",
                   "measured: " + device["name"].string() + " profile"};
  // Nothing is fitted to the paper: its figures are only compared.
  s.measured = {"GEMM efficiency per GEMM shape and attention efficiency per sequence length: the " +
                device["name"].string() + " device profile (" + device["provenance"].string() +
                "), fitted from kernels timed on an H200; used by the rows marked measured."};
  s.assumed = {
      "The rows marked assumed: GEMMs at " + number(assumed["gemm_efficiency"].number(), 2) + " and attention at " +
          number(assumed["attention_efficiency"].number(), 2) +
          " of peak (models/transformer/stack_cost.h, from public GEMM and FlashAttention benchmarks).",
      "Both rows: half of the tensor-parallel exchange hidden under GEMMs; the elementwise kernels' bytes; the "
      "platform's datasheet peak, memory and network; the encoder's full attention at the causal curve's "
      "efficiency (only causal attention was measured).",
      "The design (memory pool, throughput-matching allocator, cost-based packing) is a reconstruction from the "
      "paper's abstract; the 6B+72B model pair and its image and text lengths are our choice."};

  const std::vector<Field> all = modes.elements();
  const std::vector<ComparisonRow> comparison = flowtrain_comparison(h, all, study);
  const std::vector<std::vector<std::string>> rows = mode_rows(modes, all);

  s.html = heading(s.id, s.title);
  s.html += flowtrain_intro(s.platforms[0], h.flow, sync);
  s.html += comparison_table(comparison);
  const Field assumed_mono =
      modes.find({{"mode", "monolithic"}, {"model", kFlowTrainModel}, {"workers", kFlowTrainWorkers}});
  s.html += efficiency_table(h, device, assumed_mono, measured_mono);
  s.html += "<h3>MFU per mode (the twin, assumed efficiencies)</h3>\n";
  s.html += table({"model", "GPUs", "monolithic", "disagg-sync", "FlowTrain", "FlowTrain samples/s", "speedup"}, rows);
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
