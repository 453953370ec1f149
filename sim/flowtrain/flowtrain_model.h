#pragma once

// The FlowTrain twin's model (internal to sim/flowtrain): one orchestrator
// actor's state and its reactions to SimGrid activities finishing. The
// public entry points are in flowtrain_twin.h; the model is split by concern:
//
//   flowtrain_model.cpp   the step's samples, the event loop, busy intervals,
//                         transfers, the gradient reduce-scatter, the row
//   flowtrain_modes.cpp   monolithic and disagg-sync: one step in lockstep
//   flowtrain_pool.cpp    flowtrain: encoder groups feed backbone replicas
//                         through the memory pool, each at its own pace
//
// Callers never touch SimGrid: run_in_child (flowtrain_twin.cpp) builds the
// platform, runs the model in an actor and serialises its row.

#include <simgrid/forward.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <vector>

#include "models/flowtrain/allocator.h"
#include "models/flowtrain/dispatch.h"
#include "models/flowtrain/packing.h"
#include "sim/core/platform.h"
#include "sim/core/reactor.h"
#include "sim/flowtrain/flowtrain_row.h"
#include "sim/flowtrain/flowtrain_setup.h"

namespace clustertwin::sim::flowtrain::detail {

namespace sg = simgrid::s4u;
using models::flowtrain::StackWork;

// Adam over a ZeRO-1 shard: fp32 master, m, v read and written, bf16 out.
inline constexpr double kOptimizerBytesPerParam = 32;
inline constexpr int kMeanSamples = 2048;  // dataset samples the allocator's means come from

// The step's samples and what each costs.
struct StepSample {
  models::flowtrain::Sample sample;
  models::flowtrain::SampleCost cost;
  StackWork encoder, backbone;
  double embedding_bytes = 0;  // the projected image tokens it hands the backbone
};

// Packs `items` into the fewest micro-batches of `capacity` tokens that the packer fits (from the token lower
// bound), their count a multiple of `multiple` (the data-parallel replicas, so that each gets as many).
StatusOr<models::flowtrain::Packing> pack(const std::vector<models::flowtrain::PackItem>& items, int64_t capacity,
                                          bool by_cost, int multiple = 1);

struct Layouts {
  models::flowtrain::Allocation split;  // disagg-sync and flowtrain
  models::flowtrain::SideLayout monolithic;
  double allocator_rate = 0;
};

class FlowTrainRun {
 public:
  FlowTrainRun(const FlowTrainSetup& setup, const cluster::ClusterProfile& profile, Platform& platform,
               FlowTrainMode mode, const models::flowtrain::VlmSpec& model, const Layouts& layouts)
      : setup_(setup),
        profile_(profile),
        platform_(platform),
        mode_(mode),
        model_(model),
        layouts_(layouts),
        device_(flowtrain_device(setup, profile)),
        nic_bandwidth_(profile.nics.link.bandwidth > 0 ? profile.nics.link.bandwidth
                                                       : profile.intra_node.link.bandwidth) {}

  /// Runs setup.steps steps (an actor of the engine); the first error stops it.
  Status run();
  /// The measured steps (all but the first) as a table row, with the last step's intervals.
  FlowTrainRow result() const;
  /// The simulated time at which each step ended (the run starts at the engine's clock when run() is called).
  const std::vector<double>& step_ends() const { return step_ends_; }
  /// Whether every step ran (run() returned without an error).
  bool finished() const { return step_ends_.size() == static_cast<size_t>(setup_.steps); }

 private:
  // ---- the step's samples (flowtrain_model.cpp) -------------------------------------------------------------------
  Status load_step(int step);
  std::vector<models::flowtrain::PackItem> items(const std::vector<int>& which) const;
  std::vector<int> all_samples() const;

  // ---- activities (flowtrain_model.cpp) ---------------------------------------------------------------------------
  void add(sg::ActivityPtr activity, std::function<void()> on_done) {
    reactor_.add(std::move(activity), std::move(on_done));
  }
  Status drain(const char* what);
  void busy(int first_device, int devices, double seconds, const char* kind, std::function<void()> on_done);
  void transfer(int from_device, int to_device, double bytes, std::function<void()> on_done);

  // The data-parallel gradient reduce-scatter of `bytes` per device among `members` (one device of each
  // replica; ZeRO-1: each then steps its shard), run by an actor of its own; `on_done` when it ends. The
  // parameters' all-gather that follows is overlapped with the next step's first forward (Megatron's
  // overlap-param-gather) and not simulated.
  void reduce_scatter(std::vector<int> members, double bytes, std::function<void()> on_done);
  double optimizer_seconds(double params_per_device) const;
  double encoder_params() const { return static_cast<double>(model_.encoder.params() + model_.projector_params()); }
  double backbone_params() const { return static_cast<double>(model_.backbone.params()); }

  // A side's gradient reduce-scatter and optimizer step; the step ends when every side has stepped.
  // sides: {members, bytes per device, optimizer seconds, first device, devices}.
  struct Side {
    std::vector<int> members;
    double bytes = 0, optimizer_s = 0;
    int first_device = 0, devices = 0;
    int rails = 1;  // devices of a replica (TP x PP), each reducing its own shard with its peers in the others
  };
  // Runs a ring per device position k of a replica (members + k: rail k), all at once; alone on a rail-optimised
  // fabric they take one ring's time, and in a job mix every rail's bytes cross the shared links, as they do.
  void finish_side(const Side& side);

  // ---- monolithic (flowtrain_modes.cpp) ---------------------------------------------------------------------------
  Status monolithic_step();
  static double imbalance_of(const std::vector<double>& costs);

  // ---- the split modes (flowtrain_modes.cpp) ----------------------------------------------------------------------
  int encoder_groups() const { return layouts_.split.encoder.devices / layouts_.split.encoder.tp; }
  int backbone_group() const { return layouts_.split.backbone.tp * layouts_.split.backbone.pp; }
  int replicas() const { return layouts_.split.backbone.dp; }
  int replica_device(int r) const { return layouts_.split.encoder.devices + r * backbone_group(); }
  double transfer_seconds(double bytes) const;
  void finish_encoder_side();
  void finish_backbone_side();
  Status disagg_sync_step();

  // ---- flowtrain through the pool (flowtrain_pool.cpp) ------------------------------------------------------------
  struct EncoderGroup {
    bool busy = false;
    double in_flight_bytes = 0;  // its pool slots not yet read by a backbone replica
  };
  struct Backward {
    int sample = 0, replica = 0;  // the replica whose pool slot holds the gradient
  };
  struct Replica {
    bool busy = false;
    bool drained = false;
    double last_stage_s = 0;
  };
  Status flowtrain_step();
  void kick_encoder(int g);
  int ready_untaken() const;
  void kick_replica(int r);
  void encoder_side_finished() { finish_encoder_side(); }
  void backbone_side_finished() { finish_backbone_side(); }

  const FlowTrainSetup& setup_;
  const cluster::ClusterProfile& profile_;
  Platform& platform_;
  FlowTrainMode mode_;
  const models::flowtrain::VlmSpec& model_;
  const Layouts& layouts_;
  models::flowtrain::DeviceModel device_;
  double nic_bandwidth_;

  std::vector<StepSample> samples_;
  double step_flops_now_ = 0, step_start_ = 0, imbalance_ = 0;
  std::vector<double> step_times_, step_flops_, step_ends_;
  std::vector<FlowTrainInterval> intervals_;
  Reactor reactor_;
  bool step_done_ = false;
  int sides_left_ = 0;

  // flowtrain's state
  std::vector<std::vector<int64_t>> bins_;
  std::vector<int> bin_missing_;
  std::optional<models::flowtrain::MicroBatchDispatch> dispatch_;  // first-ready (models/flowtrain/dispatch.h)
  std::vector<int> sample_bin_;
  std::vector<int> producer_;
  std::optional<models::flowtrain::EncoderDispatch> encode_;  // shared queue (models/flowtrain/dispatch.h)
  std::vector<EncoderGroup> groups_;
  std::deque<Backward> backward_;
  std::vector<Replica> replicas_;
  int encoder_backward_left_ = 0, bins_left_ = 0, replicas_left_drain_ = 0;
};

/// A row as JSON (with the last step's intervals when asked: the child's
/// answer to its parent) and back (flowtrain_output.cpp).
nlohmann::json row_to_json(const FlowTrainRow& r, bool with_intervals);
FlowTrainRow row_from_json(const nlohmann::json& j);

}  // namespace clustertwin::sim::flowtrain::detail
