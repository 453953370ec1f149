// The orchestrator's jobs: their names and sizes (the positions a rollout or
// training job computes), and posting them to ranks: weight loads, rollouts,
// training micro-batches, optimizer steps and swaps of trainer state.
#include <algorithm>
#include <string>

#include "models/flexmarl/orchestrator.h"

namespace clustertwin::models::flexmarl {

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
    return Status::internal("flexmarl " + task_agent_name(agent) + ": " + std::to_string(c.complete - c.taken) +
                            " complete rows at version " + std::to_string(version) + " when training starts");
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

}  // namespace clustertwin::models::flexmarl
