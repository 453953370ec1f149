// The checkpoint side of a run command (checkpointing.h): flags, kill hooks,
// the write across ranks, the resume.

#include "real/core/checkpointing.h"

#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace clustertwin::real {
namespace {

// "A:B[:C]" split at ':'.
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

bool parse_count(const std::string& text, int64_t* value) {
  const char* end = text.data() + text.size();
  auto [at, ec] = std::from_chars(text.data(), end, *value);
  return !text.empty() && ec == std::errc() && at == end && *value >= 0;
}

bool first_attempt() {
  const char* attempt = std::getenv("CT_LAUNCH_ATTEMPT");
  return attempt == nullptr || std::string(attempt) == "0" || std::string(attempt).empty();
}

}  // namespace

Status check_checkpoint_flags(const CheckpointFlags& f) {
  if (f.every < 0) return Status::invalid_argument("checkpoint_every " + std::to_string(f.every) + ": must be >= 0");
  if (f.every > 0 && f.dir.empty()) {
    return Status::invalid_argument("checkpoint_every " + std::to_string(f.every) +
                                    ": needs checkpoint_dir, where the checkpoints go");
  }
  if (f.resume && f.dir.empty()) return Status::invalid_argument("resume: needs checkpoint_dir");
  if (!f.dir.empty() && f.every == 0 && !f.resume) {
    return Status::invalid_argument("checkpoint_dir " + f.dir +
                                    ": needs checkpoint_every >= 1 (write checkpoints) or resume (read one)");
  }
  return Status::ok();
}

StatusOr<KillHooks> read_kill_hooks(int rank) {
  KillHooks hooks;
  if (!first_attempt()) return hooks;
  if (const char* at_step = std::getenv("CT_TEST_KILL_RANK_AT_STEP")) {
    const std::vector<std::string> p = split_colons(at_step);
    int64_t r = 0, step = 0;
    if (p.size() != 2 || !parse_count(p[0], &r) || !parse_count(p[1], &step)) {
      return Status::invalid_argument(std::string("CT_TEST_KILL_RANK_AT_STEP '") + at_step + "': want RANK:STEP");
    }
    if (r == rank) hooks.step = step;
  }
  if (const char* in_ckpt = std::getenv("CT_TEST_KILL_RANK_IN_CHECKPOINT")) {
    const std::vector<std::string> p = split_colons(in_ckpt);
    int64_t r = 0, step = 0;
    if (p.size() != 3 || !parse_count(p[0], &r) || !parse_count(p[1], &step) ||
        (p[2] != "before-rename" && p[2] != "before-manifest")) {
      return Status::invalid_argument(std::string("CT_TEST_KILL_RANK_IN_CHECKPOINT '") + in_ckpt +
                                      "': want RANK:STEP:PHASE, PHASE before-rename or before-manifest");
    }
    if (r == rank) hooks.checkpoint = CheckpointKillHook{step, p[2]};
  }
  return hooks;
}

void kill_at_step(const KillHooks& hooks, int64_t step) {
  if (hooks.step == step) std::raise(SIGKILL);
}

Status write_checkpoint(const std::string& dir, Communicator& comm, Group& group, const CheckpointIdentity& identity,
                        int64_t step, const std::string& bytes, const CheckpointKillHook& hook) {
  CT_RETURN_IF_ERROR(write_checkpoint_rank_file(dir, step, comm.rank(), bytes, hook));
  // Every rank's size and CRC at rank 0; no rank passes before all files are in place.
  const int64_t mine_values[2] = {static_cast<int64_t>(bytes.size()), checkpoint_crc32(bytes)};
  at::Tensor mine = at::tensor(at::ArrayRef<int64_t>(mine_values, 2), at::kLong);
  at::Tensor all = at::zeros({2 * identity.world_size}, at::kLong);
  CT_RETURN_IF_ERROR(comm.all_gather(group, all, mine));
  if (comm.rank() != 0) return Status::ok();
  std::vector<CheckpointRankFile> files(identity.world_size);
  for (int r = 0; r < identity.world_size; ++r) {
    files[r].bytes = all[2 * r].item<int64_t>();
    files[r].crc32 = static_cast<uint32_t>(all[2 * r + 1].item<int64_t>());
  }
  return write_checkpoint_manifest(dir, step, identity, files, hook);
}

StatusOr<std::optional<ResumeState>> read_resume_state(const std::string& dir, const CheckpointIdentity& identity,
                                                       int rank) {
  auto point = find_resume_point(dir, identity, rank);
  if (!point.is_ok() && point.status().code() == Status::Code::kNotFound && !first_attempt()) {
    // A launch's restart before the first checkpoint was complete: the run starts over.
    if (rank == 0) std::fprintf(stderr, "# resume: %s; starting from step 0\n", point.status().message().c_str());
    return std::optional<ResumeState>();
  }
  if (!point.is_ok()) return point.status();
  auto dump = decode_state_dump(point->rank_bytes, point->rank_path);
  if (!dump.is_ok()) return dump.status();
  if (dump->rank != rank || dump->world != identity.world_size) {
    return Status::invalid_argument(point->rank_path + ": rank " + std::to_string(dump->rank) + " of " +
                                    std::to_string(dump->world) + ", this is rank " + std::to_string(rank) + " of " +
                                    std::to_string(identity.world_size));
  }
  ResumeState state;
  state.point = std::move(*point);
  state.point.rank_bytes.clear();  // decoded: the dump holds it
  state.dump = std::move(*dump);
  return std::optional<ResumeState>(std::move(state));
}

void announce_resume(const ResumePoint& point, int rank) {
  if (rank != 0) return;
  if (!point.fallback_note.empty()) std::fprintf(stderr, "# resume: %s\n", point.fallback_note.c_str());
  std::fprintf(stderr, "# resume: from %s (step %lld)\n", point.step_dir.c_str(), static_cast<long long>(point.step));
}

StatusOr<int64_t> checkpoint_next_step(const ResumeState& state) {
  const std::string& path = state.point.rank_path;
  for (const DumpTensor& t : state.dump.tensors) {
    if (t.name != "data.next_step") continue;
    if (t.type != DumpTensor::Type::kInt64 || t.bytes.size() != sizeof(int64_t))
      return Status::invalid_argument(path + ": data.next_step: not one int64");
    int64_t n = 0;
    std::memcpy(&n, t.bytes.data(), sizeof n);
    if (n != state.point.step) {
      return Status::invalid_argument(path + ": data.next_step " + std::to_string(n) + ", its manifest says step " +
                                      std::to_string(state.point.step));
    }
    return n;
  }
  return Status::invalid_argument(path + ": data.next_step: missing");
}

}  // namespace clustertwin::real
