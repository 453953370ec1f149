#pragma once

// The checkpoint side of `run flexmarl` (flexmarl_command.cpp): what a
// checkpoint of it records and must match, the writer every rank calls at a
// step boundary, and reading where a resumed run starts; the files and their
// checks are real/core/checkpointing.h's. Rank 0's file holds the
// controller's state (Controller::state_dump: published weights, last
// gradients, host copies of the trainer state, the schedule's carry) and the
// report's steps so far ("results.*"); a worker's its loaded policies and
// resident trainers (Worker::state_dump); every file the next step
// ("data.next_step"). Nothing else carries across a step: a rollout's
// tokens are drawn from generators seeded by the run's seed and the
// sample's key, SIS's draws from the sample's id, and no job is in flight
// (the controller waits for the last replies before it asks for a
// checkpoint).

#include <cstdint>
#include <optional>

#include "common/status.h"
#include "real/core/checkpointing.h"
#include "real/flexmarl/run_args.h"
#include "real/flexmarl/worker.h"

namespace clustertwin::real::flexmarl {

/// --checkpoint-dir, --checkpoint-every and --resume as a.
CheckpointFlags checkpoint_flags(const FlexMarlArgs& a);

/// What a checkpoint of this run records and a resume must match: the
/// framework and every option that changes the arithmetic or the schedule
/// (not the step count, the transport, the timeout or the trace).
CheckpointIdentity checkpoint_identity(const FlexMarlArgs& a, int world, int trainers);

/// This rank's writer: `state` with "data.next_step" as the rank file of the
/// checkpoint after `steps_done` steps, then rank 0's manifest. Collective
/// over `control`.
CheckpointWriter checkpoint_writer(const FlexMarlArgs& a, Communicator& comm, Group& control, int trainers,
                                   const CheckpointKillHook& hook);

/// With --resume, the state to resume from, read and checked before the
/// rendezvous (a bad checkpoint is one line and exit 2 on every rank):
/// InvalidArgument as read_resume_state, or "steps N: fewer than the K
/// steps FILE has trained". nullopt without --resume, or on a launch's
/// restart before the first checkpoint.
StatusOr<std::optional<ResumeState>> read_resume(const FlexMarlArgs& a, int rank, int world, int trainers);

}  // namespace clustertwin::real::flexmarl
