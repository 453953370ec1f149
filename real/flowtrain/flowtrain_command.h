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
//                pool; encoders take the gradients in the plan's micro-batch
//                order (so that their sums add up alike in every run),
//                recompute their forward and run its backward. Each side all-reduces its gradients;
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

#include "common/status.h"
#include "real/flowtrain/run_args.h"

namespace clustertwin::real::flowtrain {

/// This rank's part of a FlowTrain run; rank 0 prints the table (or JSON).
/// InvalidArgument (exit 2) naming the field of FlowTrainRunArgs and its
/// value ("global_batch 0: must be >= 1") before any rendezvous.
Status run_flowtrain(const FlowTrainRunArgs& args);

}  // namespace clustertwin::real::flowtrain
