// The FlowTrain study, its first part (experiments/flowtrain/README.md):
// the pieces that need no simulation yet.
//
//   1. packing: max/mean micro-batch backbone cost of the cost-based packer
//      and of the token-count baseline, on the synthetic dataset, for both
//      shipped models, several seeds and micro-batch counts
//   2. allocation: the throughput-matching allocator's split and layouts on
//      the shipped h100-1024 profile's device, 64 to 1,024 workers
//
// Writes packing.csv, allocation.csv and study.json (atomically) to OUT
// (default out/flowtrain) and prints the tables and its wall time. The
// twin's modes (monolithic, disagg-sync, flowtrain) come with sim/flowtrain.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/common/file_io.h"
#include "models/common/text.h"
#include "models/flowtrain/allocator.h"
#include "models/flowtrain/packing.h"
#include "models/flowtrain/vlm.h"
#include "sim/core/cluster_profile.h"

namespace {

using namespace clustertwin;
using namespace clustertwin::flowtrain;

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
constexpr int64_t kCapacity = 65536;

}  // namespace

int main(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  const std::string out = argc > 1 ? argv[1] : "out/flowtrain";
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) fail(Status::invalid_argument(out + ": cannot create the folder (" + ec.message() + ")"));
  const sim::ClusterProfile profile = value_or_fail(sim::load_cluster_profile("h100-1024"));
  nlohmann::ordered_json json;

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
    in.peak_flops = profile.device.peak_flops.at("bf16");
    in.memory_bytes = profile.device.memory_bytes;
    in.devices_per_node = profile.devices_per_node;
    set_dataset_means(&in, DatasetOptions{}, 4096);
    for (int workers : {64, 128, 256, 512, 1024}) {
      in.workers = workers;
      const Allocation a = value_or_fail(allocate(in));
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
  for (const auto& [file, text] : std::vector<std::pair<std::string, std::string>>{
           {"packing.csv", packing_csv}, {"allocation.csv", allocation_csv}, {"study.json", json.dump(2) + "\n"}}) {
    if (Status s = write_file_atomically(out + "/" + file, text); !s.is_ok()) fail(s);
  }
  std::printf("outputs: %s/{packing.csv,allocation.csv,study.json}\n", out.c_str());
  std::printf("study wall time: %.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return 0;
}
