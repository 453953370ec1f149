#include "real/flexmarl/controller.h"

#include <algorithm>

namespace clustertwin::real::flexmarl {
namespace {

namespace cf = clustertwin::models::flexmarl;

}  // namespace

Controller::Controller(Communicator& comm, const Links& links, Tracer& tracer, ControllerOptions options)
    : comm_(comm), links_(links), tracer_(tracer), o_(std::move(options)), outbox_(comm, links) {
  o_.orchestrator.workers = comm.world_size() - 1;
  report_.workers = o_.orchestrator.workers;
  weights_.resize(kAgents);
  gradients_.resize(kAgents);
  host_state_.resize(kAgents);
}

Status Controller::post(const cf::Job& job) {
  const std::vector<cf::TaskSample>& samples = orchestrator_->samples();
  const size_t a = static_cast<size_t>(job.agent);
  Message m;
  m.agent = job.agent;
  m.version = job.version;
  m.arg2 = std::max<int64_t>(static_cast<int64_t>(report_.steps.size()) - 1, 0);  // the step, for the worker's trace
  switch (job.kind) {
    case cf::JobKind::kLoad:
      m.kind = Kind::kLoad;
      m.f64 = weights_[a];
      break;
    case cf::JobKind::kGenerate: {
      std::vector<int64_t> payload;
      for (int i : job.samples) {
        const cf::TaskSample& s = samples[static_cast<size_t>(i)];
        payload.push_back(static_cast<int64_t>(s.key));
        payload.push_back(s.budget);
        payload.push_back(o_.orchestrator.task.agents[a].stops_at_end ? 1 : 0);
        payload.push_back(static_cast<int64_t>(s.prompt.size()));
        payload.insert(payload.end(), s.prompt.begin(), s.prompt.end());
      }
      m.kind = Kind::kGenerate;
      m.count = static_cast<int64_t>(job.samples.size());
      m.i64 = at::tensor(payload, at::kLong);
      break;
    }
    case cf::JobKind::kTrain: {
      std::vector<at::Tensor> longs, doubles;
      for (int i : job.samples) {
        const cf::TaskSample& s = samples[static_cast<size_t>(i)];
        const SampleTensors& t = tensors_[static_cast<size_t>(i)];
        std::vector<int64_t> tokens = s.prompt;
        tokens.insert(tokens.end(), s.response.begin(), s.response.end());
        longs.push_back(
            at::tensor(std::vector<int64_t>{static_cast<int64_t>(tokens.size()), static_cast<int64_t>(s.prompt.size()),
                                            static_cast<int64_t>(s.key)},
                       at::kLong));
        longs.push_back(at::tensor(tokens, at::kLong));
        longs.push_back(t.topk_ids.reshape(-1));
        doubles.push_back(at::full({1}, s.advantage, at::kDouble));
        doubles.push_back(t.logp);
        doubles.push_back(t.topk_logp.reshape(-1));
      }
      m.kind = Kind::kTrain;
      m.count = static_cast<int64_t>(job.samples.size());
      m.arg1 = o_.topk;
      m.i64 = at::cat(longs);
      m.f64 = at::cat(doubles);
      break;
    }
    case cf::JobKind::kStep:
      m.kind = Kind::kStep;
      m.arg1 = job.members;
      m.count = job.return_state ? 1 : 0;
      m.f64 = at::full({1}, job.scale, at::kDouble);
      break;
    case cf::JobKind::kSwapIn:
      m.kind = Kind::kSwapIn;
      m.f64 = host_state_[a];  // a copy: the host keeps the agent's current state
      break;
    case cf::JobKind::kSwapOut:
      m.kind = Kind::kSwapOut;
      break;
  }
  return outbox_.post(job.rank, m);
}

Status Controller::handle(int rank, Message& m) {
  const cf::Job* job = orchestrator_->front(rank);
  if (job == nullptr) {
    return Status::internal(std::string("flexmarl controller: unexpected ") + kind_name(m.kind) + " from rank " +
                            std::to_string(rank) + " with no job");
  }
  const size_t a = static_cast<size_t>(job->agent);
  cf::Completion c;
  switch (m.kind) {
    case Kind::kGenerated: {
      c.kind = cf::JobKind::kGenerate;
      c.version = m.version;
      if (job->kind != cf::JobKind::kGenerate) break;  // the orchestrator names the mismatch
      int64_t li = 0, di = 0;
      const int64_t k = o_.topk;
      for (int index : job->samples) {
        const cf::TaskSample& s = orchestrator_->samples()[static_cast<size_t>(index)];
        const int64_t r = m.i64[li++].item<int64_t>();
        const int64_t positions = static_cast<int64_t>(s.prompt.size()) + r - 1;
        const at::Tensor resp = m.i64.slice(0, li, li + r);
        li += r;
        c.responses.emplace_back(resp.data_ptr<int64_t>(), resp.data_ptr<int64_t>() + r);
        if (tensors_.size() <= static_cast<size_t>(index)) tensors_.resize(static_cast<size_t>(index) + 1);
        SampleTensors& t = tensors_[static_cast<size_t>(index)];
        t.topk_ids = m.i64.slice(0, li, li + positions * k).view({positions, k}).clone();
        li += positions * k;
        t.logp = m.f64.slice(0, di, di + positions).clone();
        di += positions;
        t.topk_logp = m.f64.slice(0, di, di + positions * k).view({positions, k}).clone();
        di += positions * k;
      }
      break;
    }
    case Kind::kTrained:
      c.kind = cf::JobKind::kTrain;
      break;
    case Kind::kPublished: {
      c.kind = cf::JobKind::kStep;
      c.version = m.version;
      // The new weights, the gradient that made them, and (when asked) the whole new state.
      const int64_t p = weights_[a].numel();
      if (m.f64.numel() < 2 * p) {
        return Status::internal("flexmarl controller: a publish of " + std::to_string(m.f64.numel()) +
                                " values from rank " + std::to_string(rank) + " for " + std::to_string(p) +
                                " parameters");
      }
      weights_[a] = m.f64.slice(0, 0, p).clone();
      gradients_[a] = m.f64.slice(0, p, 2 * p).clone();
      if (m.f64.numel() > 2 * p) host_state_[a] = m.f64.slice(0, 2 * p).clone();
      break;
    }
    case Kind::kState:
      c.kind = cf::JobKind::kSwapOut;
      host_state_[a] = m.f64;
      break;
    case Kind::kDone:
      // Loads, swap-ins and the steps of members that do not publish.
      c.kind = job->kind == cf::JobKind::kLoad || job->kind == cf::JobKind::kSwapIn || job->kind == cf::JobKind::kStep
                   ? job->kind
                   : cf::JobKind::kLoad;
      c.version = m.version;
      break;
    default:
      return Status::internal(std::string("flexmarl controller: unexpected ") + kind_name(m.kind) + " from rank " +
                              std::to_string(rank));
  }
  const size_t before = static_cast<size_t>(orchestrator_->counts().jobs);
  CT_RETURN_IF_ERROR(orchestrator_->complete(rank, std::move(c), *this));
  // Jobs posted before the first step (the initial placement's replies, drained) count in no step.
  if (!report_.steps.empty()) report_.steps.back().jobs += orchestrator_->counts().jobs - static_cast<int64_t>(before);
  return Status::ok();
}

Status Controller::run_step(int step) {
  report_.steps.emplace_back();
  tensors_.clear();
  const double t0 = tracer_.now_us(), cpu0 = Tracer::thread_cpu_us();
  const int64_t jobs0 = orchestrator_->counts().jobs;
  CT_RETURN_IF_ERROR(orchestrator_->begin_step(step, *this));
  report_.steps.back().jobs = orchestrator_->counts().jobs - jobs0;
  while (!orchestrator_->step_done()) {
    Message m;
    auto rank = recv_any_message(comm_, links_, &m);
    if (!rank.is_ok()) return rank.status();
    CT_RETURN_IF_ERROR(handle(*rank, m));
    outbox_.reap();
  }
  StepReport& r = report_.steps.back();
  r.seconds = (tracer_.now_us() - t0) / 1e6;
  r.controller_cpu_s = (Tracer::thread_cpu_us() - cpu0) / 1e6;
  r.generated_tokens = orchestrator_->generated_tokens();
  const int batch = o_.orchestrator.queries * o_.orchestrator.group;
  std::array<double, kAgents> sum{};
  for (auto& lengths : r.response_tokens)
    lengths.assign(static_cast<size_t>(batch), 0);
  for (const cf::TaskSample& s : orchestrator_->samples()) {
    const size_t a = static_cast<size_t>(s.agent);
    sum[a] += s.reward;
    const int64_t q = s.id.input - static_cast<int64_t>(step) * o_.orchestrator.queries;
    r.response_tokens[a][static_cast<size_t>(q * o_.orchestrator.group + s.id.trajectory)] =
        static_cast<int64_t>(s.response.size());
  }
  for (int a = 0; a < kAgents; ++a)
    r.mean_reward[static_cast<size_t>(a)] = sum[static_cast<size_t>(a)] / batch;
  traces::Event e;
  e.name = "step " + std::to_string(step);
  e.category = traces::Category::kHost;
  e.ts_us = t0;
  e.dur_us = r.seconds * 1e6;
  e.step = step;
  e.cost_key = "flexmarl/step";
  e.cpu_us = r.controller_cpu_s * 1e6;
  tracer_.record(std::move(e));
  return Status::ok();
}

Status Controller::stop_workers(bool abort, ControllerReport* report) {
  const int workers = o_.orchestrator.workers;
  for (int r = 1; r <= workers; ++r) {
    Message m;
    m.kind = Kind::kStop;
    m.arg1 = abort ? 1 : 0;
    CT_RETURN_IF_ERROR(outbox_.post(r, m));
  }
  // Replies to jobs still in flight come first; each worker ends with kStopped.
  int stopped = 0;
  while (stopped < workers) {
    Message m;
    auto rank = recv_any_message(comm_, links_, &m);
    if (!rank.is_ok()) return rank.status();
    if (m.kind == Kind::kStopped) {
      ++stopped;
      if (m.f64.numel() >= 4) {  // WorkerTotals
        const double* t = m.f64.data_ptr<double>();
        report->worker_cpu_s += t[0];
        report->worker_busy_s += t[1];
        report->swap_s += t[2];
        report->swap_bytes += static_cast<int64_t>(t[3]);
      }
    }
  }
  return outbox_.flush();
}

Status Controller::create() {
  auto orchestrator = cf::Orchestrator::create(o_.orchestrator);
  if (!orchestrator.is_ok()) return orchestrator.status();
  orchestrator_ = std::move(*orchestrator);
  for (int a = 0; a < kAgents; ++a) {
    auto model = make_task_model(o_.orchestrator.task, a, o_.orchestrator.seed);
    if (!model.is_ok()) return model.status();
    AgentTrainer fresh(*model, o_.adam, o_.loss);
    weights_[static_cast<size_t>(a)] = flat_params(fresh.model());
    host_state_[static_cast<size_t>(a)] = fresh.pack_state();
  }
  return Status::ok();
}

Status Controller::drain() {
  while (!orchestrator_->quiescent()) {
    Message m;
    auto rank = recv_any_message(comm_, links_, &m);
    if (!rank.is_ok()) return rank.status();
    CT_RETURN_IF_ERROR(handle(*rank, m));
    outbox_.reap();
  }
  return Status::ok();
}

Status Controller::write_checkpoint(int64_t steps_done) {
  CT_RETURN_IF_ERROR(drain());
  for (int r = 1; r <= o_.orchestrator.workers; ++r) {
    Message m;
    m.kind = Kind::kCheckpoint;
    m.arg2 = steps_done;
    CT_RETURN_IF_ERROR(outbox_.post(r, m));
  }
  CT_RETURN_IF_ERROR(outbox_.flush());
  auto dump = state_dump();
  if (!dump.is_ok()) return dump.status();
  add_results(*dump);
  return o_.checkpoint(steps_done, *dump);
}

StatusOr<ControllerReport> Controller::run() {
  Status s = Status::ok();
  if (!orchestrator_) {
    s = create();
    if (s.is_ok()) s = orchestrator_->start(*this);
  }
  for (int64_t step = first_step_; step < o_.steps && s.is_ok(); ++step) {
    kill_at_step(o_.hooks, step);
    // sync and marti hand a step's first rollouts to whichever ranks are idle: with every rank's last reply in
    // first, that is the same ranks every run, and so is which worker holds which weights (the flexmarl
    // variants' placement follows the replies' order whatever this does).
    if (!cf::separates_trainers(o_.orchestrator.framework)) s = drain();
    if (s.is_ok()) s = run_step(static_cast<int>(step));
    if (s.is_ok() && o_.checkpoint_every > 0 && (step + 1) % o_.checkpoint_every == 0) s = write_checkpoint(step + 1);
  }
  // Every job done before the workers stop: the state they and the orchestrator end with is the last step's.
  if (s.is_ok()) s = drain();
  if (!s.is_ok()) {
    ControllerReport ignored;
    (void)stop_workers(true, &ignored);
    return s;
  }
  CT_RETURN_IF_ERROR(stop_workers(false, &report_));
  const cf::OrchestratorCounts& n = orchestrator_->counts();
  report_.swaps = n.swaps;
  report_.reassignments = n.reassignments;
  report_.migrations = n.migrations;
  report_.weight_loads = n.weight_loads;
  report_.weights = weights_;
  report_.gradients = gradients_;
  return report_;
}

}  // namespace clustertwin::real::flexmarl
