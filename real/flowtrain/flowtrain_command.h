#pragma once

// `clustertwin run flowtrain`: FlowTrain's real executor, one rank per
// process, training the tiny VLM (real/flowtrain/tiny_vlm.h) on the synthetic
// multimodal dataset in one of three modes. No torch in this header:
// cli/real_command.cpp includes it.
//
//   monolithic   every rank runs the encoder and the backbone for its equal
//                share of the step's samples (sample i on rank i mod N); one
//                all-reduce of every gradient
//   disagg-sync  ranks [0, E) are encoder workers, [E, N) backbone workers;
//                the step's samples packed by tokens into micro-batches (a
//                multiple of the backbone workers), dealt round by round;
//                each round lock-step: encoders send embeddings (c10d
//                send/recv), backbones train and send the gradients back,
//                encoders finish their backward
//   flowtrain    the same split, decoupled through the memory pool
//                (real/core/shared_pool.h, POSIX shared memory; one pool
//                per encoder worker, opened by every backbone worker): micro-
//                batches packed by backbone cost, image-heavy first;
//                encoders put each sample's embeddings under (step, sample)
//                as fast as the pool's slots allow (back-pressure) and keep
//                no graph; backbones take their micro-batches' samples,
//                train, and put the embeddings' gradients into a second
//                pool; encoders take the gradients, recompute their forward
//                and run its backward. Each side all-reduces its gradients;
//                the encoder steps at the step boundary, so a sample's
//                forward and backward see the same weights.
//
// All modes train on the same samples with the same summed loss over the
// global batch and SGD with momentum, so their parameters agree up to
// rounding (tests/real/flowtrain_run_test.cpp). Assignment is static (by
// rank) where the twin's flowtrain pulls work dynamically.
//
// Tensors live on the rank's device (--device; real/core/device.h): the
// model, its optimizer state, activations, packed micro-batches and
// gradients. On a GPU the pool moves embeddings device to device through
// CUDA IPC where the build and every rank allow it, else through pinned
// host memory (pool_transfer.h); the run's first lines say which.

#include <cstdint>
#include <string>

#include "common/status.h"

namespace clustertwin::real::flowtrain {

struct FlowTrainRunArgs {
  std::string mode = "flowtrain";  // monolithic | disagg-sync | flowtrain
  int steps = 3;
  int global_batch = 16;             // samples per step
  int encoder_workers = 0;           // split modes: ranks [0, E); 0: a quarter of the ranks, at least 1
  int64_t micro_batch_tokens = 256;  // backbone tokens per packed micro-batch (the model's context)
  int pool_slots = 16;               // flowtrain: embedding slots (the run-ahead bound)
  double lr = 0.05;                  // SGD with momentum 0.9
  int width = 1;                     // the tiny VLM's widths (d_vision, d_model and their MLPs) times this
  uint64_t seed = 0;
  std::string trace;
  std::string dump_params;  // DIR: the final parameters, DIR/rank-0.bin (float64)
  bool json = false;
  int threads = 1;
  double timeout_s = 120;
  std::string device = "auto";         // cpu | cuda | auto (cuda when this build has CUDA and a GPU is visible)
  std::string backend = "auto";        // auto | gloo | nccl (communicator.h)
  std::string pool_transfer = "auto";  // flowtrain mode: auto (cuda-ipc on a GPU where it works) | host | cuda-ipc
};

/// This rank's part of a FlowTrain run; rank 0 prints the table (or JSON).
/// InvalidArgument (exit 2) for bad flags before any rendezvous.
Status run_flowtrain(const FlowTrainRunArgs& args);

}  // namespace clustertwin::real::flowtrain
