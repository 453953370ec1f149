#pragma once

// What run flowtrain prints at rank 0 (the table, or one JSON object) and
// the run's options as the trace's config (traces/FORMAT.md), which
// `validate flowtrain` reads back. No torch here.

#include <cstdint>
#include <string>
#include <vector>

#include "models/flowtrain/tiny_plan.h"
#include "real/flowtrain/run_args.h"

namespace clustertwin::real::flowtrain {

/// A finished run, as rank 0 saw it.
struct RunReport {
  int world_size = 0;
  int encoders = 0;             // 0 in monolithic
  std::string device;           // "cpu" or "cuda"
  std::string backend;          // "gloo" or "nccl"
  std::string staging;          // what the collectives stage (Communicator::staging)
  std::string communicator;     // Communicator::describe(): the table's first line
  std::string pool_transfer;    // "host", "host (pinned)", "cuda-ipc" or "none"
  std::vector<double> step_s;   // each step's wall time
  std::vector<double> losses;   // each step's mean loss over the global batch
  double model_flops = 0;       // over all steps
  double matmul_rate = 0;       // FLOP/s in the run's dtype, the MFU's peak per rank
  int64_t encoder_params = 0;   // every parameter of the encoder side
  int64_t backbone_params = 0;  // every parameter of the backbone side, embeddings included
};

/// The options the trace's config holds.
std::string options_json(const FlowTrainRunArgs& a, int world, int encoders,
                         const ::clustertwin::models::flowtrain::TinyFacts& facts, double matmul_rate);

/// Prints the table, or with --json one JSON object, to stdout: the model's
/// parameters (encoder, backbone, total), the model FLOPs per step, the
/// achieved FLOP/s (model FLOPs over the run's wall time, all ranks
/// together) and the MFU (that over ranks x the measured matmul rate).
void print_report(const FlowTrainRunArgs& a, const RunReport& r);

}  // namespace clustertwin::real::flowtrain
