// clustertwin run flowtrain: one rank's run (flowtrain_command.h). The
// command line (cli/real_command.cpp) only parses; this file checks the
// flags, chooses the device, connects, drives the steps and reports. The
// training itself is worker.h's, the pools' transfers pool_transfer.h's.

#include "real/flowtrain/flowtrain_command.h"

#include <torch/torch.h>

#include <chrono>

#include "common/state_dump.h"
#include "real/core/communicator.h"
#include "real/core/device.h"
#include "real/core/dist_env.h"
#include "real/core/tracer.h"
#include "real/flowtrain/flowtrain_args.h"
#include "real/flowtrain/report.h"
#include "real/flowtrain/run_checkpoints.h"
#include "real/flowtrain/worker.h"

namespace clustertwin::real::flowtrain {
namespace {

Status write_parameters(const std::string& dir, int world,
                        const std::vector<std::pair<std::string, torch::Tensor>>& params) {
  StateDump dump;
  dump.rank = 0;
  dump.world = world;
  for (const auto& [name, t] : params) {
    DumpTensor d;
    d.name = name;
    d.type = DumpTensor::Type::kFloat64;
    const torch::Tensor w = t.to(torch::kFloat64).contiguous();
    d.shape = {w.numel()};
    d.bytes.assign(reinterpret_cast<const char*>(w.data_ptr<double>()), static_cast<size_t>(w.numel()) * 8);
    dump.tensors.push_back(std::move(d));
  }
  return write_state_dump(dir, dump);
}

// The final parameters at rank 0 where the run dumps them (collective); none otherwise, since a large backbone is
// gigabytes to send to rank 0.
StatusOr<std::vector<std::pair<std::string, torch::Tensor>>> parameters_to_dump(const FlowTrainRunArgs& a,
                                                                                Worker& worker) {
  if (a.dump_params.empty()) return std::vector<std::pair<std::string, torch::Tensor>>{};
  return worker.gather_parameters();
}

int64_t parameter_count(const std::vector<torch::Tensor>& params) {
  int64_t n = 0;
  for (const torch::Tensor& p : params)
    n += p.numel();
  return n;
}

// Rank 0's trace of a whole step, on the "step" stream.
void record_step(Tracer& tracer, int step, double start_us) {
  traces::Event e;
  e.name = "step";
  e.category = traces::Category::kCompute;
  e.stream = 2;
  e.ts_us = start_us;
  e.dur_us = tracer.now_us() - start_us;
  e.step = step;
  e.cost_key = "flowtrain/step";
  tracer.record(std::move(e));
}

// Training steps [first, a.steps): each one's wall time, mean loss and model FLOPs into the report; after every
// --checkpoint-every steps a checkpoint, at the step boundary (nothing in flight: the loss all-reduce ends the step
// on every rank).
Status run_steps(const FlowTrainRunArgs& a, Communicator& comm, Group& world, Tracer& tracer, Worker& worker,
                 RunReport& report, int64_t first, const KillHooks& hooks) {
  for (int s = static_cast<int>(first); s < a.steps; ++s) {
    kill_at_step(hooks, s);
    const auto start = std::chrono::steady_clock::now();
    const double start_us = tracer.now_us();
    auto loss = worker.step(s);
    if (!loss.is_ok()) return loss.status();
    // The step ends on every rank at once: the loss sum over the ranks doubles as the barrier.
    torch::Tensor total = torch::full({1}, *loss, torch::TensorOptions().dtype(torch::kFloat64).device(comm.device()));
    CT_RETURN_IF_ERROR(comm.all_reduce(world, total));
    const double total_loss = total.item<double>();  // waits for the device too
    report.step_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (comm.rank() == 0) record_step(tracer, s, start_us);
    report.losses.push_back(total_loss / a.global_batch);
    report.model_flops += worker.step_model_flops();
    if (checkpoint_due(checkpoint_flags(a), s + 1)) {
      CT_RETURN_IF_ERROR(write_checkpoint(a, comm, world, worker, s + 1, report.losses, hooks.checkpoint));
    }
  }
  return Status::ok();
}

// The merged trace (rank 0 writes it) and each rank's final state, where the run asks for them.
Status write_trace_and_state(const FlowTrainRunArgs& a, Communicator& comm, Group& world, Tracer& tracer,
                             const Worker& worker, const RunReport& report) {
  if (!a.trace.empty()) {
    traces::Metadata metadata = real_run_metadata(
        comm, "flowtrain", a.mode,
        options_json(a, report.world_size, report.encoders, worker.facts(), report.matmul_rate), a.seed);
    metadata.streams = {"compute", "comm", "step"};
    CT_RETURN_IF_ERROR(tracer.gather_and_write(comm, world, metadata, a.trace));
  }
  if (a.dump_state.empty()) return Status::ok();
  return write_state_dump(a.dump_state, worker.state_dump(a.steps));
}

// Where the steps start: 0, or with --resume the checkpoint's step, its state put into `worker`.
StatusOr<int64_t> first_step(const std::optional<ResumeState>& resume, Worker& worker, RunReport& report) {
  if (!resume) return 0;
  return resume_worker(*resume, worker, report);
}

}  // namespace

Status run_flowtrain(const FlowTrainRunArgs& args) {
  const FlowTrainRunArgs a = with_model_defaults(args);
  auto env = read_dist_env();
  if (!env.is_ok()) return env.status();
  auto mode = check_args(a, env->world_size);
  if (!mode.is_ok()) return mode.status();
  // The device before the rendezvous, so that a device this machine lacks is an error, never a wait.
  auto device = choose_device(a.device, env->local_rank, device_support());
  if (!device.is_ok()) return device.status();
  CT_RETURN_IF_ERROR(check_device_args(a, *device));
  auto hooks = read_kill_hooks(env->rank);
  if (!hooks.is_ok()) return hooks.status();
  auto resume = read_resume(a, env->rank, env->world_size);
  if (!resume.is_ok()) return resume.status();
  at::set_num_threads(a.threads);
  auto comm = connect_for_run(*env, a.device, a.backend, a.timeout_s);
  if (!comm.is_ok()) return comm.status();
  auto world = (*comm)->world(0);
  if (!world.is_ok()) return world.status();

  auto options = tiny_vlm_options(a);
  if (!options.is_ok()) return options.status();
  auto model = make_tiny_vlm(*options, a.seed);
  if (!model.is_ok()) return model.status();
  RunReport report;
  report.encoder_params = parameter_count((*model)->encoder_parameters());
  report.backbone_params = parameter_count((*model)->backbone_parameters());
  Tracer tracer((*comm)->rank());
  Worker worker(a, *mode, **comm, **world, tracer, *model);
  CT_RETURN_IF_ERROR(worker.setup_pools());
  auto first = first_step(*resume, worker, report);
  if (!first.is_ok()) return first.status();
  report.matmul_rate =
      (*comm)->rank() == 0 ? measured_matmul_rate((*comm)->device(), compute_dtype(a), options->d_model) : 0;
  CT_RETURN_IF_ERROR((*comm)->barrier(**world));
  tracer.start();

  CT_RETURN_IF_ERROR(run_steps(a, **comm, **world, tracer, worker, report, *first, *hooks));
  report.world_size = env->world_size;
  report.encoders = *mode == Mode::kMonolithic ? 0 : worker.encoders();
  CT_RETURN_IF_ERROR(write_trace_and_state(a, **comm, **world, tracer, worker, report));
  auto params = parameters_to_dump(a, worker);
  if (!params.is_ok()) return params.status();
  CT_RETURN_IF_ERROR((*comm)->barrier(**world));
  report.pool_transfer = worker.pool_transfer();
  worker.release_pools();
  if ((*comm)->rank() != 0) return Status::ok();

  if (!a.dump_params.empty()) CT_RETURN_IF_ERROR(write_parameters(a.dump_params, env->world_size, *params));
  report.device = (*comm)->device().is_cuda() ? "cuda" : "cpu";
  report.backend = (*comm)->backend();
  report.staging = (*comm)->staging();
  report.communicator = (*comm)->describe();
  print_report(a, report);
  return Status::ok();
}

}  // namespace clustertwin::real::flowtrain
