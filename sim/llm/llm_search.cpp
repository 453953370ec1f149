#include "sim/llm/llm_search.h"

#include <algorithm>
#include <cmath>

#include "models/llm/llm_plan.h"
#include "sim/core/simulator.h"

namespace clustertwin::sim::llm {

using models::llm::Recompute;
using models::llm::Schedule;
using models::llm::Split;

namespace {

// A ring all-reduce of `bytes` per member over `n` members on links of `bandwidth` bytes/s (nccl-tests' bus bytes).
double ring_seconds(double bytes, int n, double bandwidth) {
  return bandwidth > 0 ? bytes * cluster::bus_factor(models::CollectiveOp::kAllReduce, n) / bandwidth : 0;
}

// Bytes/s one GPU has to its node's others, and to other nodes.
double intra_bandwidth(const cluster::ClusterProfile& p) {
  return p.intra_node.link.bandwidth;
}
double inter_bandwidth(const cluster::ClusterProfile& p) {
  return p.nics.link.bandwidth * p.nics.per_node / p.devices_per_node;
}

}  // namespace

double estimate_step_seconds(const LlmSetup& setup, const cluster::ClusterProfile& profile) {
  const auto& m = setup.model;
  const Split& s = setup.split;
  auto rates = llm_device_rates(setup, profile);
  if (!rates.is_ok()) return INFINITY;
  const std::map<std::string, double> costs = models::llm::step_costs(m, s, *rates);
  const double chunks = static_cast<double>(models::llm::micro_batches(s)) * s.virtual_stages;
  const double activations = 2.0 * static_cast<double>(s.micro_batch * m.seq * m.hidden);
  const double exchanges = s.recompute == Recompute::kFull ? 6 : 4;  // per layer, forward + backward
  const double tp = ring_seconds(exchanges * static_cast<double>(models::llm::chunk_layers(m, s)) * activations, s.tp,
                                 intra_bandwidth(profile));
  const double pass = costs.at("llm/forward") + costs.at("llm/backward") + tp;
  const double head =
      costs.at("llm/forward_head") + costs.at("llm/backward_head") - costs.at("llm/forward") - costs.at("llm/backward");
  const double fill = (s.pp - 1) * pass;
  const double last_stage = chunks * pass + static_cast<double>(models::llm::micro_batches(s)) * head;
  // Data parallelism: the last bucket's reduction (a reduce-scatter, half an all-reduce, with zero 1) and the
  // weights' all-gather, over the node's links when the group fits in one node.
  const double parameters = models::llm::stage_parameters(m, s, 0);
  const double bw = s.tp * s.dp <= profile.devices_per_node ? intra_bandwidth(profile) : inter_bandwidth(profile);
  double dp = ring_seconds(models::llm::gradient_bytes(s) * parameters / models::llm::gradient_buckets(m, s), s.dp, bw);
  if (s.zero == 1) dp = dp / 2 + ring_seconds(2 * parameters, s.dp, bw) / 2;
  return fill + last_stage + dp + costs.at("llm/optimizer/stage0");
}

namespace {

std::vector<int> powers_of_two_up_to(int n) {
  std::vector<int> out;
  for (int v = 1; v <= n; v *= 2)
    out.push_back(v);
  return out;
}

// The schedules of a (tp, pp, micro-batch) split: 1f1b, and interleaved with each virtual-stage count that divides.
std::vector<std::pair<Schedule, int>> schedules(const models::transformer::Transformer& m, const Split& s) {
  std::vector<std::pair<Schedule, int>> out{{Schedule::kOneFOneB, 1}};
  if (s.pp < 2 || models::llm::micro_batches(s) % s.pp != 0) return out;
  for (int v : {2, 3, 4, 6, 8}) {
    if (m.layers % (int64_t{s.pp} * v) == 0) out.push_back({Schedule::kInterleaved, v});
  }
  return out;
}

}  // namespace

std::vector<Split> candidate_splits(const LlmSetup& base, const cluster::ClusterProfile& profile, int workers) {
  std::vector<Split> out;
  const auto& m = base.model;
  for (int tp : powers_of_two_up_to(std::min(workers, profile.devices_per_node))) {
    for (int pp = 1; pp <= workers / tp; ++pp) {
      if (workers % (tp * pp) != 0 || m.layers % pp != 0) continue;
      for (int64_t mb : {1, 2, 4, 8}) {
        Split s = base.split;
        s.tp = tp;
        s.pp = pp;
        s.dp = workers / (tp * pp);
        s.micro_batch = mb;
        s.zero = 1;
        s.sequence_parallel = tp > 1;
        if (s.global_batch % (mb * s.dp) != 0) continue;
        for (const auto& [schedule, v] : schedules(m, s)) {
          for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
            s.schedule = schedule;
            s.virtual_stages = v;
            s.recompute = r;
            LlmSetup setup = base;
            setup.split = s;
            if (check_llm(setup, profile, workers).is_ok()) out.push_back(s);
          }
        }
      }
    }
  }
  return out;
}

StatusOr<SplitSearch> search_splits(const LlmSetup& base, const cluster::ClusterProfile& profile, int workers,
                                    int simulate, int parallel) {
  CT_RETURN_IF_ERROR(cluster::check_worker_count(profile, workers));
  SplitSearch search;
  std::vector<std::pair<double, Split>> estimated;
  for (const Split& s : candidate_splits(base, profile, workers)) {
    LlmSetup setup = base;
    setup.split = s;
    estimated.push_back({estimate_step_seconds(setup, profile), s});
  }
  search.candidates = static_cast<int>(estimated.size());
  if (estimated.empty()) {
    return Status::invalid_argument(
        "workers " + std::to_string(workers) +
        ": no split of the model over them: tp (a power of two up to a node), pp (dividing the " +
        std::to_string(base.model.layers) + " layers) and dp must multiply to it, and fit the memory of device '" +
        profile.device.name + "' of profile '" + profile.name + "'");
  }
  std::stable_sort(estimated.begin(), estimated.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  estimated.resize(std::min<size_t>(estimated.size(), static_cast<size_t>(std::max(1, simulate))));
  std::vector<std::unique_ptr<PlanJob>> jobs;
  std::vector<SimJob> sims;
  for (const auto& [estimate, s] : estimated) {
    LlmSetup setup = base;
    setup.split = s;
    auto job = make_llm_job(setup, profile, llm_sim_options(workers));
    if (!job.is_ok()) return job.status();
    jobs.push_back(std::move(job).value());
    sims.push_back(SimJob{&jobs.back()->plan(), &jobs.back()->profile(), jobs.back()->options()});
  }
  const std::vector<StatusOr<SimResult>> results = simulate_many(sims, parallel);
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].is_ok()) return results[i].status();
    LlmSetup setup = base;
    setup.split = estimated[i].second;
    const LlmResult r = llm_result(setup, profile, *results[i]);
    search.ranked.push_back(
        {setup.split, estimated[i].first, r.step_s, r.mfu, r.tokens_per_s, r.memory.total() / kGiB});
  }
  std::stable_sort(search.ranked.begin(), search.ranked.end(),
                   [](const RankedSplit& a, const RankedSplit& b) { return a.step_s < b.step_s; });
  return search;
}

}  // namespace clustertwin::sim::llm
