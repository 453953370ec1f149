// clustertwin run flexmarl: one rank's work. The command line
// (cli/real_command.cpp) only parses; this file checks the flags, connects,
// runs the controller (rank 0) or a worker, and reports.

#include "real/flexmarl/flexmarl_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/json.h"
#include "common/state_dump.h"
#include "real/core/communicator.h"
#include "real/core/device.h"
#include "real/core/dist_env.h"
#include "real/core/tracer.h"
#include "real/flexmarl/controller.h"
#include "real/flexmarl/run_checkpoints.h"

namespace clustertwin::real::flexmarl {
namespace {

namespace cf = clustertwin::models::flexmarl;

// Trainer workers of a flexmarl variant: --trainers, or a quarter of the workers (at least one).
int trainer_count(const FlexMarlArgs& a, int workers) {
  return a.trainers > 0 ? a.trainers : std::max(1, workers / 4);
}

// The step's batch: steps, queries, GRPO groups, micro- and rollout batches, load gap.
Status check_batch_args(const FlexMarlArgs& a) {
  if (a.steps < 1) return Status::invalid_argument("steps " + std::to_string(a.steps) + ": must be at least 1");
  if (a.queries < 1) return Status::invalid_argument("queries " + std::to_string(a.queries) + ": must be >= 1");
  if (a.group < 2) {
    return Status::invalid_argument("group " + std::to_string(a.group) + ": GRPO needs at least 2 trajectories");
  }
  const int batch = a.queries * a.group;
  if (a.micro_batch < 1 || a.micro_batch > batch) {
    return Status::invalid_argument("micro_batch " + std::to_string(a.micro_batch) +
                                    ": must be in [1, the global batch " + std::to_string(batch) + " (queries " +
                                    std::to_string(a.queries) + " x group " + std::to_string(a.group) + ")]");
  }
  if (a.rollout_batch < 1) {
    return Status::invalid_argument("rollout_batch " + std::to_string(a.rollout_batch) + ": must be >= 1");
  }
  if (!(a.load_gap > 0) || !std::isfinite(a.load_gap)) {
    return Status::invalid_argument("load_gap " + json_number(a.load_gap) +
                                    ": must be > 0 (requests; with 0 every request would rebalance)");
  }
  return Status::ok();
}

// The run's own flags: learning rate, trainers, threads, timeout, device, backend and transport.
Status check_run_flags(const FlexMarlArgs& a) {
  if (!(a.lr > 0) || !std::isfinite(a.lr)) return Status::invalid_argument("lr " + json_number(a.lr) + ": must be > 0");
  if (a.trainers < 0) return Status::invalid_argument("trainers " + std::to_string(a.trainers) + ": must be >= 0");
  if (a.threads < 1) return Status::invalid_argument("threads " + std::to_string(a.threads) + ": must be >= 1");
  if (!(a.timeout_s > 0)) return Status::invalid_argument("timeout_s " + json_number(a.timeout_s) + ": must be > 0");
  if (a.device != "cpu" && a.device != "cuda" && a.device != "auto") {
    return Status::invalid_argument("device '" + a.device + "': unknown device (allowed: cpu, cuda, auto)");
  }
  if (a.backend != "auto" && a.backend != "gloo" && a.backend != "nccl") {
    return Status::invalid_argument("backend '" + a.backend + "': unknown backend (allowed: auto, gloo, nccl)");
  }
  if (a.transport != "shm" && a.transport != "gloo" && a.transport != "auto") {
    return Status::invalid_argument("transport '" + a.transport + "': unknown (allowed: shm, gloo, auto)");
  }
  return check_checkpoint_flags(checkpoint_flags(a));
}

// Enough processes for the framework: a controller, its rollout workers and trainers.
Status check_world(const FlexMarlArgs& a, int world, Framework f) {
  const int workers = world - 1;
  const int agents = cf::kTaskTurns;
  if (workers < 1) {
    return Status::invalid_argument("run flexmarl: " + std::to_string(world) +
                                    " process: needs a controller and at least one worker (launch --nproc 2 or more)");
  }
  if (workers > 62) {
    return Status::invalid_argument("run flexmarl: " + std::to_string(world) + " processes: at most 63");
  }
  if (f == Framework::kMarti && workers - trainer_count(a, workers) < 1) {
    const int trainers = trainer_count(a, workers);
    return Status::invalid_argument("framework marti: " + std::to_string(world) + " processes leave " +
                                    std::to_string(workers - trainers) + " rollout workers; needs at least " +
                                    std::to_string(2 + trainers) + " (a controller, a rollout pool of one, " +
                                    std::to_string(trainers) + " trainer(s))");
  }
  if (separates_trainers(f)) {
    const int trainers = trainer_count(a, workers);
    if (workers - trainers < agents) {
      return Status::invalid_argument("framework " + a.framework + ": " + std::to_string(world) + " processes leave " +
                                      std::to_string(workers - trainers) + " rollout workers for " +
                                      std::to_string(agents) + " agents; needs at least " +
                                      std::to_string(1 + agents + trainers) + " (a controller, one rollout " +
                                      "instance per agent, " + std::to_string(trainers) + " trainer(s))");
    }
  }
  return Status::ok();
}

// What the flags' names stand for.
struct Resolved {
  Framework framework = Framework::kFlexMarl;
  sis::LossKind loss = sis::LossKind::kPpo;
  cf::TaskSpec task;
};

StatusOr<Resolved> check_args(const FlexMarlArgs& a, int world) {
  Resolved r;
  const std::optional<Framework> f = cf::framework_from_name(a.framework);
  if (!f) {
    return Status::invalid_argument("framework '" + a.framework +
                                    "': unknown (allowed: sync, marti, flexmarl, flexmarl-nobalance, "
                                    "flexmarl-noasync)");
  }
  r.framework = *f;
  auto task = cf::task_spec(a.task);
  if (!task.is_ok()) return task.status();
  r.task = std::move(*task);
  CT_RETURN_IF_ERROR(check_batch_args(a));
  auto kind = sis::loss_kind_from_name(a.loss);
  if (!kind.is_ok() ||
      (*kind != sis::LossKind::kPpo && *kind != sis::LossKind::kDapo && *kind != sis::LossKind::kGspo)) {
    return Status::invalid_argument("loss '" + a.loss + "': unknown (allowed: ppo, dapo, gspo)");
  }
  r.loss = *kind;
  CT_RETURN_IF_ERROR(check_run_flags(a));
  CT_RETURN_IF_ERROR(check_world(a, world, *f));
  return r;
}

// The run's options as the trace's config; with `steps`, also each step's
// response tokens per agent (response_tokens[step][agent][input x group +
// trajectory]): what the rollouts produced, for the process twin.
std::string options_json(const FlexMarlArgs& a, int world, int trainers,
                         const std::vector<StepReport>* steps = nullptr) {
  nlohmann::ordered_json o = {{"framework", a.framework},
                              {"task", a.task},
                              {"world_size", world},
                              {"steps", a.steps},
                              {"queries", a.queries},
                              {"group", a.group},
                              {"micro_batch", a.micro_batch},
                              {"rollout_batch", a.rollout_batch},
                              {"trainers", trainers},
                              {"load_gap", a.load_gap},
                              {"loss", a.loss},
                              {"sis", a.sis},
                              {"lr", a.lr},
                              {"seed", a.seed}};
  if (steps != nullptr) {
    nlohmann::ordered_json& tokens = o["response_tokens"] = nlohmann::ordered_json::array();
    for (const StepReport& step : *steps)
      tokens.push_back(step.response_tokens);
  }
  return o.dump();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

DumpTensor params_tensor(const std::string& name, const at::Tensor& tensor) {
  DumpTensor t;
  t.name = name;
  t.type = DumpTensor::Type::kFloat64;
  const at::Tensor w = tensor.to(at::kDouble).contiguous();
  t.shape = {w.numel()};
  t.bytes.assign(reinterpret_cast<const char*>(w.data_ptr<double>()), static_cast<size_t>(w.numel()) * 8);
  return t;
}

// Per agent: its weights ("planner") and its last step's gradient ("planner.grad").
Status write_params(const std::string& dir, const ControllerReport& r, int world) {
  StateDump dump;
  dump.rank = 0;
  dump.world = world;
  for (size_t a = 0; a < r.weights.size(); ++a) {
    const std::string& name = cf::task_agent_name(static_cast<int>(a));
    dump.tensors.push_back(params_tensor(name, r.weights[a]));
    dump.tensors.push_back(params_tensor(name + ".grad", r.gradients[a]));
  }
  return write_state_dump(dir, dump);
}

// Each policy's parameters at the run's size, the embedding tables included: {"planner": N, ...}.
nlohmann::ordered_json policy_params(const cf::TaskSpec& task) {
  nlohmann::ordered_json params;
  for (int agent = 0; agent < cf::kTaskTurns; ++agent)
    params[cf::task_agent_name(agent)] = cf::task_params(task, agent);
  return params;
}

// The run's figures, for the table and the JSON alike.
struct Summary {
  std::vector<double> times;  // per step
  double step_s = 0, tokens_per_s = 0, utilization = 0;
  bool gpu = false;
};

Summary summarize(const ControllerReport& r, const Communicator& comm) {
  Summary s;
  int64_t tokens = 0;
  double step_total = 0;
  for (const StepReport& step : r.steps) {
    s.times.push_back(step.seconds);
    tokens += step.generated_tokens;
    step_total += step.seconds;
  }
  s.step_s = median(s.times);
  s.tokens_per_s = step_total > 0 ? static_cast<double>(tokens) / step_total : 0;
  // Utilisation: the seconds workers spent in jobs per worker-second of the
  // steps. On the CPU, CPU time, not wall time: ranks share this machine's
  // cores, and a job waiting for a core is not a device at work. On a GPU,
  // wall time up to the device's end of the job: the device does the work
  // (and a host waiting for it may spin, which CPU time would count).
  s.gpu = comm.device().is_cuda();
  const double busy_s = s.gpu ? r.worker_busy_s : r.worker_cpu_s;
  s.utilization = step_total > 0 ? busy_s / (r.workers * step_total) : 0;
  return s;
}

void print_json(const FlexMarlArgs& a, const cf::TaskSpec& task, const ControllerReport& r, const Summary& s, int world,
                int trainers, const Communicator& comm) {
  const nlohmann::ordered_json out = {{"framework", a.framework},
                                      {"task", task.size},
                                      {"params", policy_params(task)},
                                      {"device", s.gpu ? "cuda" : "cpu"},
                                      {"backend", comm.backend()},
                                      {"world_size", world},
                                      {"workers", r.workers},
                                      {"trainers", a.framework != "sync" ? trainers : 0},
                                      {"steps", a.steps},
                                      {"step_s", s.step_s},
                                      {"step_times", s.times},
                                      {"tokens_per_s", s.tokens_per_s},
                                      {"utilization", s.utilization},
                                      {"mean_reward", r.steps.back().mean_reward},
                                      {"swaps", r.swaps},
                                      {"reassignments", r.reassignments},
                                      {"migrations", r.migrations},
                                      {"weight_loads", r.weight_loads},
                                      {"swap_s", r.swap_s},
                                      {"swap_bytes", r.swap_bytes}};
  std::fputs(json_document(out).c_str(), stdout);
}

void print_report(const FlexMarlArgs& a, const cf::TaskSpec& task, const ControllerReport& r, int world, int trainers,
                  const Communicator& comm) {
  const Summary s = summarize(r, comm);
  if (a.json) {
    print_json(a, task, r, s, world, trainers, comm);
    std::fflush(stdout);
    return;
  }
  const StepReport& last = r.steps.back();
  std::printf(
      "# clustertwin run flexmarl: %d ranks, %s: a controller and %d workers; planner, solver, checker; %d x %d "
      "samples per agent and step, micro-batch %d, %s%s\n",
      world, comm.describe().c_str(), r.workers, a.queries, a.group, a.micro_batch, a.loss.c_str(),
      a.sis ? "+sis" : "");
  std::printf("# task %s: planner %lld, solver %lld, checker %lld parameters\n", task.size.c_str(),
              static_cast<long long>(cf::task_params(task, 0)), static_cast<long long>(cf::task_params(task, 1)),
              static_cast<long long>(cf::task_params(task, 2)));
  std::printf("  %-18s %5s %15s %10s %11s %6s %9s  %s\n", "framework", "steps", "median step (s)", "tokens/s",
              "utilization", "swaps", "reassign", "mean reward, last step (planner/solver/checker)");
  std::printf("  %-18s %5d %15.3f %10.1f %10.1f%% %6lld %9lld  %.3f / %.3f / %.3f\n", a.framework.c_str(), a.steps,
              s.step_s, s.tokens_per_s, 100 * s.utilization, static_cast<long long>(r.swaps),
              static_cast<long long>(r.reassignments), last.mean_reward[0], last.mean_reward[1], last.mean_reward[2]);
  if (r.swap_bytes > 0) {
    std::printf("# state swaps: %.1f MB between host and %s memory in %.3f s of worker time\n",
                static_cast<double>(r.swap_bytes) / 1e6, s.gpu ? "device" : "trainer", r.swap_s);
  }
  if (!a.trace.empty()) std::printf("# trace: %s\n", a.trace.c_str());
  if (!a.dump_params.empty()) std::printf("# final weights: %s\n", state_dump_path(a.dump_params, 0).c_str());
  std::fflush(stdout);
}

// Large payloads through shared memory when every rank is on this machine; nullptr otherwise.
StatusOr<std::unique_ptr<PayloadStore>> open_payloads(const FlexMarlArgs& a, const cf::TaskSpec& task,
                                                      Communicator& comm, Group& control, int world_size, bool local) {
  std::unique_ptr<PayloadStore> payloads;
  if (a.transport == "shm" || (a.transport == "auto" && local)) {
    int64_t largest = 0;
    for (int agent = 0; agent < cf::kTaskTurns; ++agent)
      largest = std::max(largest, cf::task_params(task, agent));
    // A trainer's state is the largest payload: weights, gradients and two moments, and two counters.
    auto store = PayloadStore::open(comm, control, std::max(8, world_size + 4), 4 * largest + 16, a.timeout_s);
    if (!store.is_ok()) return store.status();
    payloads = std::move(*store);
  }
  return payloads;
}

// What a rank needs besides its role's options: the kill hooks, the checkpoint writer, the state it resumes from.
struct RankExtras {
  KillHooks hooks;
  CheckpointWriter checkpoint;
  std::optional<ResumeState> resume;
};

// Before the rendezvous: the kill hooks and, with --resume, the checkpoint's state (one that does not fit is
// refused on every rank before any waits for another).
StatusOr<RankExtras> read_extras(const FlexMarlArgs& a, int rank, int world, int trainers) {
  RankExtras extras;
  auto hooks = read_kill_hooks(rank);
  if (!hooks.is_ok()) return hooks.status();
  extras.hooks = *hooks;
  auto resume = read_resume(a, rank, world, trainers);
  if (!resume.is_ok()) return resume.status();
  extras.resume = std::move(*resume);
  return extras;
}

// A worker rank: runs what the controller sends it, then adds its events to the trace.
Status run_worker(const FlexMarlArgs& a, const cf::TaskSpec& task, Communicator& comm, Group& control,
                  const Links& links, real::Tracer& tracer, const traces::Metadata& metadata, const AdamOptions& adam,
                  const sis::LossOptions& loss, const RankExtras& extras) {
  WorkerOptions w;
  w.task = task;
  w.adam = adam;
  w.loss = loss;
  w.rollout.topk = 4;
  w.rollout.end_token = cf::kEnd;
  w.rollout.seed = a.seed;
  w.seed = a.seed;
  w.fault_late_publish = a.fault_late_publish;
  w.checkpoint = extras.checkpoint;
  w.hooks = extras.hooks;
  Worker worker(comm, links, tracer, w);
  if (extras.resume) CT_RETURN_IF_ERROR(worker.restore(extras.resume->dump, extras.resume->point.rank_path));
  CT_RETURN_IF_ERROR(worker.run());
  if (worker.aborted()) return Status::ok();
  if (!a.dump_state.empty()) CT_RETURN_IF_ERROR(write_state_dump(a.dump_state, worker.state_dump()));
  if (a.trace.empty()) return Status::ok();
  return tracer.gather_and_write(comm, control, metadata, a.trace);
}

ControllerOptions controller_options(const FlexMarlArgs& a, const Resolved& resolved, int trainers,
                                     const AdamOptions& adam, const sis::LossOptions& loss) {
  ControllerOptions c;
  c.orchestrator.framework = resolved.framework;
  c.orchestrator.task = resolved.task;
  c.orchestrator.queries = a.queries;
  c.orchestrator.group = a.group;
  c.orchestrator.micro_batch = a.micro_batch;
  c.orchestrator.rollout_batch = a.rollout_batch;
  c.orchestrator.trainers = trainers;
  c.orchestrator.load_gap = a.load_gap;
  c.orchestrator.token_normalised = resolved.loss == sis::LossKind::kDapo;
  c.orchestrator.seed = a.seed;
  c.steps = a.steps;
  c.topk = 4;
  c.adam = adam;
  c.loss = loss;
  c.checkpoint_every = a.checkpoint_every;
  return c;
}

// The controller (rank 0): runs the steps, then writes the trace and the weights asked for and reports.
Status run_controller(const FlexMarlArgs& a, Communicator& comm, Group& control, const Links& links,
                      real::Tracer& tracer, const traces::Metadata& metadata, const ControllerOptions& c,
                      int world_size, int trainers, const RankExtras& extras) {
  ControllerOptions options = c;
  options.checkpoint = extras.checkpoint;
  options.hooks = extras.hooks;
  Controller controller(comm, links, tracer, options);
  if (extras.resume) {
    const ResumeState& state = *extras.resume;
    auto next = checkpoint_next_step(state);
    if (!next.is_ok()) return next.status();
    CT_RETURN_IF_ERROR(controller.restore(state.dump, state.point.rank_path, *next));
    announce_resume(state.point, comm.rank());
  }
  auto report = controller.run();
  if (!report.is_ok()) return report.status();
  if (!a.dump_state.empty()) {
    auto dump = controller.state_dump();
    if (!dump.is_ok()) return dump.status();
    CT_RETURN_IF_ERROR(write_state_dump(a.dump_state, *dump));
  }
  if (!a.trace.empty()) {
    // The responses' lengths go along: the process twin replays them.
    traces::Metadata with_responses = metadata;
    with_responses.config_json = options_json(a, world_size, trainers, &report->steps);
    CT_RETURN_IF_ERROR(tracer.gather_and_write(comm, control, with_responses, a.trace));
  }
  if (!a.dump_params.empty()) CT_RETURN_IF_ERROR(write_params(a.dump_params, *report, world_size));
  print_report(a, c.orchestrator.task, *report, world_size, trainers, comm);
  return Status::ok();
}

}  // namespace

Status run_flexmarl(const FlexMarlArgs& a) {
  // Everything a user can get wrong is checked before the rendezvous.
  auto env = real::read_dist_env();
  if (!env.is_ok()) return env.status();
  auto resolved = check_args(a, env->world_size);
  if (!resolved.is_ok()) return resolved.status();
  // --device cuda without a GPU fails here, before any rank waits for another.
  auto device = real::choose_device(a.device, env->local_rank, real::device_support());
  if (!device.is_ok()) return device.status();
  const bool local = env->local_world_size == env->world_size;
  if (a.transport == "shm" && !local) {
    return Status::invalid_argument("transport shm: the ranks span several machines (LOCAL_WORLD_SIZE " +
                                    std::to_string(env->local_world_size) + " of " + std::to_string(env->world_size) +
                                    "); use gloo or auto");
  }
  const int trainers = trainer_count(a, env->world_size - 1);
  auto extras = read_extras(a, env->rank, env->world_size, trainers);
  if (!extras.is_ok()) return extras.status();
  at::set_num_threads(a.threads);

  auto comm = real::connect_for_run(*env, a.device, a.backend, a.timeout_s);
  if (!comm.is_ok()) return comm.status();
  // The controller's messages, the start-up barrier, the shared-memory
  // store's set-up and the trace's gathering: host-side, over Gloo.
  auto control = (*comm)->control_group((*comm)->all_ranks(), 0);
  if (!control.is_ok()) return control.status();
  auto payloads = open_payloads(a, resolved->task, **comm, **control, env->world_size, local);
  if (!payloads.is_ok()) return payloads.status();
  // The controller keeps host copies; a worker's tensors are on its device.
  const at::Device here = (*comm)->rank() == 0 ? at::Device(at::kCPU) : (*comm)->device();
  auto links = open_links(**comm, **control, payloads->get(), here);
  if (!links.is_ok()) return links.status();

  sis::LossOptions loss;
  loss.kind = resolved->loss;
  loss.sis = a.sis;
  loss.seed = a.seed;
  AdamOptions adam;
  adam.lr = a.lr;
  real::Tracer tracer((*comm)->rank());
  CT_RETURN_IF_ERROR((*comm)->barrier(**control));
  tracer.start();

  const traces::Metadata metadata =
      real::real_run_metadata(**comm, "flexmarl", a.framework, options_json(a, env->world_size, trainers), a.seed);
  if (a.checkpoint_every > 0) {
    extras->checkpoint = checkpoint_writer(a, **comm, **control, trainers, extras->hooks.checkpoint);
  }
  if ((*comm)->rank() != 0)
    return run_worker(a, resolved->task, **comm, **control, *links, tracer, metadata, adam, loss, *extras);
  return run_controller(a, **comm, **control, *links, tracer, metadata,
                        controller_options(a, *resolved, trainers, adam, loss), env->world_size, trainers, *extras);
}

}  // namespace clustertwin::real::flexmarl
