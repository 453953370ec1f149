#pragma once

// Checkpoints of the real executors (`run nestpipe|flowtrain|flexmarl
// --checkpoint-dir DIR --checkpoint-every N`) and where `--resume` restarts.
// No torch here: the rank files' contents are each system's training state,
// encoded as a StateDump (common/state_dump.h); this file only names, writes,
// checks and prunes the files, the same way for every system.
//
//   DIR/step-000006/rank-0.bin ... rank-(W-1).bin   each rank's state (common/state_dump.h)
//   DIR/step-000006/manifest.json                   rank 0's, written last
//
// Every file is written to a temporary name, synced and renamed
// (AtomicOutputFile), and the manifest only after every rank's file is in
// place, so a checkpoint is complete exactly when its manifest exists: a
// rank killed half-way leaves a folder without one, and the previous
// complete checkpoint stays. The manifest (one JSON object):
//
//   {"format": "clustertwin-nestpipe-checkpoint", "version": 1, "step": 6,
//    "world_size": 2, "variant": "dbp", "config": {"model": "dlrm-small", ...},
//   (the system names the format; its kind of run is a "variant", a "mode"
//   or a "framework")
//    "config_fingerprint": "0x...", "ranks": [{"file": "rank-0.bin",
//    "bytes": 123, "crc32": "0x..."}, ...]}
//
// config holds every option that changes the arithmetic (not the step count:
// a resumed run may train further than the one that wrote the checkpoint).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace clustertwin::real {

/// What a checkpoint must match to be resumed by a run.
struct CheckpointIdentity {
  std::string system;  // "nestpipe": the manifest's format is "clustertwin-nestpipe-checkpoint"
  int world_size = 1;
  std::string kind_field;  // the manifest's name for the kind of run: "variant", "mode" or "framework"
  std::string kind;        // its value: "dbp", "flowtrain", "marti", ...
  std::vector<std::pair<std::string, std::string>> config;  // field, value as text
};

/// One rank file as the manifest lists it.
struct CheckpointRankFile {
  int64_t bytes = 0;
  uint32_t crc32 = 0;
};

/// A test hook (CT_TEST_KILL_RANK_IN_CHECKPOINT=rank:step:phase): the rank
/// kills itself with SIGKILL at `phase` of the checkpoint of `step`.
/// Phases: "before-rename" (its rank file written to the temporary name,
/// not renamed) and "before-manifest" (rank 0: every rank file in place).
struct CheckpointKillHook {
  int64_t step = -1;  // -1: never
  std::string phase;
};

/// DIR/step-NNNNNN.
std::string checkpoint_step_dir(const std::string& dir, int64_t step);
/// The zlib CRC-32 of `bytes`.
uint32_t checkpoint_crc32(const std::string& bytes);

/// Writes this rank's file of the checkpoint of `step`, atomically; creates
/// the folders. IoError naming the path when the system refuses.
Status write_checkpoint_rank_file(const std::string& dir, int64_t step, int rank, const std::string& bytes,
                                  const CheckpointKillHook& hook);

/// Rank 0, once every rank's file is in place: writes the manifest, which
/// completes the checkpoint, then removes every checkpoint older than the
/// newest `keep` complete ones.
Status write_checkpoint_manifest(const std::string& dir, int64_t step, const CheckpointIdentity& identity,
                                 const std::vector<CheckpointRankFile>& ranks, const CheckpointKillHook& hook,
                                 int keep = 2);

/// Where a run resumes.
struct ResumePoint {
  int64_t step = 0;
  std::string step_dir;
  std::string fallback_note;  // non-empty when newer checkpoints were incomplete: which, and the one used
  std::string rank_bytes;     // this rank's file
  std::string rank_path;
};

/// The newest complete checkpoint in `dir`, checked against `identity`
/// (system, world size, kind, every config field) and every rank file against the
/// manifest (present, size, CRC-32), so that every rank refuses the same
/// checkpoint. InvalidArgument naming the file, the field and the value
/// (e.g. "DIR/step-000006/manifest.json: world_size 4, this run has 2");
/// NotFound when `dir` holds no complete checkpoint.
StatusOr<ResumePoint> find_resume_point(const std::string& dir, const CheckpointIdentity& identity, int rank);

/// If `hook` names `phase` and `step`, SIGKILL this process.
void checkpoint_kill_point(const CheckpointKillHook& hook, int64_t step, const std::string& phase);

}  // namespace clustertwin::real
