#pragma once

// The checkpoint side of a `run` command, the same for every executor: the
// flags (--checkpoint-dir, --checkpoint-every, --resume), the test hooks that
// kill a rank on purpose, one checkpoint written across the ranks, and the
// state a resumed rank starts from. What goes into a rank's file is the
// executor's (a StateDump of its training state); where and how it is written
// and checked is checkpoint.h's.

#include <cstdint>
#include <optional>
#include <string>

#include "common/state_dump.h"
#include "common/status.h"
#include "real/core/checkpoint.h"
#include "real/core/communicator.h"

namespace clustertwin::real {

/// The flags as every run command's arguments hold them.
struct CheckpointFlags {
  std::string dir;  // checkpoint_dir: DIR/step-NNNNNN (checkpoint.h); empty: none
  int every = 0;    // checkpoint_every: steps between checkpoints; 0: none
  bool resume = false;
};

/// The flags together; InvalidArgument naming the field (checkpoint_every,
/// resume, checkpoint_dir) and its value.
Status check_checkpoint_flags(const CheckpointFlags& f);

/// Whether a checkpoint follows step `done` (the number of steps trained).
inline bool checkpoint_due(const CheckpointFlags& f, int64_t done) {
  return f.every > 0 && done % f.every == 0;
}

/// Kills on purpose, for the restart tests; read from the environment only on
/// a launch's first attempt (CT_LAUNCH_ATTEMPT unset or 0), so that the
/// restarted ranks run through:
///   CT_TEST_KILL_RANK_AT_STEP=RANK:STEP         SIGKILL in step STEP (0-based)
///   CT_TEST_KILL_RANK_IN_CHECKPOINT=RANK:STEP:PHASE  see CheckpointKillHook
struct KillHooks {
  int64_t step = -1;  // -1: never
  CheckpointKillHook checkpoint;
};

/// This rank's hooks; InvalidArgument naming the variable and its value when malformed.
StatusOr<KillHooks> read_kill_hooks(int rank);

/// SIGKILLs this process when `hooks` names step `step`.
void kill_at_step(const KillHooks& hooks, int64_t step);

/// Every rank of `group` writes its file (`bytes`) of the checkpoint of
/// `step`; their sizes and CRCs are gathered; rank 0 of the group writes the
/// manifest, which completes the checkpoint. Collective over `group`.
Status write_checkpoint(const std::string& dir, Communicator& comm, Group& group, const CheckpointIdentity& identity,
                        int64_t step, const std::string& bytes, const CheckpointKillHook& hook);

/// The state a rank resumes from.
struct ResumeState {
  ResumePoint point;
  StateDump dump;  // the rank file, decoded
};

/// The step a checkpoint's rank file says the run goes on from (its int64
/// tensor "data.next_step"), checked against the manifest's step.
/// InvalidArgument naming the rank file when it is missing or differs.
StatusOr<int64_t> checkpoint_next_step(const ResumeState& state);

/// The newest complete checkpoint of `dir` for this run (checkpoint.h's
/// find_resume_point), with this rank's file decoded. nullopt on a launch's
/// restart (CT_LAUNCH_ATTEMPT > 0) when the folder has no complete
/// checkpoint yet: the run starts over (rank 0 says so on stderr).
StatusOr<std::optional<ResumeState>> read_resume_state(const std::string& dir, const CheckpointIdentity& identity,
                                                       int rank);

/// Rank 0's lines on stderr once the state is restored: which checkpoint,
/// and which newer ones were incomplete.
void announce_resume(const ResumePoint& point, int rank);

}  // namespace clustertwin::real
