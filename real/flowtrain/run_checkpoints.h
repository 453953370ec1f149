#pragma once

// The checkpoint side of `run flowtrain` (flowtrain_command.cpp): what a
// checkpoint of it records and must match, writing one at a step boundary
// and resuming from one; the files and their checks are
// real/core/checkpointing.h's. A rank file holds the worker's state
// (Worker::state_dump: its side's parameters and SGD's momentum), the next
// step ("data.next_step") and the mean loss of every step so far
// ("results.losses", rank 0's report). No torch here.

#include <cstdint>
#include <optional>
#include <vector>

#include "common/status.h"
#include "real/core/checkpointing.h"
#include "real/flowtrain/report.h"
#include "real/flowtrain/run_args.h"

namespace clustertwin::real::flowtrain {

class Worker;

/// --checkpoint-dir, --checkpoint-every and --resume as a.
CheckpointFlags checkpoint_flags(const FlowTrainRunArgs& a);

/// What a checkpoint of this run records and a resume must match: the mode
/// and every option that changes the arithmetic (not the step count, nor the
/// pool's slots or transfer, which change only when work happens).
CheckpointIdentity checkpoint_identity(const FlowTrainRunArgs& a, int world);

/// The checkpoint after `steps_done` steps: every rank's file, then rank 0's
/// manifest. `losses`: rank 0's report so far. Collective over `world`; the
/// pools must be empty (they are between steps).
Status write_checkpoint(const FlowTrainRunArgs& a, Communicator& comm, Group& world, const Worker& worker,
                        int64_t steps_done, const std::vector<double>& losses, const CheckpointKillHook& hook);

/// With --resume, the state to resume from, read and checked before the
/// rendezvous (a bad checkpoint is one line and exit 2 on every rank):
/// InvalidArgument as read_resume_state, or "steps N: fewer than the K
/// steps FILE has trained". nullopt without --resume, or on a launch's
/// restart before the first checkpoint.
StatusOr<std::optional<ResumeState>> read_resume(const FlowTrainRunArgs& a, int rank, int world);

/// Puts `state` into `worker` and its losses into `report`; returns the
/// next step. Rank 0 says which checkpoint on stderr.
StatusOr<int64_t> resume_worker(const ResumeState& state, Worker& worker, RunReport& report);

}  // namespace clustertwin::real::flowtrain
