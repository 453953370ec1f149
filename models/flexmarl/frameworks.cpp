#include "models/flexmarl/frameworks.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/text.h"

namespace clustertwin::models::flexmarl {
namespace {

constexpr int kBf16Bytes = 2;
constexpr double kKvShareOfMemory = 0.5;  // inference_tp: half of each device left for the KV cache
constexpr double kUsableMemory = 0.9;     // decode_slots: the engine's usable share of device memory
constexpr double kTrainStateShare = 0.6;  // training_group: Adam state in 60% of each device

int smallest_power_of_two_at_least(double x) {
  int p = 1;
  while (p < x && p < (1 << 20))
    p *= 2;
  return p;
}

double normal_cdf(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0));
}

// The standard normal's p-quantile, by bisection on normal_cdf.
double normal_quantile(double p) {
  double lo = -10, hi = 10;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    (normal_cdf(mid) < p ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace

std::string_view framework_name(Framework framework) {
  switch (framework) {
    case Framework::kSync:
      return "sync";
    case Framework::kMarti:
      return "marti";
    case Framework::kFlexMarl:
      return "flexmarl";
    case Framework::kNoBalance:
      return "flexmarl-nobalance";
    case Framework::kNoAsync:
      return "flexmarl-noasync";
  }
  return "?";
}

const std::vector<Framework>& all_frameworks() {
  static const std::vector<Framework> all = {Framework::kSync, Framework::kMarti, Framework::kFlexMarl,
                                             Framework::kNoBalance, Framework::kNoAsync};
  return all;
}

std::optional<Framework> framework_from_name(std::string_view name) {
  for (Framework f : all_frameworks()) {
    if (framework_name(f) == name) return f;
  }
  return std::nullopt;
}

StatusOr<std::vector<Framework>> parse_frameworks(const std::string& text) {
  if (text == "all") return all_frameworks();
  std::vector<Framework> out;
  for (const std::string& part : split_commas(text)) {
    std::optional<Framework> f = framework_from_name(part);
    if (!f) {
      return Status::invalid_argument("framework " + quote_for_message(part) +
                                      ": unknown framework (known: sync, marti, flexmarl, flexmarl-nobalance, "
                                      "flexmarl-noasync, or all)");
    }
    if (std::find(out.begin(), out.end(), *f) == out.end()) out.push_back(*f);
  }
  if (out.empty()) return Status::invalid_argument("framework " + quote_for_message(text) + ": no framework named");
  return out;
}

bool disaggregated(Framework framework) {
  return framework != Framework::kSync;
}

double weight_bytes(const spec::LlmSpec& model) {
  return static_cast<double>(model.params()) * kBf16Bytes;
}

double training_state_bytes(const spec::LlmSpec& model) {
  return static_cast<double>(model.params()) * spec::LlmSpec::kTrainingBytesPerParam;
}

EngineEfficiency engine_efficiency(const EngineEfficiency& efficiency, Framework framework) {
  EngineEfficiency e = efficiency;
  if (framework == Framework::kSync) e.decode = efficiency.sync_decode;
  return e;
}

int inference_tp(const spec::LlmSpec& model, const DeviceFacts& device) {
  const int narrowest = smallest_power_of_two_at_least(weight_bytes(model) / (kKvShareOfMemory * device.memory_bytes));
  int best = narrowest;
  double best_s = 0;
  for (int tp = narrowest; tp <= std::max(narrowest, device.devices_per_node); tp *= 2) {
    const double token_s = weight_bytes(model) / (tp * device.memory_bandwidth) + tp_exchange_s(model, tp, device);
    if (tp == narrowest || token_s < best_s) best = tp, best_s = token_s;
  }
  return best;
}

double tp_exchange_s(const spec::LlmSpec& model, int tp, const DeviceFacts& device) {
  return 2.0 * static_cast<double>(model.layers) * 2 * (tp - 1) * device.link_latency_s;
}

int training_group(const spec::LlmSpec& model, double device_memory) {
  return smallest_power_of_two_at_least(training_state_bytes(model) / (kTrainStateShare * device_memory));
}

int decode_slots(const spec::LlmSpec& model, int tp, double device_memory, int context_tokens) {
  const double free_bytes = kUsableMemory * device_memory * tp - weight_bytes(model);
  const double per_sequence = static_cast<double>(model.kv_bytes_per_token(kBf16Bytes)) * std::max(1, context_tokens);
  return std::max(1, static_cast<int>(std::floor(free_bytes / per_sequence)));
}

double decode_iteration_s(const spec::LlmSpec& model, int tp, const DeviceFacts& device,
                          const EngineEfficiency& efficiency, double context_tokens) {
  const double bytes = weight_bytes(model) + static_cast<double>(model.kv_bytes_per_token(kBf16Bytes)) * context_tokens;
  return bytes / tp / (device.memory_bandwidth * efficiency.decode) + tp_exchange_s(model, tp, device);
}

double prefill_s(const spec::LlmSpec& model, int tp, const DeviceFacts& device, const EngineEfficiency& efficiency,
                 double tokens) {
  // Token t attends to the t before it: the mean context is half the prompt.
  const double flops = tokens * model.forward_flops_per_token(static_cast<int64_t>(tokens / 2));
  return flops / (tp * device.peak_flops * efficiency.prefill);
}

bool trains_with_recomputation(const spec::LlmSpec& model, int tokens, double device_memory) {
  const double activations = transformer::kActivationBytesPerTokenAndHidden * tokens *
                             static_cast<double>(model.hidden) * static_cast<double>(model.layers);
  return activations > (1 - kTrainStateShare) * device_memory;
}

double sample_train_s(const spec::LlmSpec& model, int prompt, int response, const DeviceFacts& device) {
  const int tokens = prompt + response;
  const transformer::StackWork work = transformer::sequence_work(transformer::from_llm_spec(model),
                                                                 static_cast<double>(tokens), /*causal=*/true, device);
  const transformer::PassSeconds passes = transformer::stack_passes(work, 1, false, device);
  // The policy's forward and backward; the old and the reference policy's log-probabilities a forward each; the
  // forward again in backward when the activations do not fit.
  const double recomputed = trains_with_recomputation(model, tokens, device.memory_bytes) ? passes.forward : 0;
  return passes.forward + passes.backward + 2 * passes.forward + recomputed;
}

double train_s(double sample_seconds, int devices) {
  return sample_seconds / devices;
}

double optimizer_s(const spec::LlmSpec& model, int devices, const DeviceFacts& device) {
  return transformer::adam_seconds(static_cast<double>(model.params()) / devices, device);
}

std::vector<double> expected_longest_response_tokens(const Workload& workload) {
  // The longest of B draws sits near the 1 - 1 / (B + 1) quantile.
  const double lo = normal_quantile(1.0 - 1.0 / (workload.global_batch + 1.0));
  std::vector<double> out;
  for (const AgentRole& r : workload.agents) {
    out.push_back(
        std::min(static_cast<double>(workload.max_response_tokens), r.median_response_tokens * std::exp(r.sigma * lo)));
  }
  return out;
}

std::vector<double> expected_response_tokens(const Workload& workload) {
  std::vector<double> out;
  for (const AgentRole& r : workload.agents) {
    // E[min(X, M)] for X log-normal(mu, sigma): e^(mu + sigma^2/2) Phi(b - sigma) + M (1 - Phi(b)), b = (ln M - mu) /
    // sigma.
    const double mu = std::log(r.median_response_tokens);
    const double b = (std::log(static_cast<double>(workload.max_response_tokens)) - mu) / r.sigma;
    out.push_back(std::exp(mu + r.sigma * r.sigma / 2) * normal_cdf(b - r.sigma) +
                  workload.max_response_tokens * (1 - normal_cdf(b)));
  }
  return out;
}

namespace {

// An agent's batch's training seconds on one device, expected: a sample's grow faster than linearly with its
// length (attention), so they are averaged over the length distribution (its batch-size midpoint quantiles, the
// sampler's log-normal cut at the limit) rather than taken at the mean length.
double expected_batch_train_s(const Workload& workload, int agent, const DeviceFacts& device) {
  const AgentRole& r = workload.agents[agent];
  double seconds = 0;
  for (int i = 0; i < workload.global_batch; ++i) {
    const double z = normal_quantile((i + 0.5) / workload.global_batch);
    const double tokens = std::min(static_cast<double>(workload.max_response_tokens),
                                   std::max(1.0, std::round(r.median_response_tokens * std::exp(r.sigma * z))));
    seconds += sample_train_s(r.model, r.prompt_tokens, static_cast<int>(tokens), device);
  }
  return seconds;
}

// The rest of the rollout pool (after one instance each), an instance at a time: equally (round robin) for marti
// and nobalance; for flexmarl and noasync where it shortens the predicted rollout most (agent-centric
// allocation, our reconstruction). Decode is memory-bound and an agent's rollout ends with its longest response,
// so with n instances it takes about
//   T_a(n) = longest x ((weights + in flight / n x mean context x KV bytes per token) / (tp x bandwidth x
//            efficiency) + tensor-parallel exchanges),
// and turns follow one another: the predicted rollout is the sum over turns of the turn's largest T_a.
struct RolloutPlan {
  std::vector<int> instances;
  double predicted_s = 0;
};

// T_a(n) above for each agent of a workload on a deployment's tensor parallelism.
class RolloutModel {
 public:
  RolloutModel(const Workload& workload, bool predicted, const std::vector<int>& tp, const DeviceFacts& device,
               const EngineEfficiency& efficiency)
      : workload_(workload),
        tp_(tp),
        device_(device),
        efficiency_(efficiency),
        mean_(expected_response_tokens(workload)),
        longest_(expected_longest_response_tokens(workload)),
        in_flight_(workload.agents.size(), static_cast<double>(workload.global_batch)) {
    for (const AgentRole& r : workload.agents)
      last_turn_ = std::max(last_turn_, r.turn);
    if (predicted) limit_in_flight();
  }

  int agents() const { return static_cast<int>(workload_.agents.size()); }
  int last_turn() const { return last_turn_; }
  int turn(int a) const { return workload_.agents[a].turn; }

  // Agent a's rollout on n instances.
  double agent_s(int a, int n) const {
    const AgentRole& r = workload_.agents[a];
    const double context = r.prompt_tokens + mean_[a] / 2;
    const double per_instance = in_flight_[a] / n;
    const double bytes =
        weight_bytes(r.model) + per_instance * context * static_cast<double>(r.model.kv_bytes_per_token(2));
    return longest_[a] *
           (bytes / (tp_[a] * device_.memory_bandwidth * efficiency_.decode) + tp_exchange_s(r.model, tp_[a], device_));
  }

 private:
  // Requests in flight at once per agent: the first turn's all at the start; a later turn's arrive one by one
  // as the turn before answers them (flexmarl's per-sample flow), so by Little's law about its batch x its
  // mean answer / the span it arrives over and is answered in (the earlier turn's longest answer plus its own).
  // Barrier frameworks issue a turn's whole batch at once.
  void limit_in_flight() {
    std::vector<double> turn_longest(static_cast<size_t>(last_turn_) + 1, 0.0);
    for (int a = 0; a < agents(); ++a)
      turn_longest[turn(a)] = std::max(turn_longest[turn(a)], longest_[a]);
    for (int a = 0; a < agents(); ++a) {
      const int t = turn(a);
      if (t == 0) continue;
      double before = 0;
      for (int u = t - 1; u >= 0 && before == 0; --u)
        before = turn_longest[u];
      in_flight_[a] = std::min(in_flight_[a], workload_.global_batch * mean_[a] / (before + longest_[a]));
    }
  }

  const Workload& workload_;
  const std::vector<int>& tp_;
  const DeviceFacts& device_;
  const EngineEfficiency& efficiency_;
  std::vector<double> mean_, longest_, in_flight_;
  int last_turn_ = 0;
};

// Each turn's slowest agent that fits is its candidate; a turn's gain per instance is what the
// candidate's next instance cuts from it, divided by the agents tied (within 1%) at the turn's
// slowest, which all need one before the turn ends sooner. The best turn's candidate gets it; -1 for none.
int most_gaining_agent(const RolloutModel& m, const std::vector<int>& tp, const std::vector<int>& instances, int left) {
  int best = -1;
  double best_gain = -1;
  for (int t = 0; t <= m.last_turn(); ++t) {
    int slowest = -1, tied = 0;
    double slowest_s = 0;
    for (int a = 0; a < m.agents(); ++a) {
      if (m.turn(a) != t || tp[a] > left) continue;
      const double ta = m.agent_s(a, instances[a]);
      if (slowest < 0 || ta > slowest_s) slowest = a, slowest_s = ta;
    }
    if (slowest < 0) continue;
    for (int a = 0; a < m.agents(); ++a) {
      if (m.turn(a) == t && m.agent_s(a, instances[a]) >= 0.99 * slowest_s) ++tied;
    }
    const double gain = (slowest_s - m.agent_s(slowest, instances[slowest] + 1)) / tied;
    if (gain > best_gain) best = slowest, best_gain = gain;
  }
  return best;
}

RolloutPlan plan_rollout(const Workload& workload, Framework framework, const std::vector<int>& tp, int left,
                         const DeviceFacts& device, const EngineEfficiency& efficiency) {
  const int agents = static_cast<int>(workload.agents.size());
  RolloutPlan plan;
  plan.instances.assign(agents, 1);
  for (int a = 0; a < agents; ++a)
    left -= tp[a];
  const bool predicted = framework == Framework::kFlexMarl || framework == Framework::kNoAsync;
  const RolloutModel model(workload, predicted, tp, device, efficiency);
  for (int round = 0; left > 0; ++round) {
    int best = -1;
    if (!predicted) {
      for (int k = 0; k < agents && best < 0; ++k) {
        const int a = (round + k) % agents;  // round robin: the equal split
        if (tp[a] <= left) best = a;
      }
    } else {
      best = most_gaining_agent(model, tp, plan.instances, left);
    }
    if (best < 0) break;
    plan.instances[best] += 1;
    left -= tp[best];
  }
  for (int t = 0; t <= model.last_turn(); ++t) {
    double turn_s = 0;
    for (int a = 0; a < agents; ++a) {
      if (model.turn(a) == t) turn_s = std::max(turn_s, model.agent_s(a, plan.instances[a]));
    }
    plan.predicted_s += turn_s;
  }
  return plan;
}

Status too_few_devices(int devices, int agents, const std::string& why) {
  return Status::invalid_argument("workers " + std::to_string(devices) + ": too few for " + std::to_string(agents) +
                                  " agents (" + why + ")");
}

// Colocated: each agent's engine spans all D devices (loaded when its phase starts); every agent trains
// on all D.
Status colocate(const Workload& workload, int devices, Deployment* d) {
  const int agents = static_cast<int>(workload.agents.size());
  d->rollout_devices = devices;
  for (int a = 0; a < agents; ++a) {
    d->instances.push_back(devices / d->tp[a]);
    if (d->instances.back() < 1) {
      return too_few_devices(
          devices, agents,
          "agent " + workload.agents[a].name + " needs " + std::to_string(d->tp[a]) + " per rollout instance");
    }
    if (devices < d->train_group[a]) {
      return too_few_devices(
          devices, agents,
          "agent " + workload.agents[a].name + " trains on at least " + std::to_string(d->train_group[a]) + " devices");
    }
  }
  return Status::ok();
}

// FlexMARL's co-design (our reconstruction of "agent-centric resource allocation"): as many trainer groups
// as minimise the predicted step, max(predicted rollout + the last turn's training over the pool, the
// batch's training over the pool), since the micro-batch pipeline runs the earlier turns' training under
// rollout; ties go to fewer groups. Its ablations keep its pools.
// The last turn's agents finish their samples in the rollout's last turn, so their training mostly
// follows the rollout rather than running under it.
int codesigned_trainer_groups(const Workload& workload, Framework framework, const Deployment& d, int devices,
                              int most_groups, const DeviceFacts& device, const EngineEfficiency& efficiency) {
  double training_s = 0, last_turn_s = 0;  // one group's seconds for every agent's batch, the last turn's
  int last_turn = 0;
  for (const AgentRole& r : workload.agents)
    last_turn = std::max(last_turn, r.turn);
  for (int a = 0; a < static_cast<int>(workload.agents.size()); ++a) {
    const AgentRole& r = workload.agents[a];
    const double agent_s = train_s(expected_batch_train_s(workload, a, device), d.trainer_group_devices) +
                           optimizer_s(r.model, d.trainer_group_devices, device);
    training_s += agent_s;
    if (r.turn == last_turn && last_turn > 0) last_turn_s += agent_s;
  }
  int groups = 0;
  double best_s = 0;
  for (int g = 1; g <= most_groups; ++g) {
    const RolloutPlan plan =
        plan_rollout(workload, framework, d.tp, devices - g * d.trainer_group_devices, device, efficiency);
    const double step_s = std::max(plan.predicted_s + last_turn_s / g, training_s / g);
    if (g == 1 || step_s < best_s) groups = g, best_s = step_s;
  }
  return groups;
}

}  // namespace

StatusOr<Deployment> deploy(const Workload& workload, Framework framework, int devices, const DeviceFacts& device,
                            const EngineEfficiency& efficiency) {
  const int agents = static_cast<int>(workload.agents.size());
  Deployment d;
  d.devices = devices;
  for (const AgentRole& r : workload.agents) {
    const int tp = inference_tp(r.model, device);
    d.tp.push_back(tp);
    d.train_group.push_back(training_group(r.model, device.memory_bytes));
    d.slots.push_back(
        decode_slots(r.model, tp, device.memory_bytes, r.prompt_tokens + workload.max_response_tokens / 2));
  }
  if (!disaggregated(framework)) {
    CT_RETURN_IF_ERROR(colocate(workload, devices, &d));
    return d;
  }
  d.trainer_group_devices = *std::max_element(d.train_group.begin(), d.train_group.end());
  const int one_each = std::accumulate(d.tp.begin(), d.tp.end(), 0);
  const int most_groups = (devices - one_each) / d.trainer_group_devices;
  if (most_groups < 1) {
    return too_few_devices(
        devices, agents,
        "a rollout instance per agent and a training pool of " + std::to_string(d.trainer_group_devices) + " devices");
  }
  if (framework == Framework::kMarti) {
    // MARTI: each agent has its own actor group, and all of them train at once after the rollout (its
    // MultiAgentController.step fits every agent's group, then waits for all); fewer groups, taken in turn,
    // where the devices cannot hold one per agent besides an instance each.
    d.trainer_groups = std::min(agents, most_groups);
  } else {
    d.trainer_groups = codesigned_trainer_groups(workload, framework, d, devices, most_groups, device, efficiency);
  }
  d.rollout_devices = devices - d.trainer_groups * d.trainer_group_devices;
  d.instances = plan_rollout(workload, framework, d.tp, d.rollout_devices, device, efficiency).instances;
  return d;
}

}  // namespace clustertwin::models::flexmarl
