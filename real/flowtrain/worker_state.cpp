// A worker's training state (worker.h): what --dump-state writes and a
// checkpoint holds, and putting a checkpoint's back. Taken at a step
// boundary, where nothing is in flight: every embedding and gradient the
// step put into the pools was taken before its loss all-reduce ended.

#include <torch/torch.h>

#include "common/check.h"
#include "real/core/state_tensors.h"
#include "real/flowtrain/worker.h"

namespace clustertwin::real::flowtrain {
namespace {

// SGD keeps a parameter's state under its TensorImpl's address (torch/optim/optimizer.h).
std::string sgd_key(const torch::Tensor& p) {
  return c10::guts::to_string(p.unsafeGetTensorImpl());
}

// A parameter or its momentum as a dump holds it: float32 or float64 as they are, bfloat16 as float32 (exact).
torch::Tensor as_dumped(const torch::Tensor& t) {
  return t.scalar_type() == torch::kDouble ? t : t.to(torch::kFloat);
}

}  // namespace

StateDump Worker::state_dump(int64_t steps_done) const {
  StateDump d;
  d.rank = rank_;
  d.world = comm_.world_size();
  for (size_t i = 0; i < params_.size(); ++i)
    d.tensors.push_back(dump_tensor("param." + param_names_[i], as_dumped(params_[i])));
  const auto& state = optimizer_->state();
  for (size_t i = 0; i < params_.size() && steps_done > 0; ++i) {
    const auto it = state.find(sgd_key(params_[i]));
    CT_CHECK(it != state.end()) << param_names_[i] << ": no momentum after " << steps_done << " steps";
    const auto& sgd = static_cast<const torch::optim::SGDParamState&>(*it->second);
    d.tensors.push_back(dump_tensor("sgd.momentum." + param_names_[i], as_dumped(sgd.momentum_buffer())));
  }
  return d;
}

Status Worker::restore_state(const StateDump& dump, const std::string& file, int64_t steps_done) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& p = params_[i];
    const torch::ScalarType type = as_dumped(p).scalar_type();
    auto values = restore_tensor(dump, file, "param." + param_names_[i], type, p.sizes());
    if (!values.is_ok()) return values.status();
    params_[i].copy_(*values);
  }
  auto& state = optimizer_->state();
  state.clear();
  for (size_t i = 0; i < params_.size() && steps_done > 0; ++i) {
    const torch::Tensor& p = params_[i];
    const torch::ScalarType type = as_dumped(p).scalar_type();
    auto momentum = restore_tensor(dump, file, "sgd.momentum." + param_names_[i], type, p.sizes());
    if (!momentum.is_ok()) return momentum.status();
    auto sgd = std::make_unique<torch::optim::SGDParamState>();
    sgd->momentum_buffer(momentum->to(p.device(), p.scalar_type()));
    state[sgd_key(p)] = std::move(sgd);
  }
  return Status::ok();
}

}  // namespace clustertwin::real::flowtrain
