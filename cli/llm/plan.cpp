// clustertwin plan llm: the fastest split of a transformer over N GPUs, or
// the fewest GPUs (whole nodes, doubling) whose fastest split reaches a
// tokens/s target (sim/llm/llm_search.h: candidates that fit memory ranked by
// a closed form, the best few simulated).

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <thread>

#include "cli/command.h"
#include "cli/llm/setup_flags.h"
#include "common/json.h"
#include "common/progress.h"
#include "common/text.h"
#include "models/transformer/transformer.h"
#include "sim/llm/llm_search.h"

namespace clustertwin::cli {
namespace {

struct LlmPlanArgs {
  sim::llm::LlmSetup setup = sim::llm::default_llm_setup();
  std::string platform = "h100-dgx";
  int workers = 0;
  double target = 0;  // tokens/s
  int simulate = 6;
  int parallel = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool json = false;
};

std::string split_text(const models::llm::Split& s) {
  std::string out = "tp " + std::to_string(s.tp) + ", pp " + std::to_string(s.pp) + ", dp " + std::to_string(s.dp) +
                    ", micro-batch " + std::to_string(s.micro_batch) + ", " +
                    std::string(models::llm::schedule_name(s.schedule));
  if (s.virtual_stages > 1) out += " x" + std::to_string(s.virtual_stages);
  return out + ", recompute " + std::string(models::llm::recompute_name(s.recompute));
}

std::string confirm_command(const LlmPlanArgs& a, int workers, const models::llm::Split& s) {
  const auto& m = a.setup.model;
  std::string c = "clustertwin sim llm --platform " + a.platform + " --workers " + std::to_string(workers) + " --tp " +
                  std::to_string(s.tp) + " --pp " + std::to_string(s.pp) + " --micro-batch " +
                  std::to_string(s.micro_batch) + " --global-batch " + std::to_string(s.global_batch) + " --hidden " +
                  std::to_string(m.hidden) + " --heads " + std::to_string(m.heads) + " --layers " +
                  std::to_string(m.layers) + " --seq " + std::to_string(m.seq) + " --vocab " + std::to_string(m.vocab);
  if (m.kv_heads > 0) c += " --kv-heads " + std::to_string(m.kv_heads);
  if (m.ffn > 0) c += " --ffn " + std::to_string(m.ffn);
  if (m.gated_mlp) c += " --gated-mlp";
  c += " --schedule " + std::string(models::llm::schedule_name(s.schedule));
  if (s.virtual_stages > 1) c += " --virtual-stages " + std::to_string(s.virtual_stages);
  c += " --recompute " + std::string(models::llm::recompute_name(s.recompute)) + " --zero " + std::to_string(s.zero);
  if (s.sequence_parallel) c += " --sequence-parallel";
  if (s.precision != "bf16") c += " --precision " + s.precision;
  if (s.grad_reduce != "fp32") c += " --grad-reduce " + s.grad_reduce;
  if (!a.setup.device_profile.empty()) c += " --device-profile " + a.setup.device_profile;
  return c;
}

nlohmann::ordered_json ranked_json(const sim::llm::RankedSplit& r) {
  return {{"split", sim::llm::llm_split_json(r.split)},
          {"estimate_s", r.estimate_s},
          {"step_s", r.step_s},
          {"mfu", r.mfu},
          {"tokens_per_s", r.tokens_per_s},
          {"memory_gib", r.memory_gib}};
}

void print_search(const LlmPlanArgs& a, const cluster::ClusterProfile& profile, int workers,
                  const sim::llm::SplitSearch& search) {
  std::printf("# %d GPUs of %s: %d splits fit memory; the %zu best by estimate simulated\n", workers,
              profile.name.c_str(), search.candidates, search.ranked.size());
  std::printf("rank  tp  pp   dp  mb  schedule        recompute  estimate s  step s    MFU      tokens/s  GiB/GPU\n");
  for (size_t i = 0; i < search.ranked.size(); ++i) {
    const auto& r = search.ranked[i];
    const models::llm::Split& s = r.split;
    std::string schedule(models::llm::schedule_name(s.schedule));
    if (s.virtual_stages > 1) schedule += " x" + std::to_string(s.virtual_stages);
    std::printf("%4zu %3d %3d %4d %3lld  %-15s %-9s %11.3f %7.3f %5.1f%% %13s %8.1f\n", i + 1, s.tp, s.pp, s.dp,
                static_cast<long long>(s.micro_batch), schedule.c_str(),
                std::string(models::llm::recompute_name(s.recompute)).c_str(), r.estimate_s, r.step_s, 100 * r.mfu,
                with_thousands(r.tokens_per_s).c_str(), r.memory_gib);
  }
}

// Tokens/s `workers` GPUs reach at most: every FLOP of the model at the device's highest peak of any type (MFU
// 100%). A count below the target is not searched: an unreachable target ends at once.
double throughput_bound(const LlmPlanArgs& a, const cluster::ClusterProfile& profile, int workers) {
  const models::transformer::Transformer& m = a.setup.model;
  const double per_token = models::transformer::model_flops_per_step(m, 1) / static_cast<double>(m.seq);
  double peak = 0;
  for (const auto& [type, rate] : profile.device.peak_flops)
    peak = std::max(peak, rate);
  return per_token > 0 ? workers * peak / per_token : INFINITY;
}

Status run_plan_llm(LlmPlanArgs a) {
  const auto started = std::chrono::steady_clock::now();
  if ((a.workers > 0) == (a.target > 0))
    return Status::invalid_argument("plan llm: give --workers N or --target-throughput TOKENS_PER_S (one of them)");
  if (a.simulate < 1) return Status::invalid_argument("--simulate " + std::to_string(a.simulate) + ": must be >= 1");
  auto profile = cluster::load_cluster_profile(a.platform);
  if (!profile.is_ok()) return profile.status().with_context("--platform");
  std::vector<int> ladder;
  if (a.workers > 0) {
    ladder = {a.workers};
  } else {
    for (int w = profile->devices_per_node; w <= profile->devices(); w *= 2)
      ladder.push_back(w);
  }
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (int workers : ladder) {
    if (a.target > 0 && throughput_bound(a, *profile, workers) < a.target) continue;
    if (!a.json) show_progress(false, "searching splits over %d GPUs", workers);
    auto search = sim::llm::search_splits(a.setup, *profile, workers, a.simulate, a.parallel);
    if (!a.json) show_progress(true, "searched %d GPUs", workers);
    if (!search.is_ok()) {
      if (a.target > 0 && search.status().code() == Status::Code::kInvalidArgument) continue;  // too few to fit
      return search.status();
    }
    nlohmann::ordered_json ranked = nlohmann::ordered_json::array();
    for (const auto& r : search->ranked)
      ranked.push_back(ranked_json(r));
    points.push_back({{"workers", workers}, {"candidates", search->candidates}, {"ranked", ranked}});
    if (!a.json) print_search(a, *profile, workers, *search);
    const sim::llm::RankedSplit& best = search->ranked.front();
    if (a.target > 0 && best.tokens_per_s < a.target) continue;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (a.json) {
      nlohmann::ordered_json doc{{"platform", profile->name},
                                 {"target_tokens_per_s", a.target},
                                 {"workers", workers},
                                 {"best", ranked_json(best)},
                                 {"confirm", confirm_command(a, workers, best.split)},
                                 {"searched", points},
                                 {"wall_s", wall}};
      return write_output("-", json_document(doc, 2));
    }
    std::printf("best: %s on %d GPUs: %.3f s a step, MFU %.1f%%, %s tokens/s\n", split_text(best.split).c_str(),
                workers, best.step_s, 100 * best.mfu, with_thousands(best.tokens_per_s).c_str());
    std::printf("confirm: %s\n# searched in %.1f s\n", confirm_command(a, workers, best.split).c_str(), wall);
    return Status::ok();
  }
  return Status::check_failed("plan llm: no count of GPUs up to " + std::to_string(profile->devices()) + " of " +
                              profile->name + " reaches " + with_thousands(a.target) + " tokens/s");
}

}  // namespace

void add_plan_llm(CLI::App* plan, Action* action) {
  auto a = std::make_shared<LlmPlanArgs>();
  CLI::App* cmd = plan->add_subcommand(
      "llm",
      "The fastest split (tp, pp, dp, micro-batch, schedule, recomputation) of a dense transformer over --workers "
      "GPUs, or the fewest GPUs (whole nodes, doubling) whose fastest split reaches --target-throughput tokens/s. "
      "Every split that fits the device's memory is ranked by a closed form of its step; the best --simulate are "
      "run by the twin (sim llm), which decides. Prints them, the best, and the sim llm command that confirms it. "
      "The distributed optimizer (zero 1) and sequence parallelism (tp > 1) stay on.");
  cmd->add_option("--platform", a->platform, "Shipped profile or a YAML file")->capture_default_str();
  cmd->add_option("--workers", a->workers, "GPUs to split the model over");
  cmd->add_option("--target-throughput", a->target, "Tokens/s to reach with the fewest GPUs");
  cmd->add_option("--global-batch", a->setup.split.global_batch, "Sequences per step")->capture_default_str();
  cmd->add_option("--precision", a->setup.split.precision, "bf16, fp16 or fp8")->capture_default_str();
  cmd->add_option("--grad-reduce", a->setup.split.grad_reduce, "fp32 or bf16 gradients")->capture_default_str();
  add_llm_model_flags(cmd, &a->setup);
  cmd->add_option("--simulate", a->simulate, "Candidates simulated, best by estimate first")->capture_default_str();
  cmd->add_option("--parallel", a->parallel, "Simulations at a time (default: cores)")->check(CLI::Range(1, 256));
  cmd->add_flag("--json", a->json, "Print JSON: the best split, the confirming command, every simulated split");
  cmd->callback([a, action] { *action = [a] { return in_llm_flag_words(run_plan_llm(*a)); }; });
}

}  // namespace clustertwin::cli
