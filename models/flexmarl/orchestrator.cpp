// The orchestrator's life cycle: creating it for a framework (the
// schedule, the store's tables, the rollout pool's balancer), the initial
// placement, a step's start and end, and each job's completion. What it posts
// is in orchestrator_jobs.cpp, the step's samples and rewards in
// orchestrator_samples.cpp, the framework schedules in
// orchestrator_schedules.cpp.
#include "models/flexmarl/orchestrator.h"

#include <string>

namespace clustertwin::models::flexmarl {
namespace {

const std::vector<std::string> kFields = {"response", "reward", "advantage"};

}  // namespace

bool separates_trainers(Framework framework) {
  return framework != Framework::kSync && framework != Framework::kMarti;
}

StatusOr<Orchestrator> Orchestrator::create(const OrchestratorOptions& options) {
  Orchestrator o(options);
  if (options.workers < 1) {
    return Status::invalid_argument("flexmarl: " + std::to_string(options.workers) + " workers (need at least one)");
  }
  // The task's agents answer one per turn: planner, solver, verifier.
  std::vector<int> turns(kAgents);
  for (int a = 0; a < kAgents; ++a)
    turns[static_cast<size_t>(a)] = a;
  auto schedule =
      Schedule::create(options.framework, turns, options.queries * options.group, options.group, options.micro_batch);
  if (!schedule.is_ok()) return schedule.status();
  o.schedule_.emplace(std::move(*schedule));
  for (int a = 0; a < kAgents; ++a)
    CT_RETURN_IF_ERROR(o.store_.add_agent(task_agent_name(a), kFields));
  o.host_valid_.fill(true);
  o.cached_.resize(static_cast<size_t>(options.workers) + 1);
  o.jobs_.resize(static_cast<size_t>(options.workers) + 1);
  if (options.framework == Framework::kMarti && (options.trainers < 1 || options.workers - options.trainers < 1)) {
    return Status::invalid_argument("flexmarl marti: " + std::to_string(options.workers) + " workers with " +
                                    std::to_string(options.trainers) +
                                    " trainers leave no rollout pool (need at least one rollout worker)");
  }
  if (separates_trainers(options.framework)) {
    const int rollout = options.workers - options.trainers;
    if (options.trainers < 1 || rollout < kAgents) {
      return Status::invalid_argument("flexmarl " + std::string(framework_name(options.framework)) + ": " +
                                      std::to_string(options.workers) + " workers with " +
                                      std::to_string(options.trainers) + " trainers leave " + std::to_string(rollout) +
                                      " rollout workers (need one per agent, " + std::to_string(kAgents) + ")");
    }
    std::vector<int> per_agent(kAgents, rollout / kAgents);
    for (int a = 0; a < rollout % kAgents; ++a)
      ++per_agent[static_cast<size_t>(a)];
    // One rollout worker per agent at least, and often no more: an agent with nothing to do lends its last
    // instance (the next step's allocation, or the balancer, gives one back).
    auto balancer = LoadBalancer::create(per_agent, options.load_gap, {}, /*keep_one=*/false);
    if (!balancer.is_ok()) return balancer.status();
    o.balancer_ = std::move(*balancer);
    for (int i = 0; i < rollout; ++i)
      o.instance_rank_.push_back(1 + i);
    o.queue_.resize(static_cast<size_t>(rollout));
  }
  return o;
}

ExperienceTable& Orchestrator::table(int agent) {
  return **store_.table(task_agent_name(agent));
}

const Job* Orchestrator::front(int rank) const {
  if (rank < 1 || rank > o_.workers) return nullptr;
  const std::deque<Job>& jobs = jobs_[static_cast<size_t>(rank)];
  return jobs.empty() ? nullptr : &jobs.front();
}

Status Orchestrator::complete(int rank, Completion c, JobSink& sink) {
  const Job* front_job = front(rank);
  if (front_job == nullptr || front_job->kind != c.kind) {
    return Status::internal(
        std::string("flexmarl controller: a finished ") + job_kind_name(c.kind) + " from rank " + std::to_string(rank) +
        (front_job == nullptr ? std::string(" with no job") : " for " + std::string(job_kind_name(front_job->kind))));
  }
  Job job = std::move(jobs_[static_cast<size_t>(rank)].front());
  jobs_[static_cast<size_t>(rank)].pop_front();
  const size_t a = static_cast<size_t>(job.agent);
  switch (c.kind) {
    case JobKind::kGenerate: {
      if (c.responses.size() != job.samples.size()) {
        return Status::internal("flexmarl controller: " + std::to_string(c.responses.size()) + " responses from rank " +
                                std::to_string(rank) + " for " + std::to_string(job.samples.size()) + " requests");
      }
      for (size_t k = 0; k < job.samples.size(); ++k) {
        const int index = job.samples[k];
        TaskSample& s = samples_[static_cast<size_t>(index)];
        s.response = std::move(c.responses[k]);
        s.version = c.version;
        // The store's version check: a rollout that ran an older policy than
        // the published one (a late weight load) is refused here.
        CT_RETURN_IF_ERROR(table(s.agent).insert(s.id, c.version).with_context("rank " + std::to_string(rank)));
        const int64_t r = static_cast<int64_t>(s.response.size());
        CT_RETURN_IF_ERROR(table(s.agent).put(s.id, c.version, "response", TensorRef{0, index, {r}, "int64"}));
        ++generated_[a];
        generated_tokens_ += r;
        if (job.instance >= 0) balancer_->finish(job.instance);
        CT_RETURN_IF_ERROR(on_generated(index));
      }
      break;
    }
    case JobKind::kTrain:
      for (int index : job.samples) {
        CT_RETURN_IF_ERROR(table(job.agent).mark_trained(samples_[static_cast<size_t>(index)].id, version_[a]));
      }
      trained_[a] += static_cast<int>(job.samples.size());
      break;
    case JobKind::kStep:
      // The lowest member publishes; the others only finish.
      if (rank == __builtin_ctzll(static_cast<unsigned long long>(job.members))) {
        version_[a] = c.version;
        CT_RETURN_IF_ERROR(table(job.agent).publish(c.version));
        published_[a] = true;
        decisions_.push_back({Decision::Kind::kPublish, job.agent, trained_[a]});
        // The new state came back with the publish (flexmarl variants).
        trained_on_[a].clear();
        host_valid_[a] = true;
        host_grad_[a] = false;
      }
      break;
    case JobKind::kSwapOut:
      host_valid_[a] = true;
      break;
    default:
      break;
  }
  return schedule(sink);
}

Status Orchestrator::start(JobSink& sink) {
  if (separates_trainers(o_.framework)) return Status::ok();
  // Colocated: the trainers' state stays resident where the agent trains.
  for (int a = 0; a < kAgents; ++a) {
    const std::vector<int> ranks = o_.framework == Framework::kMarti ? marti_trainers(a) : every_worker();
    for (int r : ranks)
      CT_RETURN_IF_ERROR(swap_in(sink, r, a));
  }
  return Status::ok();
}

Status Orchestrator::begin_step(int step, JobSink& sink) {
  step_ = step;
  samples_.clear();
  sample_of_.clear();
  generated_ = {};
  sent_ = {};
  trained_ = {};
  step_sent_ = {};
  published_ = {};
  generated_tokens_ = 0;
  phase_ = 0;
  phase_started_ = false;
  training_started_ = false;
  if (balancer_) allocate_instances();
  for (int64_t q = 0; q < o_.queries; ++q) {
    for (int j = 0; j < o_.group; ++j)
      make_ready(new_sample(static_cast<int64_t>(step) * o_.queries + q, j, 0));
  }
  return schedule(sink);
}

bool Orchestrator::step_done() const {
  for (bool p : published_) {
    if (!p) return false;
  }
  return true;
}

}  // namespace clustertwin::models::flexmarl
