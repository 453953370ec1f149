#include "models/flexmarl/orchestrator.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/hash.h"

namespace clustertwin::models::flexmarl {
namespace {

const std::vector<std::string> kFields = {"response", "reward", "advantage"};

}  // namespace

bool separates_trainers(Framework framework) {
  return framework != Framework::kSync && framework != Framework::kMarti;
}

const char* job_kind_name(JobKind kind) {
  switch (kind) {
    case JobKind::kLoad:
      return "load";
    case JobKind::kGenerate:
      return "generate";
    case JobKind::kTrain:
      return "train";
    case JobKind::kStep:
      return "step";
    case JobKind::kSwapIn:
      return "swap-in";
    case JobKind::kSwapOut:
      return "swap-out";
  }
  return "?";
}

StatusOr<std::vector<double>> group_advantages(const std::vector<double>& rewards, int group) {
  if (group < 1 || rewards.size() % static_cast<size_t>(group) != 0) {
    return Status::invalid_argument("group advantages: group " + std::to_string(group) + " does not divide " +
                                    std::to_string(rewards.size()) + " rewards");
  }
  std::vector<double> out(rewards.size());
  for (size_t g = 0; g < rewards.size(); g += static_cast<size_t>(group)) {
    double mean = 0, var = 0;
    for (int i = 0; i < group; ++i)
      mean += rewards[g + i];
    mean /= group;
    for (int i = 0; i < group; ++i)
      var += (rewards[g + i] - mean) * (rewards[g + i] - mean);
    const double sd = std::sqrt(var / group);
    for (int i = 0; i < group; ++i)
      out[g + i] = (rewards[g + i] - mean) / (sd + 1e-6);
  }
  return out;
}

int64_t generate_positions(const std::vector<int64_t>& prompts, const std::vector<int64_t>& responses) {
  std::map<int64_t, std::pair<int64_t, int64_t>> batches;  // prompt length -> rows, longest response
  for (size_t i = 0; i < prompts.size() && i < responses.size(); ++i) {
    auto& b = batches[prompts[i]];
    ++b.first;
    b.second = std::max(b.second, responses[i]);
  }
  int64_t positions = 0;
  for (const auto& [prompt, b] : batches)
    positions += b.first * (prompt + b.second - 1);
  return positions;
}

int64_t train_positions(const std::vector<int64_t>& sequence_tokens) {
  int64_t longest = 0;
  for (int64_t t : sequence_tokens)
    longest = std::max(longest, t);
  return static_cast<int64_t>(sequence_tokens.size()) * std::max<int64_t>(longest - 1, 0);
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
    CT_RETURN_IF_ERROR(o.store_.add_agent(task_agents()[static_cast<size_t>(a)].name, kFields));
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
  return **store_.table(task_agents()[static_cast<size_t>(agent)].name);
}

Status Orchestrator::post(JobSink& sink, Job job) {
  ++counts_.jobs;
  jobs_[static_cast<size_t>(job.rank)].push_back(job);
  return sink.post(job);
}

Status Orchestrator::ensure_weights(JobSink& sink, int rank, int agent) {
  auto& cached = cached_[static_cast<size_t>(rank)];
  auto it = cached.find(agent);
  const int64_t v = version_[static_cast<size_t>(agent)];
  if (it != cached.end() && it->second == v) return Status::ok();
  cached[agent] = v;
  ++counts_.weight_loads;
  Job job;
  job.kind = JobKind::kLoad;
  job.rank = rank;
  job.agent = agent;
  job.version = v;
  return post(sink, std::move(job));
}

int Orchestrator::new_sample(int64_t input, int trajectory, int turn) {
  const Problem problem = make_problem(o_.seed, input);
  std::vector<std::vector<int64_t>> earlier;
  for (int t = 0; t < turn; ++t) {
    earlier.push_back(samples_[static_cast<size_t>(sample_of_.at({input, trajectory, t}))].response);
  }
  TaskSample s;
  s.id = SampleId{input, turn, trajectory};
  s.agent = turn;
  s.prompt = task_prompt(problem, turn, earlier);
  s.budget = task_budget(o_.seed, turn, input, trajectory);
  // The key: which response this sample gets, the same in every framework.
  s.key = mix64(mix64(static_cast<uint64_t>(step_) * 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(input)) ^
                (static_cast<uint64_t>(turn) << 32 | static_cast<uint64_t>(trajectory)));
  samples_.push_back(std::move(s));
  const int index = static_cast<int>(samples_.size()) - 1;
  sample_of_[{input, trajectory, turn}] = index;
  return index;
}

void Orchestrator::make_ready(int sample) {
  const int agent = samples_[static_cast<size_t>(sample)].agent;
  if (balancer_) {
    const int instance = balancer_->dispatch(agent);
    if (instance < 0) {
      unplaced_[static_cast<size_t>(agent)].push_back(sample);  // until an instance is reassigned to the agent
    } else {
      queue_[static_cast<size_t>(instance)].push_back(sample);
    }
  } else {
    pending_[static_cast<size_t>(agent)].push_back(sample);
  }
}

Status Orchestrator::dispatch_generate(JobSink& sink, int rank, int agent, std::vector<int> samples, int instance) {
  CT_RETURN_IF_ERROR(ensure_weights(sink, rank, agent));
  Job job;
  job.kind = JobKind::kGenerate;
  job.rank = rank;
  job.agent = agent;
  job.version = version_[static_cast<size_t>(agent)];
  job.samples = std::move(samples);
  job.instance = instance;
  return post(sink, std::move(job));
}

Status Orchestrator::dispatch_train(JobSink& sink, int rank, int agent, const std::vector<SampleId>& ids) {
  ExperienceTable& t = table(agent);
  const int64_t version = version_[static_cast<size_t>(agent)];
  Job job;
  job.kind = JobKind::kTrain;
  job.rank = rank;
  job.agent = agent;
  job.version = version;
  for (const SampleId& id : ids) {
    // The trainer reads at its own version: a row of another policy is refused.
    auto ref = t.get(id, version, "response");
    if (!ref.is_ok()) return ref.status();
    auto adv = t.get(id, version, "advantage");
    if (!adv.is_ok()) return adv.status();
    const int index = static_cast<int>(std::get<TensorRef>(*ref).handle);
    samples_[static_cast<size_t>(index)].advantage = std::get<double>(*adv);
    job.samples.push_back(index);
  }
  sent_[static_cast<size_t>(agent)] += static_cast<int>(ids.size());
  return post(sink, std::move(job));
}

Status Orchestrator::dispatch_step(JobSink& sink, const std::vector<int>& ranks, int agent) {
  int64_t mask = 0;
  for (int r : ranks)
    mask |= int64_t{1} << r;
  double scale = 1.0 / (o_.queries * o_.group);
  if (o_.token_normalised) {
    int64_t tokens = 0;
    for (const TaskSample& s : samples_)
      tokens += s.agent == agent ? static_cast<int64_t>(s.response.size()) : 0;
    scale = 1.0 / static_cast<double>(std::max<int64_t>(tokens, 1));
  }
  step_sent_[static_cast<size_t>(agent)] = true;
  for (int r : ranks) {
    Job job;
    job.kind = JobKind::kStep;
    job.rank = r;
    job.agent = agent;
    job.version = version_[static_cast<size_t>(agent)];
    job.members = mask;
    job.scale = scale;
    job.return_state = separates_trainers(o_.framework);
    CT_RETURN_IF_ERROR(post(sink, std::move(job)));
  }
  return Status::ok();
}

Status Orchestrator::swap_in(JobSink& sink, int rank, int agent) {
  if (separates_trainers(o_.framework)) {
    holders_[static_cast<size_t>(agent)].push_back(rank);
    ++counts_.swaps;
  }
  Job job;
  job.kind = JobKind::kSwapIn;
  job.rank = rank;
  job.agent = agent;
  return post(sink, std::move(job));
}

Status Orchestrator::swap_out(JobSink& sink, int rank, int agent) {
  const size_t a = static_cast<size_t>(agent);
  // Its gradients go to the host with it: the host copy is back once the state arrives.
  holders_[a].clear();
  trained_on_[a].clear();
  host_valid_[a] = false;
  host_grad_[a] = true;
  Job job;
  job.kind = JobKind::kSwapOut;
  job.rank = rank;
  job.agent = agent;
  return post(sink, std::move(job));
}

std::vector<int> Orchestrator::share_of(int agent, int first, int last) {
  // Rank r of [first, last] serves agent (r - first) mod A; with fewer ranks
  // than agents, agent a shares rank first + a mod count.
  const int count = last - first + 1;
  if (count < kAgents) return {first + agent % count};
  std::vector<int> ranks;
  for (int r = first; r <= last; ++r) {
    if ((r - first) % kAgents == agent) ranks.push_back(r);
  }
  return ranks;
}

std::vector<int> Orchestrator::every_worker() const {
  std::vector<int> ranks;
  for (int r = 1; r <= o_.workers; ++r)
    ranks.push_back(r);
  return ranks;
}

std::vector<int> Orchestrator::marti_trainers(int agent) const {
  return share_of(agent, o_.workers - o_.trainers + 1, o_.workers);
}

Status Orchestrator::train_sharded(JobSink& sink, const std::vector<int>& ranks, int agent) {
  const int64_t version = version_[static_cast<size_t>(agent)];
  const ExperienceTable::Counts c = table(agent).counts(version);
  const int size = schedule_->next_micro_batch(static_cast<int>(c.complete), static_cast<int>(c.taken),
                                               /*rollout_done=*/true);
  if (size != schedule_->batch()) {
    return Status::internal("flexmarl " + task_agents()[static_cast<size_t>(agent)].name + ": " +
                            std::to_string(c.complete - c.taken) + " complete rows at version " +
                            std::to_string(version) + " when training starts");
  }
  // One batch for the schedule; on the ranks, shards of it in micro-batches (gradient accumulation).
  decisions_.push_back({Decision::Kind::kMicroBatch, agent, size});
  std::vector<SampleId> ids = table(agent).take(version, static_cast<size_t>(size), true);
  const size_t shards = ranks.size();
  for (size_t k = 0; k < shards; ++k) {
    const size_t begin = ids.size() * k / shards, end = ids.size() * (k + 1) / shards;
    for (size_t i = begin; i < end; i += static_cast<size_t>(o_.micro_batch)) {
      const size_t j = std::min(end, i + static_cast<size_t>(o_.micro_batch));
      CT_RETURN_IF_ERROR(
          dispatch_train(sink, ranks[k], agent, std::vector<SampleId>(ids.begin() + i, ids.begin() + j)));
    }
  }
  return dispatch_step(sink, ranks, agent);
}

Status Orchestrator::reward(int sample, double value) {
  TaskSample& s = samples_[static_cast<size_t>(sample)];
  s.reward = value;
  s.rewarded = true;
  CT_RETURN_IF_ERROR(table(s.agent).put(s.id, s.version, "reward", value));
  // GRPO's group: every trajectory of this input at this turn.
  std::vector<int> members;
  std::vector<double> rewards;
  for (int j = 0; j < o_.group; ++j) {
    auto it = sample_of_.find({s.id.input, j, s.id.turn});
    if (it == sample_of_.end() || !samples_[static_cast<size_t>(it->second)].rewarded) return Status::ok();
    members.push_back(it->second);
    rewards.push_back(samples_[static_cast<size_t>(it->second)].reward);
  }
  auto advantages = group_advantages(rewards, o_.group);
  if (!advantages.is_ok()) return advantages.status();
  for (size_t k = 0; k < members.size(); ++k) {
    TaskSample& m = samples_[static_cast<size_t>(members[k])];
    m.advantage = (*advantages)[k];
    CT_RETURN_IF_ERROR(table(m.agent).put(m.id, m.version, "advantage", m.advantage));
  }
  return Status::ok();
}

Status Orchestrator::on_generated(int sample) {
  const TaskSample s = samples_[static_cast<size_t>(sample)];
  const Problem problem = make_problem(o_.seed, s.id.input);
  const int64_t input = s.id.input;
  const int j = s.id.trajectory;
  if (s.id.turn < kAgents - 1) make_ready(new_sample(input, j, s.id.turn + 1));
  if (s.id.turn == 1) {
    const double r = solver_reward(problem, s.response);
    CT_RETURN_IF_ERROR(reward(sample_of_.at({input, j, 0}), r));
    CT_RETURN_IF_ERROR(reward(sample, r));
  } else if (s.id.turn == 2) {
    std::vector<std::vector<int64_t>> responses;
    for (int t = 0; t < kAgents; ++t)
      responses.push_back(samples_[static_cast<size_t>(sample_of_.at({input, j, t}))].response);
    CT_RETURN_IF_ERROR(reward(sample, task_rewards(problem, responses)[2]));
  }
  return Status::ok();
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
