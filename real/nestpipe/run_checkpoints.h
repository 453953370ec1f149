#pragma once

// The checkpoint side of `run nestpipe` (nestpipe_command.cpp): its flags,
// what a checkpoint of it records, writing one across ranks and resuming a
// trainer; the rest is real/core/checkpointing.h's. Includes the trainer
// (torch): for the command's source files only.

#include <cstdint>

#include "common/status.h"
#include "real/core/checkpointing.h"
#include "real/core/communicator.h"
#include "real/nestpipe/run_args.h"
#include "real/nestpipe/trainer.h"

namespace clustertwin::real::nestpipe {

/// The checkpoint flags together (InvalidArgument naming the field).
Status check_checkpoint_args(const NestPipeArgs& a);

/// What a checkpoint of this run records and a resume must match.
CheckpointIdentity checkpoint_identity(const NestPipeArgs& a, int world);

/// Every rank writes its file; their sizes and CRCs are gathered; rank 0
/// writes the manifest, which completes the checkpoint of `step`.
Status write_checkpoint(const NestPipeArgs& a, real::Communicator& comm, real::Group& world, const Trainer& trainer,
                        int64_t step, const CheckpointKillHook& hook);

/// Loads the newest complete checkpoint of a.checkpoint_dir into `trainer`
/// (before the rendezvous: a bad checkpoint is one line and exit 2 on every
/// rank); returns its step. Rank 0 says on stderr which one it resumed. On a
/// launch's restart (CT_LAUNCH_ATTEMPT > 0) a folder with no complete checkpoint
/// yet means step 0.
StatusOr<int64_t> resume_trainer(const NestPipeArgs& a, int rank, int world, Trainer& trainer);

}  // namespace clustertwin::real::nestpipe
