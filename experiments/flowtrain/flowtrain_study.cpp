// The FlowTrain study (experiments/flowtrain/README.md):
//
//   1. packing: max/mean micro-batch backbone cost of the cost-based packer
//      and of the token-count baseline, on the synthetic dataset, for both
//      shipped models, several seeds and micro-batch counts
//   2. allocation: the throughput-matching allocator's split and layouts on
//      the shipped h100-1024 profile's device, 128 to 1,024 workers
//   3. the twin's three modes (monolithic, disagg-sync, flowtrain) against
//      worker count on h100-1024, both models: samples/s, MFU, speedup
//      against monolithic; Perfetto traces of each mode's last step at
//      1,024 workers; PNG plots when gnuplot is installed
//   4. the same modes at 1,024 workers (6B+72B) with measured efficiencies:
//      the shipped h200 device profile (GEMMs per shape, attention per
//      sequence length, fitted from the kernel benchmark in
//      traces/data/kernels) in place of timing.h's assumed constants
//
// Writes packing.csv, allocation.csv, modes.csv, study.json (atomically),
// traces/ and plots to OUT (default out/flowtrain) and prints the tables and
// its wall time.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/file_io.h"
#include "common/gnuplot.h"
#include "common/progress.h"
#include "common/text.h"
#include "models/cluster/cluster_profile.h"
#include "models/cluster/device_profile.h"
#include "models/flowtrain/allocator.h"
#include "models/flowtrain/packing.h"
#include "models/flowtrain/vlm.h"
#include "sim/flowtrain/flowtrain_twin.h"

namespace {

using namespace clustertwin;
using namespace clustertwin::models::flowtrain;

[[noreturn]] void fail(const Status& status) {
  std::fprintf(stderr, "flowtrain_study: %s\n", status.message().c_str());
  std::exit(status.exit_code());
}

template <typename T>
T value_or_fail(StatusOr<T> v) {
  if (!v.is_ok()) fail(v.status());
  return std::move(*v);
}

constexpr int kSamplesPerStep = 512;
constexpr const char* kHeadlineModel = "6B+72B";  // the report's headline configuration
constexpr int kHeadlineWorkers = 1024;
constexpr int64_t kCapacity = 65536;

}  // namespace

int main(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  const std::string out = argc > 1 ? argv[1] : "out/flowtrain";
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) fail(Status::invalid_argument(out + ": cannot create the folder (" + ec.message() + ")"));
  const cluster::ClusterProfile profile = value_or_fail(cluster::load_cluster_profile("h100-1024"));
  nlohmann::ordered_json json;
  json["platform"] = profile.name;  // the report names it (experiments/report)

  std::printf("# packing: %d samples a step into micro-batches of up to %lld tokens; max/mean backbone cost\n",
              kSamplesPerStep, static_cast<long long>(kCapacity));
  std::printf("  %-8s %5s %14s %10s %10s %s\n", "model", "seed", "micro-batches", "by cost", "by tokens",
              "cost excess / token excess");
  std::string packing_csv = "model,seed,micro_batches,by_cost,by_tokens\n";
  bool halves = true;
  for (const char* name : {"6B+72B", "300M+7B"}) {
    const VlmSpec model = value_or_fail(vlm_spec(name));
    for (uint64_t seed : {0, 1, 2}) {
      DatasetOptions o;
      o.seed = seed;
      const std::vector<PackItem> items = dataset_pack_items(model, o, kSamplesPerStep);
      for (int bins : {16, 32, 64}) {
        const double cost = value_or_fail(pack_by_cost(items, bins, kCapacity)).imbalance();
        const double tokens = value_or_fail(pack_by_tokens(items, bins, kCapacity)).imbalance();
        const double ratio = tokens > 1 ? (cost - 1) / (tokens - 1) : 0;
        if (bins == 32) halves = halves && ratio <= 0.5;
        std::printf("  %-8s %5llu %14d %10.4f %10.4f %.2f\n", name, static_cast<unsigned long long>(seed), bins, cost,
                    tokens, ratio);
        packing_csv += std::string(name) + "," + std::to_string(seed) + "," + std::to_string(bins) + "," +
                       format_number("%.6f", cost) + "," + format_number("%.6f", tokens) + "\n";
        json["packing"].push_back(
            {{"model", name}, {"seed", seed}, {"micro_batches", bins}, {"by_cost", cost}, {"by_tokens", tokens}});
      }
    }
  }
  std::printf("cost packing at most half the token packer's excess imbalance (32 micro-batches): %s\n",
              halves ? "yes" : "no");

  std::printf("\n# allocation on %s's device (%.0f TFLOP/s bf16, %.0f GB, %d a node): throughput matching\n",
              profile.name.c_str(), profile.device.peak_flops.at("bf16") / 1e12, profile.device.memory_bytes / 1e9,
              profile.devices_per_node);
  std::printf("  %-8s %7s %8s %9s %12s %12s %12s\n", "model", "workers", "encoder", "enc TP", "backbone TPxPP",
              "enc samp/s", "llm samp/s");
  std::string allocation_csv =
      "model,workers,encoder_workers,encoder_tp,encoder_dp,backbone_workers,backbone_tp,backbone_pp,backbone_dp,"
      "encoder_rate,backbone_rate,rate\n";
  for (const char* name : {"6B+72B", "300M+7B"}) {
    AllocatorInputs in;
    in.model = value_or_fail(vlm_spec(name));
    in.device = sim::flowtrain::flowtrain_device(sim::flowtrain::FlowTrainSetup{}, profile);
    in.memory_bytes = profile.device.memory_bytes;
    in.devices_per_node = profile.devices_per_node;
    set_dataset_means(&in, DatasetOptions{}, 4096);
    for (int workers : {64, 128, 256, 512, 1024}) {
      in.workers = workers;
      auto fits = allocate(in);
      if (!fits.is_ok()) {
        std::printf("  %-8s %7d  no split fits: %s\n", name, workers, fits.status().message().c_str());
        continue;
      }
      const Allocation a = *fits;
      std::printf("  %-8s %7d %8d %9d %9dx%-4d %12.1f %12.1f\n", name, workers, a.encoder.devices, a.encoder.tp,
                  a.backbone.tp, a.backbone.pp, a.encoder.rate, a.backbone.rate);
      allocation_csv += std::string(name) + "," + std::to_string(workers) + "," + std::to_string(a.encoder.devices) +
                        "," + std::to_string(a.encoder.tp) + "," + std::to_string(a.encoder.dp) + "," +
                        std::to_string(a.backbone.devices) + "," + std::to_string(a.backbone.tp) + "," +
                        std::to_string(a.backbone.pp) + "," + std::to_string(a.backbone.dp) + "," +
                        format_number("%.4f", a.encoder.rate) + "," + format_number("%.4f", a.backbone.rate) + "," +
                        format_number("%.4f", a.rate) + "\n";
      json["allocation"].push_back({{"model", name},
                                    {"workers", workers},
                                    {"encoder_workers", a.encoder.devices},
                                    {"encoder_tp", a.encoder.tp},
                                    {"backbone_tp", a.backbone.tp},
                                    {"backbone_pp", a.backbone.pp},
                                    {"encoder_rate", a.encoder.rate},
                                    {"backbone_rate", a.backbone.rate},
                                    {"rate", a.rate}});
    }
  }
  // 3. The twin's modes.
  const std::vector<int> workers = {128, 256, 512, 1024};
  const std::vector<sim::flowtrain::FlowTrainMode> modes = {sim::flowtrain::FlowTrainMode::kMonolithic,
                                                            sim::flowtrain::FlowTrainMode::kDisaggSync,
                                                            sim::flowtrain::FlowTrainMode::kFlowTrain};
  std::filesystem::create_directories(out + "/traces", ec);
  if (ec) fail(Status::io_error(out + "/traces: " + ec.message()));
  std::vector<sim::flowtrain::FlowTrainRow> all;
  for (const char* name : {"6B+72B", "300M+7B"}) {
    sim::flowtrain::FlowTrainSetup setup;
    setup.model = name;
    std::printf("\n# the twin's modes on %s: %s, %d samples a step, micro-batches of %lld tokens\n",
                profile.name.c_str(), name, setup.global_batch, static_cast<long long>(setup.micro_batch_tokens));
    auto rows = value_or_fail(sim::flowtrain::run_flowtrain_modes(
        setup, profile, modes, workers, [](const sim::flowtrain::FlowTrainRow& r, int done, int total) {
          show_progress(done == total, "  [%d/%d] %s at %d workers", done, total, r.mode.c_str(), r.workers);
        }));
    std::fputs(sim::flowtrain::flowtrain_rows_table(rows).c_str(), stdout);
    for (const sim::flowtrain::FlowTrainRow& r : rows) {
      if (r.workers != 1024) continue;
      std::string model = name;
      std::replace(model.begin(), model.end(), '+', '_');
      if (Status s =
              sim::flowtrain::write_flowtrain_trace(r, profile.name, out + "/traces/" + model + "_" + r.mode + ".json");
          !s.is_ok()) {
        fail(s);
      }
    }
    all.insert(all.end(), rows.begin(), rows.end());
  }
  const sim::flowtrain::FlowTrainRow *mono = nullptr, *sync = nullptr, *flow = nullptr;
  for (const sim::flowtrain::FlowTrainRow& r : all) {
    if (r.model != "6B+72B" || r.workers != 1024) continue;
    (r.mode == "monolithic" ? mono : r.mode == "disagg-sync" ? sync : flow) = &r;
  }
  if (mono && sync && flow) {
    std::printf(
        "\nat 1,024 H100s, 6B+72B: flowtrain MFU %.1f%% (paper: over 50%%), speedup over monolithic %.2fx (paper: up "
        "to 1.7x; within 15%%: %s), above disagg-sync (%.1f vs %.1f samples/s): %s\n",
        100 * flow->mfu, flow->speedup, std::abs(flow->speedup - 1.7) <= 0.15 * 1.7 ? "yes" : "no", flow->samples_per_s,
        sync->samples_per_s, flow->samples_per_s > sync->samples_per_s ? "yes" : "no");
  }
  // 4. Measured efficiencies: the h200 device profile (torch 2.11 eager on an H200, which has the H100's compute).
  const cluster::DeviceProfile device = value_or_fail(cluster::load_device_profile("h200"));
  sim::flowtrain::FlowTrainSetup measured;
  measured.model = kHeadlineModel;
  if (Status s = sim::flowtrain::use_device_profile(device, profile, &measured); !s.is_ok()) fail(s);
  std::printf("\n# the twin's modes on %s, %s, with the measured device profile %s\n", profile.name.c_str(),
              kHeadlineModel, device.provenance_line().c_str());
  const auto measured_rows = value_or_fail(sim::flowtrain::run_flowtrain_modes(
      measured, profile, modes, {kHeadlineWorkers}, [](const sim::flowtrain::FlowTrainRow& r, int done, int total) {
        show_progress(done == total, "  [%d/%d] %s at %d workers", done, total, r.mode.c_str(), r.workers);
      }));
  std::fputs(sim::flowtrain::flowtrain_rows_table(measured_rows).c_str(), stdout);
  const models::flowtrain::DeviceModel assumed;  // timing.h's defaults: what the rows above rest on
  json["assumed_device"] = {{"gemm_efficiency", assumed.gemm_efficiency},
                            {"attention_efficiency", assumed.attention_efficiency},
                            {"source", "models/flowtrain/timing.h (assumptions)"}};
  json["device_profile"] = {
      {"name", device.name},
      {"provenance", device.provenance_line()},
      {"software_stack", device.software_stack},
      {"rows", nlohmann::json::parse(sim::flowtrain::flowtrain_rows_json(measured_rows))["rows"]}};
  const std::string modes_csv = sim::flowtrain::flowtrain_rows_csv(all);
  json["modes"] = nlohmann::json::parse(sim::flowtrain::flowtrain_rows_json(all))["rows"];
  const std::string plots =
      "set datafile separator ','\nset terminal pngcairo size 900,520 noenhanced\nset grid\nset key left top\n"
      "set logscale x 2\nset xlabel 'workers (H100)'\n"
      "set output '" +
      out +
      "/throughput.png'\nset title 'FlowTrain twin, 6B+72B on h100-1024: throughput'\n"
      "set ylabel 'samples/s'\nplot for [m in 'monolithic disagg-sync flowtrain'] '" +
      out +
      "/modes.csv' using 3:((strcol(1) eq m && strcol(2) eq '6B+72B') ? $9 : 1/0) with linespoints pt 7 title m\n"
      "set output '" +
      out +
      "/mfu.png'\nset title 'FlowTrain twin, 6B+72B on h100-1024: MFU (paper: over 50%)'\n"
      "set ylabel 'MFU'\nset yrange [0:1]\nplot for [m in 'monolithic disagg-sync flowtrain'] '" +
      out +
      "/modes.csv' using 3:((strcol(1) eq m && strcol(2) eq '6B+72B') ? $10 : 1/0) with linespoints pt 7 title m, "
      "0.5 with lines dt 2 lc 'gray' title '50%'\n";
  for (const auto& [file, text] :
       std::vector<std::pair<std::string, std::string>>{{"packing.csv", packing_csv},
                                                        {"allocation.csv", allocation_csv},
                                                        {"modes.csv", modes_csv},
                                                        {"plots.gp", plots},
                                                        {"study.json", json.dump(2) + "\n"}}) {
    if (Status s = write_file_atomically(out + "/" + file, text); !s.is_ok()) fail(s);
  }
  const bool plotted = run_gnuplot_file(out + "/plots.gp");
  std::printf("outputs: %s/{packing.csv,allocation.csv,modes.csv,study.json,traces/*.json%s}\n", out.c_str(),
              plotted ? ",throughput.png,mfu.png" : "; no gnuplot: no PNGs");
  std::printf("study wall time: %.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return 0;
}
