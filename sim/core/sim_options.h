// How a plan run in the twin is asked to run (SimOptions): what the plan
// simulator (simulator.h), the run (plan_run.h) and its pricing
// (plan_price.h) all read, in a header of its own so that they need not
// include each other.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/collective_runner.h"

namespace clustertwin::sim {

/// Tasks grouped by cost key, for the exposed-time breakdown.
struct BreakdownLayer {
  std::string name;
  std::vector<std::string> cost_keys;
};

/// How to run a plan in the twin.
struct SimOptions {
  int workers = 1;
  int steps = 6;         // steps simulated
  int warmup_steps = 2;  // steps before the measured window (pipelines fill up)
  int drain_steps = 1;   // steps after it (the last steps of a pipeline run with nothing behind them)
  /// Collective fidelity; `auto_fidelity` picks step up to kStepFidelityMaxWorkers workers, flow above.
  Fidelity fidelity = Fidelity::kFlow;
  bool auto_fidelity = true;
  uint64_t seed = 0;      // recorded in the trace; the twin itself draws no random numbers yet
  std::string trace_out;  // write the simulated trace here ("" for none)
  /// Flow fidelity merges a uniform exchange per (node, switch group) among
  /// more nodes than this, per node pair below (the same result where the
  /// exchange is uniform; a test holds them together).
  int group_merge_min_nodes = 32;
  /// Simulate one worker per node (the node's first) when every worker of a
  /// node provably does the same: a homogeneous profile without stragglers,
  /// no platform file, every task on whole nodes (all of a node's ranks or
  /// none), collectives over the world, a node, blocks of whole nodes or
  /// strides of whole nodes, sends and receives a multiple of a node away. The simulated workers' collectives
  /// still move every member's bytes, so the network sees the whole load;
  /// the other workers' compute runs on devices of their own and would change
  /// nothing. 16 times fewer actors on 16-device nodes; a test holds the two
  /// modes to each other. False simulates every worker.
  bool symmetric = true;
  /// Store one route per node pair instead of computing routes on demand
  /// (Platform::Routes::kStored): the same simulation, quadratic to build;
  /// for the tests that hold the two together.
  bool stored_routes = false;
  /// Price each distinct collective once where the run provably keeps the
  /// fabric to one collective at a time (exclusive_network in
  /// sim/core/collective_shortcut.h): the first is moved as flows, later
  /// identical ones take its time, and at step fidelity a phase's rounds
  /// after the first take the first one's time. The same results as the
  /// flows (tests hold them within 1e-9); false moves every collective as
  /// flows, for comparison. A job mix turns it off (the jobs share links).
  bool collective_shortcut = true;
  /// Layers of the exposed-time breakdown (SimResult::breakdown), in order of
  /// precedence: a layer's exposed time is its busy time minus what earlier
  /// layers already cover.
  std::vector<BreakdownLayer> breakdown;
};

/// SimOptions::auto_fidelity runs step fidelity up to this many workers, flow above.
inline constexpr int kStepFidelityMaxWorkers = 64;

}  // namespace clustertwin::sim
