#pragma once

// One rank's training in `run flowtrain` (flowtrain_command.h): the tiny VLM
// on the rank's device, the parameters and optimizer of the rank's side, and
// one step of each mode. worker.cpp holds what the modes share (loading,
// encoding, the backbone's sample, the gradients' all-reduce and the traced
// tasks); worker_modes.cpp the three modes' steps.

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/state_dump.h"
#include "common/status.h"
#include "models/flowtrain/tiny_plan.h"
#include "real/core/communicator.h"
#include "real/core/tracer.h"
#include "real/flowtrain/flowtrain_args.h"
#include "real/flowtrain/pool_transfer.h"
#include "real/flowtrain/tiny_vlm.h"

namespace clustertwin::real::flowtrain {

/// A sample of the step: its sizes and model FLOPs, and its tensors (on the
/// rank's device) once the rank first needed them.
struct StepSample {
  ::clustertwin::models::flowtrain::TinySample shape;
  // A cache filled by Worker::load, so that a const sample can fill it.
  mutable TinyVlmSample data;
  mutable bool loaded = false;
};

/// One rank's part of a run. Every tensor it makes lives on
/// `comm.device()`; on a GPU each traced task ends with a synchronisation
/// of the device (see record()).
class Worker {
 public:
  /// Moves `model` to `comm.device()` in the run's dtype and makes the
  /// optimizer of this rank's side (SGD with momentum 0.9; its state on the
  /// device too, in that dtype).
  Worker(const FlowTrainRunArgs& a, Mode mode, Communicator& comm, Group& world, Tracer& tracer, TinyVlm model);

  /// The flowtrain mode's pools (collective; nothing in the other modes).
  Status setup_pools();
  /// Closes the pools; call after a barrier, when no rank uses them.
  void release_pools() { pools_.reset(); }
  /// "host", "host (pinned)", "cuda-ipc", or "none" outside the flowtrain mode.
  std::string pool_transfer() const { return pools_ ? pools_->transfer() : "none"; }

  /// One step; this rank's loss sum (the backbone's part of the global batch's summed loss).
  StatusOr<double> step(int step);
  /// Every parameter in model order, on the CPU, gathered at rank 0 (the
  /// backbone's from rank E in the split modes, as float32); empty on other
  /// ranks. Collective.
  StatusOr<std::vector<std::pair<std::string, torch::Tensor>>> gather_parameters();
  /// The model FLOPs of the last step's samples.
  double step_model_flops() const;

  // worker_state.cpp: the state a checkpoint and --dump-state hold.
  /// This rank's training state at a step boundary: its side's parameters
  /// ("param.NAME"; a bfloat16 model's as float32, which holds them exactly)
  /// and SGD's momentum buffers ("sgd.momentum.NAME"), once a step has made
  /// them. Nothing else carries over a step boundary: a step's samples, its
  /// packing and its pool keys follow from (seed, step), and the pools are
  /// empty (pool_slots_ready).
  StateDump state_dump(int64_t steps_done) const;
  /// Puts state_dump()'s tensors back; InvalidArgument "FILE: tensor 'NAME': ..."
  /// naming one that is missing or of another type or shape.
  Status restore_state(const StateDump& dump, const std::string& file, int64_t steps_done);
  /// Slots holding an embedding or a gradient in the pools this rank sees
  /// (0 outside the flowtrain mode). At a step boundary every put was taken.
  int pool_slots_ready() const { return pools_ ? pools_->ready() : 0; }

  const ::clustertwin::models::flowtrain::TinyFacts& facts() const { return facts_; }
  int encoders() const { return encoders_; }
  int rank() const { return rank_; }

 private:
  bool is_encoder() const { return mode_ != Mode::kMonolithic && rank_ < encoders_; }
  int backbones() const { return comm_.world_size() - encoders_; }
  torch::TensorOptions floats() const { return torch::TensorOptions().dtype(torch::kFloat).device(device_); }

  // worker.cpp: the parts the modes share.
  void record(const std::string& name, const std::string& cost_key, double start_us, double cpu_start_us, double flops,
              int64_t bytes = 0);
  const TinyVlmSample& load(const StepSample& s);
  torch::Tensor upload(const torch::Tensor& host) const;
  torch::Tensor backbone_sample(const StepSample& s, const torch::Tensor& image_tokens);
  torch::Tensor encode(const StepSample& s, bool with_graph);
  void encoder_backward(const StepSample& s, const torch::Tensor& tokens, const torch::Tensor& grad);
  torch::Tensor token_buffer(const StepSample& s) const;
  Status all_reduce_and_step();

  // worker_modes.cpp: one step of each mode.
  Status monolithic();
  Status disagg_sync();
  Status flowtrain();
  Status pool_error(const std::string& what, const Status& s) const;

  const FlowTrainRunArgs& a_;
  Mode mode_;
  Communicator& comm_;
  Group& world_;
  Tracer& tracer_;
  c10::Device device_;
  TinyVlm model_;
  TinyVlmOptions o_;
  ::clustertwin::models::flowtrain::TinyFacts facts_;
  std::vector<::clustertwin::models::flowtrain::TinySample> shapes_;
  int encoders_ = 0, rank_ = 0, step_ = 0;
  std::vector<torch::Tensor> params_;
  std::vector<std::string> param_names_;  // params_'s names in the model
  std::optional<torch::optim::SGD> optimizer_;
  std::vector<StepSample> samples_;
  double loss_sum_ = 0;
  std::unique_ptr<FlowPools> pools_;
};

/// This device's matrix-multiply rate in `dtype` (the run's), FLOP/s: the
/// MFU's peak. On the CPU square matrices of the model's `width` (d_model),
/// within [256, 2048], on the rank's threads; on a GPU 4096 x 4096,
/// synchronised.
double measured_matmul_rate(c10::Device device, c10::ScalarType dtype, int64_t width);

}  // namespace clustertwin::real::flowtrain
