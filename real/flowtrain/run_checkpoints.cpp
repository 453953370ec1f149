// `run flowtrain`'s checkpoints (run_checkpoints.h).

#include "real/flowtrain/run_checkpoints.h"

#include "common/check.h"
#include "common/json.h"
#include "real/core/state_tensors.h"
#include "real/flowtrain/flowtrain_args.h"
#include "real/flowtrain/worker.h"

namespace clustertwin::real::flowtrain {

CheckpointFlags checkpoint_flags(const FlowTrainRunArgs& a) {
  return {a.checkpoint_dir, a.checkpoint_every, a.resume};
}

CheckpointIdentity checkpoint_identity(const FlowTrainRunArgs& a, int world) {
  CheckpointIdentity id;
  id.system = "flowtrain";
  id.world_size = world;
  id.kind_field = "mode";
  id.kind = a.mode;
  id.config = {{"model", a.model},
               {"width", std::to_string(a.width)},
               {"dtype", a.dtype},
               {"global_batch", std::to_string(a.global_batch)},
               {"encoder_workers", std::to_string(a.mode == "monolithic" ? 0 : encoder_count(a, world))},
               {"micro_batch_tokens", std::to_string(a.micro_batch_tokens)},
               {"lr", json_number(a.lr)},
               {"seed", std::to_string(a.seed)},
               {"threads", std::to_string(a.threads)}};
  return id;
}

Status write_checkpoint(const FlowTrainRunArgs& a, Communicator& comm, Group& world, const Worker& worker,
                        int64_t steps_done, const std::vector<double>& losses, const CheckpointKillHook& hook) {
  CT_CHECK(worker.pool_slots_ready() == 0)
      << worker.pool_slots_ready() << " pool slots in flight after step " << steps_done;
  StateDump state = worker.state_dump(steps_done);
  state.tensors.push_back(dump_tensor("data.next_step", int64_scalar(steps_done)));
  state.tensors.push_back(dump_tensor("results.losses", at::tensor(losses, at::kDouble)));
  return real::write_checkpoint(a.checkpoint_dir, comm, world, checkpoint_identity(a, comm.world_size()), steps_done,
                                encode_state_dump(state), hook);
}

StatusOr<std::optional<ResumeState>> read_resume(const FlowTrainRunArgs& a, int rank, int world) {
  if (!a.resume) return std::optional<ResumeState>();
  auto state = read_resume_state(a.checkpoint_dir, checkpoint_identity(a, world), rank);
  if (!state.is_ok() || !state->has_value()) return state;
  auto next = checkpoint_next_step(**state);
  if (!next.is_ok()) return next.status();
  if (*next > a.steps) {
    return Status::invalid_argument("steps " + std::to_string(a.steps) + ": fewer than the " + std::to_string(*next) +
                                    " steps " + (*state)->point.rank_path + " has trained");
  }
  return state;
}

StatusOr<int64_t> resume_worker(const ResumeState& state, Worker& worker, RunReport& report) {
  const std::string& file = state.point.rank_path;
  auto next = checkpoint_next_step(state);
  if (!next.is_ok()) return next.status();
  CT_RETURN_IF_ERROR(worker.restore_state(state.dump, file, *next));
  auto losses = restore_tensor(state.dump, file, "results.losses", at::kDouble, {*next});
  if (!losses.is_ok()) return losses.status();
  const double* l = losses->data_ptr<double>();
  report.losses.assign(l, l + *next);
  announce_resume(state.point, worker.rank());
  return *next;
}

}  // namespace clustertwin::real::flowtrain
