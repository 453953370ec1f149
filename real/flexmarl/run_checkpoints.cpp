// `run flexmarl`'s checkpoints (run_checkpoints.h).

#include "real/flexmarl/run_checkpoints.h"

#include "common/json.h"
#include "real/core/state_tensors.h"

namespace clustertwin::real::flexmarl {

CheckpointFlags checkpoint_flags(const FlexMarlArgs& a) {
  return {a.checkpoint_dir, a.checkpoint_every, a.resume};
}

CheckpointIdentity checkpoint_identity(const FlexMarlArgs& a, int world, int trainers) {
  CheckpointIdentity id;
  id.system = "flexmarl";
  id.world_size = world;
  id.kind_field = "framework";
  id.kind = a.framework;
  id.config = {{"task", a.task},
               {"queries", std::to_string(a.queries)},
               {"group", std::to_string(a.group)},
               {"micro_batch", std::to_string(a.micro_batch)},
               {"rollout_batch", std::to_string(a.rollout_batch)},
               {"trainers", std::to_string(trainers)},
               {"load_gap", json_number(a.load_gap)},
               {"loss", a.loss},
               {"sis", a.sis ? "true" : "false"},
               {"lr", json_number(a.lr)},
               {"seed", std::to_string(a.seed)},
               {"threads", std::to_string(a.threads)}};
  return id;
}

CheckpointWriter checkpoint_writer(const FlexMarlArgs& a, Communicator& comm, Group& control, int trainers,
                                   const CheckpointKillHook& hook) {
  const CheckpointIdentity identity = checkpoint_identity(a, comm.world_size(), trainers);
  return [dir = a.checkpoint_dir, &comm, &control, identity, hook](int64_t steps_done, const StateDump& state) {
    StateDump file = state;
    file.tensors.push_back(dump_tensor("data.next_step", int64_scalar(steps_done)));
    return write_checkpoint(dir, comm, control, identity, steps_done, encode_state_dump(file), hook);
  };
}

StatusOr<std::optional<ResumeState>> read_resume(const FlexMarlArgs& a, int rank, int world, int trainers) {
  if (!a.resume) return std::optional<ResumeState>();
  auto state = read_resume_state(a.checkpoint_dir, checkpoint_identity(a, world, trainers), rank);
  if (!state.is_ok() || !state->has_value()) return state;
  auto next = checkpoint_next_step(**state);
  if (!next.is_ok()) return next.status();
  if (*next > a.steps) {
    return Status::invalid_argument("steps " + std::to_string(a.steps) + ": fewer than the " + std::to_string(*next) +
                                    " steps " + (*state)->point.rank_path + " has trained");
  }
  return state;
}

}  // namespace clustertwin::real::flexmarl
