// A worker's state between steps (worker.h): its rollout engines' policies
// and the trainers resident on it, into and out of a StateDump, for
// checkpoints and --dump-state.

#include "real/core/state_tensors.h"
#include "real/flexmarl/host_device.h"
#include "real/flexmarl/worker.h"

namespace clustertwin::real::flexmarl {
namespace {

const std::string& worker_agent_name(int64_t agent) {
  return clustertwin::models::flexmarl::task_agent_name(static_cast<int>(agent));
}

}  // namespace

StateDump Worker::state_dump() const {
  StateDump dump;
  dump.rank = comm_.rank();
  dump.world = comm_.world_size();
  for (const auto& [agent, inf] : inference_) {
    if (!inf.model) continue;
    const std::string& name = worker_agent_name(agent);
    dump.tensors.push_back(dump_tensor(name + ".loaded_version", int64_scalar(inf.version)));
    dump.tensors.push_back(dump_tensor(name + ".loaded_weights", flat_params(inf.model)));
  }
  for (const auto& [agent, trainer] : trainers_)
    dump.tensors.push_back(dump_tensor(worker_agent_name(agent) + ".trainer_state", trainer->pack_state()));
  return dump;
}

Status Worker::restore(const StateDump& dump, const std::string& file) {
  for (int agent = 0; agent < clustertwin::models::flexmarl::kTaskTurns; ++agent) {
    const std::string& name = worker_agent_name(agent);
    if (dump_leading_dim(dump, name + ".loaded_version") > 0) {
      auto model = make_task_model(options_.task, agent, options_.seed, device());
      if (!model.is_ok()) return model.status();
      auto version = restore_tensor(dump, file, name + ".loaded_version", at::kLong, {1});
      if (!version.is_ok()) return version.status();
      auto weights = restore_tensor(dump, file, name + ".loaded_weights", at::kDouble, {flat_params(*model).numel()});
      if (!weights.is_ok()) return weights.status();
      CT_RETURN_IF_ERROR(load_flat_params(*model, *weights));
      inference_[agent] = Inference{*model, version->item<int64_t>()};
    }
    if (dump_leading_dim(dump, name + ".trainer_state") > 0) {
      auto model = make_task_model(options_.task, agent, options_.seed, device());
      if (!model.is_ok()) return model.status();
      auto trainer = std::make_unique<AgentTrainer>(*model, options_.adam, options_.loss);
      auto state = restore_tensor(dump, file, name + ".trainer_state", at::kDouble, {trainer->state_numel()});
      if (!state.is_ok()) return state.status();
      CT_RETURN_IF_ERROR(trainer->unpack_state(*state));
      trainers_[agent] = std::move(trainer);
    }
  }
  return Status::ok();
}

}  // namespace clustertwin::real::flexmarl
