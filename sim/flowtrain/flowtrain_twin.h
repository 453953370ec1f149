#pragma once

// FlowTrain's twin: the three training modes of a vision-language model at
// cluster scale, as a SimGrid model on a cluster profile.
//
//   monolithic   (Megatron-style) one uniform TP x PP x DP layout for both
//                modules (allocator.h best_monolithic_layout): each
//                data-parallel replica takes an equal share of the step's
//                samples, packs them by tokens into micro-batches, and runs a
//                1F1B pipeline whose first stage also runs the encoder (at
//                the backbone's TP) for the micro-batch's images.
//   disagg-sync  (DistTrain-style) the allocator's split: encoder workers
//                (their own TP) and backbone workers; the step's samples
//                packed by tokens, micro-batches dealt to the backbone
//                replicas in turn; each replica with its share of the encoder
//                workers is one lock-step pipeline whose first stage is the
//                encoder (forward, then the embeddings' transfer; backward
//                after the gradients' transfer back).
//   flowtrain    the allocator's split, decoupled through the memory pool:
//                the step's samples packed by cost (packing.h) into
//                micro-batches; encoder groups pull the next sample (in
//                micro-batch order) whenever free and their pool room
//                allows, backward first when a gradient is waiting; a
//                backbone replica pulls the first micro-batch whose samples
//                are all in the pool, reads the embeddings from their
//                producers (SimGrid flows), trains it (a pipeline of PP
//                stages in steady state: 1/PP of its time per micro-batch,
//                the drain at the step's end), and writes the gradients
//                back. The encoder's weights change only at the step's
//                boundary, so the next step starts when both sides have
//                stepped.
//
// Every mode ends a side's step, once its last backward is done, with the
// data-parallel gradient reduce-scatters (ZeRO-1; bf16 gradients of a
// TP x PP shard: one SimGrid ring per device position of a replica, over
// that position's device in every replica, so each rail's ring runs on its
// own NICs and all of them cross a shared fabric) and an optimizer step
// priced by memory bandwidth; the
// parameters' all-gather is overlapped with the next step's first forward
// (Megatron's overlap-param-gather) and not simulated. The step ends when
// both sides have stepped. Compute is priced by models/flowtrain/timing.h.
//
// The split modes pack the step's samples into a multiple of the backbone
// replicas' count of micro-batches (each replica gets as many: balanced by
// tokens in disagg-sync, by cost in flowtrain, whose scheduler also hands
// out image-heavy micro-batches first so that the encoder's backward tail at
// the step's end is short).
//
// MFU (../shared/papers/flowtrain.md): the model FLOPs of the step's samples
// (6 x parameters x tokens plus attention, encoder included, no
// recomputation) over step time x devices x peak.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "sim/flowtrain/flowtrain_job.h"
#include "sim/flowtrain/flowtrain_row.h"
#include "sim/flowtrain/flowtrain_setup.h"

namespace clustertwin::sim::flowtrain {

/// Runs one mode (in a child process: SimGrid keeps global state).
StatusOr<FlowTrainRow> run_flowtrain(const FlowTrainSetup& setup, const cluster::ClusterProfile& profile,
                                     FlowTrainMode mode);

/// Each mode at each worker count; speedup against monolithic at the same
/// worker count when it is among the modes. `progress` after each run.
StatusOr<std::vector<FlowTrainRow>> run_flowtrain_modes(
    const FlowTrainSetup& setup, const cluster::ClusterProfile& profile, const std::vector<FlowTrainMode>& modes,
    const std::vector<int>& workers,
    const std::function<void(const FlowTrainRow&, int done, int total)>& progress = {});

std::string flowtrain_rows_json(const std::vector<FlowTrainRow>& rows, const std::string& extra = "");
std::string flowtrain_rows_csv(const std::vector<FlowTrainRow>& rows);
std::string flowtrain_rows_table(const std::vector<FlowTrainRow>& rows);
/// The last step as a Perfetto/Chrome trace (the traces/ schema): one track per device group.
Status write_flowtrain_trace(const FlowTrainRow& row, const std::string& platform, const std::string& path);

}  // namespace clustertwin::sim::flowtrain
