#include "real/flexmarl/controller.h"

#include <algorithm>
#include <cmath>

#include "models/common/hash.h"

namespace clustertwin::real::flexmarl {
namespace {

namespace cf = clustertwin::flexmarl;

const std::vector<std::string> kFields = {"response", "reward", "advantage"};

// The kind of reply a job expects.
bool answers(Kind job, Kind reply) {
  switch (job) {
    case Kind::kGenerate:
      return reply == Kind::kGenerated;
    case Kind::kTrain:
      return reply == Kind::kTrained;
    case Kind::kStep:
      return reply == Kind::kPublished || reply == Kind::kDone;
    case Kind::kSwapOut:
      return reply == Kind::kState;
    case Kind::kStop:
      return reply == Kind::kStopped;
    default:
      return reply == Kind::kDone;
  }
}

}  // namespace

bool separates_trainers(Framework framework) {
  return framework != Framework::kSync && framework != Framework::kMarti;
}

Controller::Controller(Communicator& comm, Group& world, Tracer& tracer, ControllerOptions options)
    : comm_(comm), world_(world), tracer_(tracer), o_(std::move(options)), outbox_(comm, world) {
  workers_ = comm.world_size() - 1;
  report_.workers = workers_;
  weights_.resize(kAgents);
  gradients_.resize(kAgents);
  host_state_.resize(kAgents);
  version_.assign(kAgents, 0);
  holder_.assign(kAgents, -1);
  cached_.resize(static_cast<size_t>(comm.world_size()));
  jobs_.resize(static_cast<size_t>(comm.world_size()));
}

cf::ExperienceTable& Controller::table(int agent) {
  return **store_.table(cf::task_agents()[static_cast<size_t>(agent)].name);
}

Status Controller::post(int rank, Job job, Message m) {
  m.arg2 = step_;  // for the worker's trace
  CT_RETURN_IF_ERROR(outbox_.post(rank, m));
  jobs_[static_cast<size_t>(rank)].push_back(std::move(job));
  return Status::ok();
}

Status Controller::ensure_weights(int rank, int agent) {
  auto& cached = cached_[static_cast<size_t>(rank)];
  auto it = cached.find(agent);
  if (it != cached.end() && it->second == version_[static_cast<size_t>(agent)]) return Status::ok();
  Message m;
  m.kind = Kind::kLoad;
  m.agent = agent;
  m.version = version_[static_cast<size_t>(agent)];
  m.f64 = weights_[static_cast<size_t>(agent)];
  cached[agent] = m.version;
  ++report_.weight_loads;
  return post(rank, Job{Kind::kLoad, agent, {}, -1}, m);
}

int Controller::new_sample(int64_t input, int trajectory, int turn) {
  const cf::Problem problem = cf::make_problem(o_.seed, input);
  std::vector<std::vector<int64_t>> earlier;
  for (int t = 0; t < turn; ++t) {
    earlier.push_back(samples_[static_cast<size_t>(sample_of_.at({input, trajectory, t}))].response);
  }
  Sample s;
  s.id = cf::SampleId{input, turn, trajectory};
  s.agent = turn;
  s.prompt = cf::task_prompt(problem, turn, earlier);
  s.budget = cf::task_budget(o_.seed, turn, input, trajectory);
  // The key: which response this sample gets, the same in every framework.
  s.key = mix64(mix64(static_cast<uint64_t>(step_) * 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(input)) ^
                (static_cast<uint64_t>(turn) << 32 | static_cast<uint64_t>(trajectory)));
  samples_.push_back(std::move(s));
  const int index = static_cast<int>(samples_.size()) - 1;
  sample_of_[{input, trajectory, turn}] = index;
  return index;
}

void Controller::make_ready(int sample) {
  const int agent = samples_[static_cast<size_t>(sample)].agent;
  if (balancer_) {
    const int instance = balancer_->dispatch(agent);
    queue_[static_cast<size_t>(instance)].push_back(sample);
  } else {
    pending_[static_cast<size_t>(agent)].push_back(sample);
  }
}

Status Controller::dispatch_generate(int rank, int agent, std::vector<int> samples, int instance) {
  CT_RETURN_IF_ERROR(ensure_weights(rank, agent));
  std::vector<int64_t> payload;
  for (int i : samples) {
    const Sample& s = samples_[static_cast<size_t>(i)];
    payload.push_back(static_cast<int64_t>(s.key));
    payload.push_back(s.budget);
    payload.push_back(cf::task_agents()[static_cast<size_t>(agent)].stops_at_end ? 1 : 0);
    payload.push_back(static_cast<int64_t>(s.prompt.size()));
    payload.insert(payload.end(), s.prompt.begin(), s.prompt.end());
  }
  Message m;
  m.kind = Kind::kGenerate;
  m.agent = agent;
  m.version = version_[static_cast<size_t>(agent)];
  m.count = static_cast<int64_t>(samples.size());
  m.i64 = at::tensor(payload, at::kLong);
  return post(rank, Job{Kind::kGenerate, agent, std::move(samples), instance}, m);
}

Status Controller::dispatch_train(int rank, int agent, const std::vector<cf::SampleId>& ids) {
  cf::ExperienceTable& t = table(agent);
  const int64_t version = version_[static_cast<size_t>(agent)];
  std::vector<at::Tensor> longs, doubles;
  std::vector<int> indices;
  for (const cf::SampleId& id : ids) {
    // The trainer reads at its own version: a row of another policy is refused.
    auto ref = t.get(id, version, "response");
    if (!ref.is_ok()) return ref.status();
    auto adv = t.get(id, version, "advantage");
    if (!adv.is_ok()) return adv.status();
    const int index = static_cast<int>(std::get<cf::TensorRef>(*ref).handle);
    const Sample& s = samples_[static_cast<size_t>(index)];
    std::vector<int64_t> tokens = s.prompt;
    tokens.insert(tokens.end(), s.response.begin(), s.response.end());
    longs.push_back(at::tensor(std::vector<int64_t>{static_cast<int64_t>(tokens.size()),
                                                    static_cast<int64_t>(s.prompt.size()), static_cast<int64_t>(s.key)},
                               at::kLong));
    longs.push_back(at::tensor(tokens, at::kLong));
    longs.push_back(s.topk_ids.reshape(-1));
    doubles.push_back(at::full({1}, std::get<double>(*adv), at::kDouble));
    doubles.push_back(s.logp);
    doubles.push_back(s.topk_logp.reshape(-1));
    indices.push_back(index);
  }
  Message m;
  m.kind = Kind::kTrain;
  m.agent = agent;
  m.version = version;
  m.count = static_cast<int64_t>(ids.size());
  m.arg1 = o_.topk;
  m.i64 = at::cat(longs);
  m.f64 = at::cat(doubles);
  sent_[static_cast<size_t>(agent)] += static_cast<int>(ids.size());
  return post(rank, Job{Kind::kTrain, agent, std::move(indices), -1}, m);
}

Status Controller::dispatch_step(const std::vector<int>& ranks, int agent) {
  int64_t mask = 0;
  for (int r : ranks)
    mask |= int64_t{1} << r;
  double scale = 1.0 / (o_.queries * o_.group);
  if (o_.token_normalised) {
    int64_t tokens = 0;
    for (const Sample& s : samples_)
      tokens += s.agent == agent ? static_cast<int64_t>(s.response.size()) : 0;
    scale = 1.0 / static_cast<double>(std::max<int64_t>(tokens, 1));
  }
  step_sent_[static_cast<size_t>(agent)] = true;
  for (int r : ranks) {
    Message m;
    m.kind = Kind::kStep;
    m.agent = agent;
    m.arg1 = mask;
    m.f64 = at::full({1}, scale, at::kDouble);
    CT_RETURN_IF_ERROR(post(r, Job{Kind::kStep, agent, {}, -1}, m));
  }
  return Status::ok();
}

Status Controller::swap_in(int rank, int agent) {
  Message m;
  m.kind = Kind::kSwapIn;
  m.agent = agent;
  m.f64 = host_state_[static_cast<size_t>(agent)];
  if (separates_trainers(o_.framework)) {
    host_state_[static_cast<size_t>(agent)] = at::Tensor();  // it lives on the trainer now
    holder_[static_cast<size_t>(agent)] = rank;
    ++report_.swaps;
  }
  return post(rank, Job{Kind::kSwapIn, agent, {}, -1}, m);
}

Status Controller::swap_out(int rank, int agent) {
  Message m;
  m.kind = Kind::kSwapOut;
  m.agent = agent;
  holder_[static_cast<size_t>(agent)] = -1;  // on its way to the host (kState)
  return post(rank, Job{Kind::kSwapOut, agent, {}, -1}, m);
}

std::vector<int> Controller::marti_trainers(int agent) const {
  std::vector<int> ranks;
  if (workers_ < kAgents) return {1 + agent % workers_};
  for (int r = 1; r <= workers_; ++r) {
    if ((r - 1) % kAgents == agent) ranks.push_back(r);
  }
  return ranks;
}

Status Controller::train_sharded(const std::vector<int>& ranks, int agent) {
  const int64_t version = version_[static_cast<size_t>(agent)];
  std::vector<cf::SampleId> ids = table(agent).take(version, static_cast<size_t>(o_.queries * o_.group), true);
  if (ids.size() != static_cast<size_t>(o_.queries * o_.group)) {
    return Status::internal("flexmarl " + cf::task_agents()[static_cast<size_t>(agent)].name + ": " +
                            std::to_string(ids.size()) + " complete rows at version " + std::to_string(version) +
                            " when training starts");
  }
  const size_t shards = ranks.size();
  for (size_t k = 0; k < shards; ++k) {
    const size_t begin = ids.size() * k / shards, end = ids.size() * (k + 1) / shards;
    for (size_t i = begin; i < end; i += static_cast<size_t>(o_.micro_batch)) {
      const size_t j = std::min(end, i + static_cast<size_t>(o_.micro_batch));
      CT_RETURN_IF_ERROR(dispatch_train(ranks[k], agent, std::vector<cf::SampleId>(ids.begin() + i, ids.begin() + j)));
    }
  }
  return dispatch_step(ranks, agent);
}

Status Controller::schedule_sync() {
  const int batch = o_.queries * o_.group;
  for (;;) {
    if (phase_ < kAgents) {  // rollout of turn phase_, on every worker
      if (generated_[static_cast<size_t>(phase_)] == batch) {
        ++phase_;
        phase_started_ = false;
        continue;
      }
      // The turn starts once every request of it is ready (the previous turn
      // is done); idle workers then take up to --rollout-batch requests each.
      std::deque<int>& ready = pending_[static_cast<size_t>(phase_)];
      if (!phase_started_ && static_cast<int>(ready.size()) == batch) phase_started_ = true;
      if (!phase_started_) return Status::ok();
      for (int r = 1; r <= workers_ && !ready.empty(); ++r) {
        if (!idle(r)) continue;
        std::vector<int> take;
        while (!ready.empty() && take.size() < static_cast<size_t>(o_.rollout_batch)) {
          take.push_back(ready.front());
          ready.pop_front();
        }
        CT_RETURN_IF_ERROR(dispatch_generate(r, phase_, std::move(take)));
      }
      return Status::ok();
    }
    if (phase_ < 2 * kAgents) {  // training of agent phase_ - 3, on every worker
      const int agent = phase_ - kAgents;
      if (published_[static_cast<size_t>(agent)]) {
        ++phase_;
        phase_started_ = false;
        continue;
      }
      if (!phase_started_) {
        std::vector<int> ranks;
        for (int r = 1; r <= workers_; ++r)
          ranks.push_back(r);
        CT_RETURN_IF_ERROR(train_sharded(ranks, agent));
        phase_started_ = true;
      }
      return Status::ok();
    }
    return Status::ok();
  }
}

Status Controller::schedule_marti() {
  const int batch = o_.queries * o_.group;
  bool rolled_out = true;
  for (int a = 0; a < kAgents; ++a)
    rolled_out = rolled_out && generated_[static_cast<size_t>(a)] == batch;
  if (!rolled_out) {
    // Centralised rollout: every idle worker takes the agent with the most ready requests.
    for (int r = 1; r <= workers_; ++r) {
      if (!idle(r)) continue;
      int best = -1;
      for (int a = 0; a < kAgents; ++a) {
        if (!pending_[static_cast<size_t>(a)].empty() &&
            (best < 0 || pending_[static_cast<size_t>(a)].size() > pending_[static_cast<size_t>(best)].size())) {
          best = a;
        }
      }
      if (best < 0) break;
      int idle_workers = 0;
      for (int q = 1; q <= workers_; ++q)
        idle_workers += idle(q) ? 1 : 0;
      std::deque<int>& ready = pending_[static_cast<size_t>(best)];
      const size_t n =
          std::min<size_t>(static_cast<size_t>(o_.rollout_batch), (ready.size() + idle_workers - 1) / idle_workers);
      std::vector<int> take(ready.begin(), ready.begin() + static_cast<std::ptrdiff_t>(n));
      ready.erase(ready.begin(), ready.begin() + static_cast<std::ptrdiff_t>(n));
      CT_RETURN_IF_ERROR(dispatch_generate(r, best, std::move(take)));
    }
    return Status::ok();
  }
  if (!training_started_) {  // the barrier is behind us: the agents train side by side
    training_started_ = true;
    for (int a = 0; a < kAgents; ++a)
      CT_RETURN_IF_ERROR(train_sharded(marti_trainers(a), a));
  }
  return Status::ok();
}

Status Controller::schedule_flexmarl() {
  const int batch = o_.queries * o_.group;
  const bool balance = o_.framework != Framework::kNoBalance;
  const bool micro_async = o_.framework != Framework::kNoAsync;
  // Rollout: hierarchical balancing, then every idle instance takes its queue.
  if (balance) {
    for (const cf::Migration& mv : balancer_->balance_within_agents()) {
      std::deque<int>& from = queue_[static_cast<size_t>(mv.from_instance)];
      std::deque<int>& to = queue_[static_cast<size_t>(mv.to_instance)];
      for (int k = 0; k < mv.requests && !from.empty(); ++k) {
        to.push_back(from.back());
        from.pop_back();
      }
      ++report_.migrations;
    }
    if (balancer_->balance_across_agents()) ++report_.reassignments;
  }
  for (size_t i = 0; i < queue_.size(); ++i) {
    const int rank = instance_rank_[i];
    if (queue_[i].empty() || !idle(rank)) continue;
    const int agent = balancer_->instances()[i].agent;
    std::vector<int> take;
    while (!queue_[i].empty() && take.size() < static_cast<size_t>(o_.rollout_batch)) {
      take.push_back(queue_[i].front());
      queue_[i].pop_front();
      balancer_->start(static_cast<int>(i));
    }
    CT_RETURN_IF_ERROR(dispatch_generate(rank, agent, std::move(take), static_cast<int>(i)));
  }
  // Training: a micro-batch goes out as soon as its rows are complete (their
  // groups rewarded, advantages fixed), to the trainer holding the agent.
  const int first_trainer = workers_ - o_.trainers + 1;
  for (int a = 0; a < kAgents; ++a) {
    const size_t ai = static_cast<size_t>(a);
    const int64_t version = version_[ai];
    for (;;) {
      const cf::ExperienceTable::Counts c = table(a).counts(version);
      const size_t untaken = c.complete - c.taken;
      const bool all_complete = sent_[ai] + static_cast<int>(untaken) == batch;
      if (untaken == 0 || (!micro_async && !all_complete)) break;
      if (untaken < static_cast<size_t>(o_.micro_batch) && !all_complete) break;
      int rank = holder_[ai];
      if (rank < 0) {
        if (!host_state_[ai].defined()) break;  // still on its way back from another trainer
        // A free trainer: one holding nothing, else one whose agent has nothing in flight.
        int free = -1;
        for (int r = first_trainer; r <= workers_ && free < 0; ++r) {
          if (!idle(r)) continue;
          bool holds = false;
          for (int b = 0; b < kAgents; ++b)
            holds = holds || holder_[static_cast<size_t>(b)] == r;
          if (!holds) free = r;
        }
        for (int r = first_trainer; r <= workers_ && free < 0; ++r) {
          // Never an agent whose whole batch is trained but not yet stepped.
          bool pinned = false;
          for (int b = 0; b < kAgents; ++b) {
            const size_t bi = static_cast<size_t>(b);
            pinned = pinned || (holder_[bi] == r && sent_[bi] == batch && !step_sent_[bi]);
          }
          if (idle(r) && !pinned) free = r;
        }
        if (free < 0) break;
        for (int b = 0; b < kAgents; ++b) {
          if (holder_[static_cast<size_t>(b)] == free) CT_RETURN_IF_ERROR(swap_out(free, b));
        }
        CT_RETURN_IF_ERROR(swap_in(free, a));
        rank = free;
      }
      const std::vector<cf::SampleId> ids =
          table(a).take(version, std::min<size_t>(untaken, static_cast<size_t>(o_.micro_batch)), true);
      CT_RETURN_IF_ERROR(dispatch_train(rank, a, ids));
    }
    if (sent_[ai] == batch && trained_[ai] == batch && !step_sent_[ai] && holder_[ai] >= 0) {
      CT_RETURN_IF_ERROR(dispatch_step({holder_[ai]}, a));
    }
  }
  return Status::ok();
}

Status Controller::schedule() {
  switch (o_.framework) {
    case Framework::kSync:
      return schedule_sync();
    case Framework::kMarti:
      return schedule_marti();
    default:
      return schedule_flexmarl();
  }
}

Status Controller::reward(int sample, double value) {
  Sample& s = samples_[static_cast<size_t>(sample)];
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
    Sample& m = samples_[static_cast<size_t>(members[k])];
    m.advantage = (*advantages)[k];
    CT_RETURN_IF_ERROR(table(m.agent).put(m.id, m.version, "advantage", m.advantage));
  }
  return Status::ok();
}

Status Controller::on_generated(int sample) {
  const Sample s = samples_[static_cast<size_t>(sample)];
  const cf::Problem problem = cf::make_problem(o_.seed, s.id.input);
  const int64_t input = s.id.input;
  const int j = s.id.trajectory;
  if (s.id.turn < kAgents - 1) make_ready(new_sample(input, j, s.id.turn + 1));
  if (s.id.turn == 1) {
    const double r = cf::solver_reward(problem, s.response);
    CT_RETURN_IF_ERROR(reward(sample_of_.at({input, j, 0}), r));
    CT_RETURN_IF_ERROR(reward(sample, r));
  } else if (s.id.turn == 2) {
    std::vector<std::vector<int64_t>> responses;
    for (int t = 0; t < kAgents; ++t)
      responses.push_back(samples_[static_cast<size_t>(sample_of_.at({input, j, t}))].response);
    CT_RETURN_IF_ERROR(reward(sample, cf::task_rewards(problem, responses)[2]));
  }
  return Status::ok();
}

Status Controller::handle(int rank, Message& m) {
  std::deque<Job>& jobs = jobs_[static_cast<size_t>(rank)];
  if (jobs.empty() || !answers(jobs.front().kind, m.kind)) {
    return Status::internal(
        std::string("flexmarl controller: unexpected ") + kind_name(m.kind) + " from rank " + std::to_string(rank) +
        (jobs.empty() ? std::string(" with no job") : " for " + std::string(kind_name(jobs.front().kind))));
  }
  Job job = std::move(jobs.front());
  jobs.pop_front();
  const size_t a = static_cast<size_t>(job.agent);
  switch (m.kind) {
    case Kind::kGenerated: {
      int64_t li = 0, di = 0;
      const int64_t k = o_.topk;
      for (int index : job.samples) {
        Sample& s = samples_[static_cast<size_t>(index)];
        const int64_t r = m.i64[li++].item<int64_t>();
        const int64_t positions = static_cast<int64_t>(s.prompt.size()) + r - 1;
        const at::Tensor resp = m.i64.slice(0, li, li + r);
        li += r;
        s.response.assign(resp.data_ptr<int64_t>(), resp.data_ptr<int64_t>() + r);
        s.topk_ids = m.i64.slice(0, li, li + positions * k).view({positions, k}).clone();
        li += positions * k;
        s.logp = m.f64.slice(0, di, di + positions).clone();
        di += positions;
        s.topk_logp = m.f64.slice(0, di, di + positions * k).view({positions, k}).clone();
        di += positions * k;
        s.version = m.version;
        // The store's version check: a rollout that ran an older policy than
        // the published one (a late weight load) is refused here.
        CT_RETURN_IF_ERROR(table(s.agent).insert(s.id, m.version).with_context("rank " + std::to_string(rank)));
        CT_RETURN_IF_ERROR(table(s.agent).put(s.id, m.version, "response", cf::TensorRef{0, index, {r}, "int64"}));
        ++generated_[a];
        report_.steps.back().generated_tokens += r;
        if (job.instance >= 0) balancer_->finish(job.instance);
        CT_RETURN_IF_ERROR(on_generated(index));
      }
      break;
    }
    case Kind::kTrained:
      for (int index : job.samples) {
        CT_RETURN_IF_ERROR(table(job.agent).mark_trained(samples_[static_cast<size_t>(index)].id, version_[a]));
      }
      trained_[a] += static_cast<int>(job.samples.size());
      break;
    case Kind::kPublished:
      weights_[a] = m.f64.slice(0, 0, m.f64.numel() / 2).clone();
      gradients_[a] = m.f64.slice(0, m.f64.numel() / 2).clone();
      version_[a] = m.version;
      CT_RETURN_IF_ERROR(table(job.agent).publish(m.version));
      published_[a] = true;
      break;
    case Kind::kState:
      host_state_[a] = m.f64;
      break;
    default:
      break;
  }
  return Status::ok();
}

void Controller::allocate_instances() {
  // Agent-centric allocation at the step's start: rollout instances in
  // proportion to each agent's decode work this step (the sum of its length
  // budgets, known up front), at least one each, by largest remainder; the
  // balancer moves them during the step.
  std::array<double, kAgents> work{};
  for (int64_t q = 0; q < o_.queries; ++q) {
    for (int j = 0; j < o_.group; ++j) {
      for (int t = 0; t < kAgents; ++t) {
        work[static_cast<size_t>(t)] += cf::task_budget(o_.seed, t, static_cast<int64_t>(step_) * o_.queries + q, j);
      }
    }
  }
  const int instances = static_cast<int>(queue_.size());
  double total = 0;
  for (double w : work)
    total += w;
  std::array<int, kAgents> target{};
  std::array<double, kAgents> remainder{};
  int given = 0;
  for (int a = 0; a < kAgents; ++a) {
    const double share = (instances - kAgents) * work[static_cast<size_t>(a)] / total;
    target[static_cast<size_t>(a)] = 1 + static_cast<int>(share);
    remainder[static_cast<size_t>(a)] = share - static_cast<int>(share);
    given += target[static_cast<size_t>(a)];
  }
  while (given < instances) {
    int best = 0;
    for (int a = 1; a < kAgents; ++a) {
      if (remainder[static_cast<size_t>(a)] > remainder[static_cast<size_t>(best)]) best = a;
    }
    ++target[static_cast<size_t>(best)];
    remainder[static_cast<size_t>(best)] = -1;
    ++given;
  }
  // Move instances from agents above their target to agents below it.
  for (int i = 0; i < instances; ++i) {
    const int from = balancer_->instances()[static_cast<size_t>(i)].agent;
    if (balancer_->instance_count(from) <= target[static_cast<size_t>(from)]) continue;
    for (int to = 0; to < kAgents; ++to) {
      if (balancer_->instance_count(to) < target[static_cast<size_t>(to)] && balancer_->assign(i, to)) break;
    }
  }
}

Status Controller::run_step(int step) {
  step_ = step;
  samples_.clear();
  sample_of_.clear();
  generated_ = {};
  sent_ = {};
  trained_ = {};
  step_sent_ = {};
  published_ = {};
  phase_ = 0;
  phase_started_ = false;
  training_started_ = false;
  report_.steps.emplace_back();
  const double t0 = tracer_.now_us();
  if (balancer_) allocate_instances();
  for (int64_t q = 0; q < o_.queries; ++q) {
    for (int j = 0; j < o_.group; ++j)
      make_ready(new_sample(static_cast<int64_t>(step) * o_.queries + q, j, 0));
  }
  for (;;) {
    CT_RETURN_IF_ERROR(schedule());
    bool done = true;
    for (int a = 0; a < kAgents; ++a)
      done = done && published_[static_cast<size_t>(a)];
    if (done) break;
    Message m;
    auto rank = recv_any_message(comm_, world_, &m);
    if (!rank.is_ok()) return rank.status();
    CT_RETURN_IF_ERROR(handle(*rank, m));
    outbox_.reap();
  }
  StepReport& r = report_.steps.back();
  r.seconds = (tracer_.now_us() - t0) / 1e6;
  std::array<double, kAgents> sum{};
  for (const Sample& s : samples_)
    sum[static_cast<size_t>(s.agent)] += s.reward;
  for (int a = 0; a < kAgents; ++a)
    r.mean_reward[static_cast<size_t>(a)] = sum[static_cast<size_t>(a)] / (o_.queries * o_.group);
  traces::Event e;
  e.name = "step " + std::to_string(step);
  e.category = traces::Category::kHost;
  e.ts_us = t0;
  e.dur_us = r.seconds * 1e6;
  e.step = step;
  e.cost_key = "flexmarl/step";
  tracer_.record(std::move(e));
  return Status::ok();
}

Status Controller::stop_workers(bool abort, ControllerReport* report) {
  for (int r = 1; r <= workers_; ++r) {
    Message m;
    m.kind = Kind::kStop;
    m.arg1 = abort ? 1 : 0;
    CT_RETURN_IF_ERROR(post(r, Job{Kind::kStop, 0, {}, -1}, m));
  }
  int stopped = 0;
  while (stopped < workers_) {
    Message m;
    auto rank = recv_any_message(comm_, world_, &m);
    if (!rank.is_ok()) return rank.status();
    std::deque<Job>& jobs = jobs_[static_cast<size_t>(*rank)];
    if (!jobs.empty()) jobs.pop_front();
    if (m.kind == Kind::kStopped) {
      ++stopped;
      if (m.f64.numel() >= 1) report->worker_cpu_s += m.f64[0].item<double>();
    }
  }
  return outbox_.flush();
}

StatusOr<ControllerReport> Controller::run() {
  for (int a = 0; a < kAgents; ++a) {
    CT_RETURN_IF_ERROR(store_.add_agent(cf::task_agents()[static_cast<size_t>(a)].name, kFields));
    auto model = make_task_model(a, o_.seed);
    if (!model.is_ok()) return model.status();
    AgentTrainer fresh(*model, o_.adam, o_.loss);
    weights_[static_cast<size_t>(a)] = flat_params(fresh.model());
    host_state_[static_cast<size_t>(a)] = fresh.pack_state();
  }
  if (!separates_trainers(o_.framework)) {
    // Colocated: the trainers' state stays resident where the agent trains.
    for (int a = 0; a < kAgents; ++a) {
      std::vector<int> ranks = o_.framework == Framework::kMarti ? marti_trainers(a) : std::vector<int>{};
      if (o_.framework == Framework::kSync) {
        for (int r = 1; r <= workers_; ++r)
          ranks.push_back(r);
      }
      for (int r : ranks)
        CT_RETURN_IF_ERROR(swap_in(r, a));
    }
  } else {
    const int rollout = workers_ - o_.trainers;
    std::vector<int> per_agent(kAgents, rollout / kAgents);
    for (int a = 0; a < rollout % kAgents; ++a)
      ++per_agent[static_cast<size_t>(a)];
    auto balancer = cf::LoadBalancer::create(per_agent, o_.load_gap);
    if (!balancer.is_ok()) return balancer.status();
    balancer_ = std::move(*balancer);
    for (int i = 0; i < rollout; ++i)
      instance_rank_.push_back(1 + i);
    queue_.resize(static_cast<size_t>(rollout));
  }
  for (int step = 0; step < o_.steps; ++step) {
    Status s = run_step(step);
    if (!s.is_ok()) {
      ControllerReport ignored;
      (void)stop_workers(true, &ignored);
      return s;
    }
  }
  CT_RETURN_IF_ERROR(stop_workers(false, &report_));
  report_.weights = weights_;
  report_.gradients = gradients_;
  return report_;
}

}  // namespace clustertwin::real::flexmarl
