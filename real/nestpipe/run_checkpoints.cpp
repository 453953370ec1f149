// `run nestpipe`'s checkpoints: flags, the write across ranks, the resume.

#include "real/nestpipe/run_checkpoints.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>

#include "common/json.h"
#include "common/state_dump.h"
#include "real/nestpipe/trainer_state.h"

namespace clustertwin::real::nestpipe {
namespace {

// "A:B[:C]" split at ':' into whole numbers (the last part may be a word).
std::vector<std::string> split_colons(const std::string& text) {
  std::vector<std::string> parts(1);
  for (char c : text) {
    if (c == ':') {
      parts.emplace_back();
    } else {
      parts.back() += c;
    }
  }
  return parts;
}

bool parse_int(const std::string& text, int64_t* value) {
  const char* end = text.data() + text.size();
  auto [at, ec] = std::from_chars(text.data(), end, *value);
  return !text.empty() && ec == std::errc() && at == end && *value >= 0;
}

bool first_attempt() {
  const char* attempt = std::getenv("CT_LAUNCH_ATTEMPT");
  return attempt == nullptr || std::string(attempt) == "0" || std::string(attempt).empty();
}

}  // namespace

StatusOr<KillHooks> read_kill_hooks(int rank) {
  KillHooks hooks;
  if (!first_attempt()) return hooks;
  if (const char* at_step = std::getenv("CT_TEST_KILL_RANK_AT_STEP")) {
    const std::vector<std::string> p = split_colons(at_step);
    int64_t r = 0, step = 0;
    if (p.size() != 2 || !parse_int(p[0], &r) || !parse_int(p[1], &step)) {
      return Status::invalid_argument(std::string("CT_TEST_KILL_RANK_AT_STEP '") + at_step + "': want RANK:STEP");
    }
    if (r == rank) hooks.batch = step;
  }
  if (const char* in_ckpt = std::getenv("CT_TEST_KILL_RANK_IN_CHECKPOINT")) {
    const std::vector<std::string> p = split_colons(in_ckpt);
    int64_t r = 0, step = 0;
    if (p.size() != 3 || !parse_int(p[0], &r) || !parse_int(p[1], &step) ||
        (p[2] != "before-rename" && p[2] != "before-manifest")) {
      return Status::invalid_argument(std::string("CT_TEST_KILL_RANK_IN_CHECKPOINT '") + in_ckpt +
                                      "': want RANK:STEP:PHASE, PHASE before-rename or before-manifest");
    }
    if (r == rank) hooks.checkpoint = CheckpointKillHook{step, p[2]};
  }
  return hooks;
}

Status check_checkpoint_args(const NestPipeArgs& a) {
  if (a.checkpoint_every < 0) {
    return Status::invalid_argument("checkpoint_every " + std::to_string(a.checkpoint_every) + ": must be >= 0");
  }
  if (a.checkpoint_every > 0 && a.checkpoint_dir.empty()) {
    return Status::invalid_argument("checkpoint_every " + std::to_string(a.checkpoint_every) +
                                    ": needs checkpoint_dir, where the checkpoints go");
  }
  if (a.resume && a.checkpoint_dir.empty()) return Status::invalid_argument("resume: needs checkpoint_dir");
  if (!a.checkpoint_dir.empty() && a.checkpoint_every == 0 && !a.resume) {
    return Status::invalid_argument("checkpoint_dir " + a.checkpoint_dir +
                                    ": needs checkpoint_every >= 1 (write checkpoints) or resume (read one)");
  }
  if (!a.trace.empty() && (a.checkpoint_every > 0 || a.resume)) {
    return Status::invalid_argument(
        "trace " + a.trace +
        ": not with checkpoint_every or resume (the pipeline drains at every checkpoint, so "
        "the trace would not be one pipeline's); trace a run without them");
  }
  return Status::ok();
}

CheckpointIdentity checkpoint_identity(const NestPipeArgs& a, int world) {
  CheckpointIdentity id;
  id.world_size = world;
  id.variant = a.variant;
  id.config = {{"model", a.model},
               {"micro_batches", std::to_string(a.micro_batches)},
               {"batch", std::to_string(a.batch)},
               {"optimizer", a.optimizer},
               {"dense_optimizer", a.dense_optimizer},
               {"lr", json_number(a.lr)},
               {"dense_lr", json_number(a.dense_lr)},
               {"zipf", json_number(a.zipf)},
               {"overlap", json_number(a.overlap)},
               {"vocab", std::to_string(a.vocab)},
               {"criteo", a.criteo},
               {"no_patch", a.no_patch ? "true" : "false"},
               {"seed", std::to_string(a.seed)},
               {"threads", std::to_string(a.threads)},
               {"store", a.store}};
  return id;
}

Status write_checkpoint(const NestPipeArgs& a, real::Communicator& comm, real::Group& world, const Trainer& trainer,
                        int64_t step, const CheckpointKillHook& hook) {
  const std::string bytes = encode_state_dump(trainer.checkpoint_state());
  CT_RETURN_IF_ERROR(write_checkpoint_rank_file(a.checkpoint_dir, step, comm.rank(), bytes, hook));
  // Every rank's size and CRC at rank 0; no rank passes before all files are in place.
  at::Tensor mine = long_tensor({static_cast<int64_t>(bytes.size()), checkpoint_crc32(bytes)});
  at::Tensor all = at::zeros({2 * comm.world_size()}, at::kLong);
  CT_RETURN_IF_ERROR(comm.all_gather(world, all, mine));
  if (comm.rank() != 0) return Status::ok();
  std::vector<CheckpointRankFile> files(comm.world_size());
  for (int r = 0; r < comm.world_size(); ++r) {
    files[r].bytes = all[2 * r].item<int64_t>();
    files[r].crc32 = static_cast<uint32_t>(all[2 * r + 1].item<int64_t>());
  }
  return write_checkpoint_manifest(a.checkpoint_dir, step, checkpoint_identity(a, comm.world_size()), files, hook);
}

StatusOr<int64_t> resume_trainer(const NestPipeArgs& a, int rank, int world, Trainer& trainer) {
  auto point = find_resume_point(a.checkpoint_dir, checkpoint_identity(a, world), rank);
  if (!point.is_ok() && point.status().code() == Status::Code::kNotFound && !first_attempt()) {
    // A launch's restart before the first checkpoint was complete: the run starts over.
    if (rank == 0) std::fprintf(stderr, "# resume: %s; starting from step 0\n", point.status().message().c_str());
    return 0;
  }
  if (!point.is_ok()) return point.status();
  auto dump = decode_state_dump(point->rank_bytes, point->rank_path);
  if (!dump.is_ok()) return dump.status();
  CT_RETURN_IF_ERROR(trainer.restore_checkpoint(*dump, point->rank_path));
  if (rank == 0) {
    if (!point->fallback_note.empty()) std::fprintf(stderr, "# resume: %s\n", point->fallback_note.c_str());
    std::fprintf(stderr, "# resume: from %s (step %lld)\n", point->step_dir.c_str(),
                 static_cast<long long>(point->step));
  }
  return point->step;
}

}  // namespace clustertwin::real::nestpipe
