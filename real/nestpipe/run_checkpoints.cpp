// `run nestpipe`'s checkpoints: flags, the write across ranks, the resume.

#include "real/nestpipe/run_checkpoints.h"

#include "common/json.h"
#include "common/state_dump.h"
#include "real/nestpipe/trainer_state.h"

namespace clustertwin::real::nestpipe {
Status check_checkpoint_args(const NestPipeArgs& a) {
  CT_RETURN_IF_ERROR(check_checkpoint_flags({a.checkpoint_dir, a.checkpoint_every, a.resume}));
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
  id.system = "nestpipe";
  id.world_size = world;
  id.kind_field = "variant";
  id.kind = a.variant;
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
  return real::write_checkpoint(a.checkpoint_dir, comm, world, checkpoint_identity(a, comm.world_size()), step,
                                encode_state_dump(trainer.checkpoint_state()), hook);
}

StatusOr<int64_t> resume_trainer(const NestPipeArgs& a, int rank, int world, Trainer& trainer) {
  auto state = read_resume_state(a.checkpoint_dir, checkpoint_identity(a, world), rank);
  if (!state.is_ok()) return state.status();
  if (!state->has_value()) return 0;
  const ResumeState& s = **state;
  CT_RETURN_IF_ERROR(trainer.restore_checkpoint(s.dump, s.point.rank_path));
  announce_resume(s.point, rank);
  return s.point.step;
}

}  // namespace clustertwin::real::nestpipe
