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
//      traces/data/kernels) in place of stack_cost.h's assumed constants
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

namespace ft = sim::flowtrain;

const std::vector<ft::FlowTrainMode> kModes = {ft::FlowTrainMode::kMonolithic, ft::FlowTrainMode::kDisaggSync,
                                               ft::FlowTrainMode::kFlowTrain};

void show_mode_progress(const ft::FlowTrainRow& r, int done, int total) {
  show_progress(done == total, "  [%d/%d] %s at %d workers", done, total, r.mode.c_str(), r.workers);
}

// The study's parts in the order they run: each prints its table and keeps
// what the output files need; study.json's keys follow the same order.
class FlowTrainStudy {
 public:
  explicit FlowTrainStudy(std::string out) : out_(std::move(out)) {
    std::error_code ec;
    std::filesystem::create_directories(out_, ec);
    if (ec) fail(Status::invalid_argument(out_ + ": cannot create the folder (" + ec.message() + ")"));
    profile_ = value_or_fail(cluster::load_cluster_profile("h100-1024"));
    json_["platform"] = profile_.name;  // the report names it (experiments/report)
  }

  // 1. Max/mean backbone cost of the cost packer against the token packer.
  void compare_packers() {
    std::printf("# packing: %d samples a step into micro-batches of up to %lld tokens; max/mean backbone cost\n",
                kSamplesPerStep, static_cast<long long>(kCapacity));
    std::printf("  %-8s %5s %14s %10s %10s %s\n", "model", "seed", "micro-batches", "by cost", "by tokens",
                "cost excess / token excess");
    packing_csv_ = "model,seed,micro_batches,by_cost,by_tokens\n";
    bool halves = true;
    for (const char* name : {"6B+72B", "300M+7B"}) {
      const VlmSpec model = value_or_fail(vlm_spec(name));
      for (uint64_t seed : {0, 1, 2}) {
        DatasetOptions o;
        o.seed = seed;
        const std::vector<PackItem> items = dataset_pack_items(model, o, kSamplesPerStep);
        for (int bins : {16, 32, 64})
          halves = add_packing_row(name, seed, items, bins) && halves;
      }
    }
    std::printf("cost packing at most half the token packer's excess imbalance (32 micro-batches): %s\n",
                halves ? "yes" : "no");
  }

  // 2. The throughput-matching allocator's split at each worker count.
  void allocate_workers() {
    std::printf("\n# allocation on %s's device (%.0f TFLOP/s bf16, %.0f GB, %d a node): throughput matching\n",
                profile_.name.c_str(), profile_.device.peak_flops.at("bf16") / 1e12, profile_.device.memory_bytes / 1e9,
                profile_.devices_per_node);
    std::printf("  %-8s %7s %8s %9s %12s %12s %12s\n", "model", "workers", "encoder", "enc TP", "backbone TPxPP",
                "enc samp/s", "llm samp/s");
    allocation_csv_ =
        "model,workers,encoder_workers,encoder_tp,encoder_dp,backbone_workers,backbone_tp,backbone_pp,backbone_dp,"
        "encoder_rate,backbone_rate,rate\n";
    for (const char* name : {"6B+72B", "300M+7B"}) {
      AllocatorInputs in;
      in.model = value_or_fail(vlm_spec(name));
      in.device = ft::flowtrain_device(ft::FlowTrainSetup{}, profile_);
      in.memory_bytes = profile_.device.memory_bytes;
      in.devices_per_node = profile_.devices_per_node;
      set_dataset_means(&in, DatasetOptions{}, 4096);
      for (int workers : {64, 128, 256, 512, 1024}) {
        in.workers = workers;
        auto fits = allocate(in);
        if (!fits.is_ok()) {
          std::printf("  %-8s %7d  no split fits: %s\n", name, workers, fits.status().message().c_str());
          continue;
        }
        add_allocation_row(name, workers, *fits);
      }
    }
  }

  // 3. The twin's three modes against worker count, both models, with a trace of each mode at 1,024 workers.
  void run_modes() {
    std::error_code ec;
    std::filesystem::create_directories(out_ + "/traces", ec);
    if (ec) fail(Status::io_error(out_ + "/traces: " + ec.message()));
    for (const char* name : {"6B+72B", "300M+7B"}) {
      ft::FlowTrainSetup setup;
      setup.model = name;
      std::printf("\n# the twin's modes on %s: %s, %d samples a step, micro-batches of %lld tokens\n",
                  profile_.name.c_str(), name, setup.global_batch, static_cast<long long>(setup.micro_batch_tokens));
      auto rows =
          value_or_fail(ft::run_flowtrain_modes(setup, profile_, kModes, {128, 256, 512, 1024}, show_mode_progress));
      std::fputs(ft::flowtrain_rows_table(rows).c_str(), stdout);
      write_traces(name, rows);
      modes_.insert(modes_.end(), rows.begin(), rows.end());
    }
  }

  // The paper's figures against the twin's at 1,024 H100s, 6B+72B.
  void print_headline() const {
    const ft::FlowTrainRow *mono = nullptr, *sync = nullptr, *flow = nullptr;
    for (const ft::FlowTrainRow& r : modes_) {
      if (r.model != "6B+72B" || r.workers != 1024) continue;
      (r.mode == "monolithic" ? mono : r.mode == "disagg-sync" ? sync : flow) = &r;
    }
    if (!mono || !sync || !flow) return;
    std::printf(
        "\nat 1,024 H100s, 6B+72B: flowtrain MFU %.1f%% (paper: over 50%%), speedup over monolithic %.2fx (paper: up "
        "to 1.7x; within 15%%: %s), above disagg-sync (%.1f vs %.1f samples/s): %s\n",
        100 * flow->mfu, flow->speedup, std::abs(flow->speedup - 1.7) <= 0.15 * 1.7 ? "yes" : "no", flow->samples_per_s,
        sync->samples_per_s, flow->samples_per_s > sync->samples_per_s ? "yes" : "no");
  }

  // 4. The headline configuration again, with the measured h200 device profile (torch 2.11 eager on an H200,
  // which has the H100's compute) in place of stack_cost.h's assumed efficiencies.
  void run_with_measured_device() {
    const cluster::DeviceProfile device = value_or_fail(cluster::load_device_profile("h200"));
    ft::FlowTrainSetup measured;
    measured.model = kHeadlineModel;
    if (Status s = ft::use_device_profile(device, profile_, &measured); !s.is_ok()) fail(s);
    std::printf("\n# the twin's modes on %s, %s, with the measured device profile %s\n", profile_.name.c_str(),
                kHeadlineModel, device.provenance_line().c_str());
    const auto measured_rows =
        value_or_fail(ft::run_flowtrain_modes(measured, profile_, kModes, {kHeadlineWorkers}, show_mode_progress));
    std::fputs(ft::flowtrain_rows_table(measured_rows).c_str(), stdout);
    const models::flowtrain::DeviceModel assumed;  // stack_cost.h's defaults: what the rows above rest on
    json_["assumed_device"] = {{"gemm_efficiency", assumed.gemm_efficiency},
                               {"attention_efficiency", assumed.attention_efficiency},
                               {"source", "models/transformer/stack_cost.h (assumptions)"}};
    json_["device_profile"] = {{"name", device.name},
                               {"provenance", device.provenance_line()},
                               {"software_stack", device.software_stack},
                               {"rows", nlohmann::json::parse(ft::flowtrain_rows_json(measured_rows))["rows"]}};
  }

  // The CSVs, study.json and the plots; prints where they went.
  void write_outputs() {
    const std::string modes_csv = ft::flowtrain_rows_csv(modes_);
    json_["modes"] = nlohmann::json::parse(ft::flowtrain_rows_json(modes_))["rows"];
    for (const auto& [file, text] :
         std::vector<std::pair<std::string, std::string>>{{"packing.csv", packing_csv_},
                                                          {"allocation.csv", allocation_csv_},
                                                          {"modes.csv", modes_csv},
                                                          {"plots.gp", gnuplot_script()},
                                                          {"study.json", json_.dump(2) + "\n"}}) {
      if (Status s = write_file_atomically(out_ + "/" + file, text); !s.is_ok()) fail(s);
    }
    const bool plotted = run_gnuplot_file(out_ + "/plots.gp");
    std::printf("outputs: %s/{packing.csv,allocation.csv,modes.csv,study.json,traces/*.json%s}\n", out_.c_str(),
                plotted ? ",throughput.png,mfu.png" : "; no gnuplot: no PNGs");
  }

 private:
  // One micro-batch count's row of the packing table; true when cost packing has at most half the token
  // packer's excess imbalance (the check counts 32 micro-batches only).
  bool add_packing_row(const char* name, uint64_t seed, const std::vector<PackItem>& items, int bins) {
    const double cost = value_or_fail(pack_by_cost(items, bins, kCapacity)).imbalance();
    const double tokens = value_or_fail(pack_by_tokens(items, bins, kCapacity)).imbalance();
    const double ratio = tokens > 1 ? (cost - 1) / (tokens - 1) : 0;
    std::printf("  %-8s %5llu %14d %10.4f %10.4f %.2f\n", name, static_cast<unsigned long long>(seed), bins, cost,
                tokens, ratio);
    packing_csv_ += std::string(name) + "," + std::to_string(seed) + "," + std::to_string(bins) + "," +
                    format_number("%.6f", cost) + "," + format_number("%.6f", tokens) + "\n";
    json_["packing"].push_back(
        {{"model", name}, {"seed", seed}, {"micro_batches", bins}, {"by_cost", cost}, {"by_tokens", tokens}});
    return bins != 32 || ratio <= 0.5;
  }

  void add_allocation_row(const char* name, int workers, const Allocation& a) {
    std::printf("  %-8s %7d %8d %9d %9dx%-4d %12.1f %12.1f\n", name, workers, a.encoder.devices, a.encoder.tp,
                a.backbone.tp, a.backbone.pp, a.encoder.rate, a.backbone.rate);
    allocation_csv_ += std::string(name) + "," + std::to_string(workers) + "," + std::to_string(a.encoder.devices) +
                       "," + std::to_string(a.encoder.tp) + "," + std::to_string(a.encoder.dp) + "," +
                       std::to_string(a.backbone.devices) + "," + std::to_string(a.backbone.tp) + "," +
                       std::to_string(a.backbone.pp) + "," + std::to_string(a.backbone.dp) + "," +
                       format_number("%.4f", a.encoder.rate) + "," + format_number("%.4f", a.backbone.rate) + "," +
                       format_number("%.4f", a.rate) + "\n";
    json_["allocation"].push_back({{"model", name},
                                   {"workers", workers},
                                   {"encoder_workers", a.encoder.devices},
                                   {"encoder_tp", a.encoder.tp},
                                   {"backbone_tp", a.backbone.tp},
                                   {"backbone_pp", a.backbone.pp},
                                   {"encoder_rate", a.encoder.rate},
                                   {"backbone_rate", a.backbone.rate},
                                   {"rate", a.rate}});
  }

  // A Perfetto trace of each mode's run at 1,024 workers.
  void write_traces(const char* name, const std::vector<ft::FlowTrainRow>& rows) const {
    for (const ft::FlowTrainRow& r : rows) {
      if (r.workers != 1024) continue;
      std::string model = name;
      std::replace(model.begin(), model.end(), '+', '_');
      if (Status s = ft::write_flowtrain_trace(r, profile_.name, out_ + "/traces/" + model + "_" + r.mode + ".json");
          !s.is_ok()) {
        fail(s);
      }
    }
  }

  // Throughput and MFU against workers, per mode, from modes.csv.
  std::string gnuplot_script() const {
    const std::string q = "'" + out_ + "/";
    const std::string per_mode = "plot for [m in 'monolithic disagg-sync flowtrain'] " + q +
                                 "modes.csv' using 3:((strcol(1) eq m && strcol(2) eq '6B+72B') ? ";
    return "set datafile separator ','\nset terminal pngcairo size 900,520 noenhanced\nset grid\nset key left top\n"
           "set logscale x 2\nset xlabel 'workers (H100)'\n"
           "set output " +
           q +
           "throughput.png'\nset title 'FlowTrain twin, 6B+72B on h100-1024: throughput'\nset ylabel 'samples/s'\n" +
           per_mode + "$9 : 1/0) with linespoints pt 7 title m\n" + "set output " + q +
           "mfu.png'\nset title 'FlowTrain twin, 6B+72B on h100-1024: MFU (paper: over 50%)'\nset ylabel 'MFU'\n"
           "set yrange [0:1]\n" +
           per_mode + "$10 : 1/0) with linespoints pt 7 title m, 0.5 with lines dt 2 lc 'gray' title '50%'\n";
  }

  std::string out_;
  cluster::ClusterProfile profile_;
  nlohmann::ordered_json json_;
  std::string packing_csv_, allocation_csv_;
  std::vector<ft::FlowTrainRow> modes_;  // both models, every mode and worker count
};

}  // namespace

int main(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  FlowTrainStudy study(argc > 1 ? argv[1] : "out/flowtrain");
  study.compare_packers();
  study.allocate_workers();
  study.run_modes();
  study.print_headline();
  study.run_with_measured_device();
  study.write_outputs();
  std::printf("study wall time: %.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return 0;
}
