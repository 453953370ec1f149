// clustertwin plan SYSTEM: capacity planning with the twin. The smallest
// configuration (workers, variant, split) that meets a throughput target,
// found by a binary search per configuration (sim/core/capacity_search.h),
// with its predicted step time and efficiency and the runner-ups.

#include <CLI/CLI.hpp>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/command.h"
#include "models/common/text.h"
#include "models/nestpipe/plans.h"
#include "sim/core/capacity_search.h"
#include "sim/core/cluster_profile.h"
#include "sim/nestpipe/nestpipe_twin.h"
#include "sim/nestpipe/paper_calibration.h"

namespace clustertwin::cli {
namespace {

struct PlanArgs {
  double target = 0;
  double min_efficiency = 0;
  std::string platform = "npu-1536";
  int max_workers = 0;  // 0: the platform's devices
  bool json = false;
  int runner_ups = 3;
  int parallel = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // nestpipe
  std::string variants = "torchrec,dbp,fwp,nestpipe,2dsp";
  std::string micro_batches = "4,8,16";
  std::string calibration = "auto";
  sim::NestPipeSetup setup;
};

// The exact runs' steps (the confirm command passes them to sim nestpipe).
constexpr int kExactWarmup = 3, kExactDrain = 2, kExactMeasured = 2;

// One NestPipe configuration: a variant and, for those that split a batch into micro-batches, the split.
struct NestPipeConfig {
  nestpipe::Variant variant;
  int micro_batches = 0;  // 0: the variant does not split
  std::string name;
};

bool splits(nestpipe::Variant v) {
  return v == nestpipe::Variant::kFwp || v == nestpipe::Variant::kNestPipe;
}

StatusOr<std::vector<NestPipeConfig>> nestpipe_configs(const PlanArgs& a) {
  std::vector<int> counts;
  for (const std::string& item : split_commas(a.micro_batches)) {
    int m = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), m);
    if (ec != std::errc() || end != item.data() + item.size() || m < 1 || a.setup.batch_per_worker % m != 0) {
      return Status::invalid_argument("--micro-batches '" + item +
                                      "': must be a whole number that divides the batch (" +
                                      std::to_string(a.setup.batch_per_worker) + ")");
    }
    counts.push_back(m);
  }
  if (counts.empty()) return Status::invalid_argument("--micro-batches: give at least one count");
  std::vector<NestPipeConfig> out;
  for (const std::string& item : split_commas(a.variants)) {
    auto v = nestpipe::variant_from_name(item);
    if (!v) {
      return Status::invalid_argument("--variants '" + item +
                                      "': unknown variant (allowed: " + nestpipe::variant_list() + ")");
    }
    if (!splits(*v)) {
      out.push_back({*v, 0, item});
      continue;
    }
    for (int m : counts) {
      out.push_back({*v, m,
                     counts.size() == 1 ? item
                                        : item + ", " + std::to_string(m) + " micro-batches of " +
                                              std::to_string(a.setup.batch_per_worker / m)});
    }
  }
  if (out.empty()) return Status::invalid_argument("--variants: give at least one variant");
  return out;
}

std::string confirm_command(const PlanArgs& a, const NestPipeConfig& c, int workers) {
  std::string s = "clustertwin sim nestpipe --platform " + a.platform + " --variant " +
                  std::string(nestpipe::variant_name(c.variant)) + " --workers " + std::to_string(workers);
  if (a.setup.model != sim::NestPipeSetup{}.model) s += " --model " + a.setup.model;
  if (a.setup.batch_per_worker != sim::NestPipeSetup{}.batch_per_worker)
    s += " --batch " + std::to_string(a.setup.batch_per_worker);
  if (c.micro_batches > 0) s += " --micro-batches " + std::to_string(c.micro_batches);
  if (a.calibration != "auto") s += " --calibration " + a.calibration;
  s += " --steps " + std::to_string(kExactWarmup + kExactDrain + kExactMeasured) + " --warmup " +
       std::to_string(kExactWarmup) + " --drain " + std::to_string(kExactDrain);
  return s;
}

Status run_plan_nestpipe(PlanArgs a) {
  const auto started = std::chrono::steady_clock::now();
  // Everything the user typed is checked before the (slow) calibration.
  CT_RETURN_IF_ERROR(sim::check_capacity_target(a.target, a.min_efficiency));
  if (a.runner_ups < 0) {
    return Status::invalid_argument("--runner-ups " + std::to_string(a.runner_ups) + ": must be at least 0");
  }
  CT_RETURN_IF_ERROR(sim::validate(a.setup));
  auto configs = nestpipe_configs(a);
  if (!configs.is_ok()) return configs.status();
  auto plain = sim::load_cluster_profile(a.platform);
  if (!plain.is_ok()) return plain.status();
  const int devices = plain->devices();
  if (a.max_workers == 0) a.max_workers = devices;
  if (a.max_workers < 1 || a.max_workers > devices) {
    return Status::invalid_argument("--max-workers " + std::to_string(a.max_workers) + ": must be in [1, " +
                                    std::to_string(devices) + "] (the devices of " + plain->name + ")");
  }
  sim::BaselineFit fit;
  std::string fit_json;
  if (a.calibration != "none") std::fprintf(stderr, "plan nestpipe: preparing %s...\n", plain->name.c_str());
  auto profile = nestpipe_profile(a.platform, a.calibration, a.setup, &fit_json, &fit);
  if (!profile.is_ok()) return profile.status();
  if (a.calibration != "none") {
    std::fprintf(stderr, "plan nestpipe: %s ready, %.0f s\n", profile->name.c_str(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }

  sim::CapacityQuery q;
  for (const NestPipeConfig& c : *configs)
    q.families.push_back(c.name);
  q.ladder = sim::node_ladder(profile->devices_per_node, a.max_workers);
  q.target_throughput = a.target;
  q.min_efficiency = a.min_efficiency;
  q.keep = 1 + a.runner_ups;
  q.progress = [started](int round, int evaluated) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::fprintf(stderr, "\rplan nestpipe: round %d, %d points simulated, %.0f s   ", round, evaluated, s);
  };
  // The estimates the search steers by: one measured step after the
  // pipelines fill. The exact runs: two measured steps, the figures the
  // answer's confirm command prints.
  auto options = [](bool exact) {
    sim::SimOptions o = sim::nestpipe_sim_options();
    o.warmup_steps = exact ? kExactWarmup : 2;
    o.drain_steps = exact ? kExactDrain : 2;
    o.steps = o.warmup_steps + o.drain_steps + (exact ? kExactMeasured : 1);
    return o;
  };
  auto evaluate = [&](const std::vector<std::pair<int, int>>& points,
                      bool exact) -> StatusOr<std::vector<sim::CapacityPoint>> {
    // One sweep per split (the key statistics depend on it), the sweeps side by side.
    std::map<int, std::vector<size_t>> by_split;
    for (size_t k = 0; k < points.size(); ++k) {
      const NestPipeConfig& c = (*configs)[points[k].first];
      by_split[c.micro_batches > 0 ? c.micro_batches : a.setup.micro_batches].push_back(k);
    }
    std::vector<std::pair<int, std::vector<size_t>>> groups(by_split.begin(), by_split.end());
    std::vector<sim::CapacityPoint> out(points.size());
    std::vector<Status> failed(groups.size(), Status::ok());
    const int threads = std::max(1, std::min<int>(a.parallel, static_cast<int>(groups.size())));
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t g = next++; g < groups.size(); g = next++) {
        const auto& [micro_batches, indices] = groups[g];
        sim::NestPipeSetup setup = a.setup;
        setup.micro_batches = micro_batches;
        sim::NestPipeSweep sweep;
        sweep.parallel = std::max(1, a.parallel / threads);
        sweep.options = options(exact);
        for (size_t k : indices)
          sweep.points.push_back({(*configs)[points[k].first].variant, points[k].second});
        auto rows = sim::run_nestpipe_sweep(setup, *profile, sweep);
        if (!rows.is_ok()) {
          failed[g] = rows.status();
          continue;
        }
        for (size_t i = 0; i < indices.size(); ++i) {
          out[indices[i]].step_s = (*rows)[i].step_ms / 1e3;
          out[indices[i]].throughput = (*rows)[i].qps;
        }
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t)
      pool.emplace_back(work);
    work();
    for (std::thread& t : pool)
      t.join();
    for (const Status& s : failed)
      CT_RETURN_IF_ERROR(s);
    return out;
  };
  auto answer = sim::search_capacity(q, evaluate);
  if (!a.json) std::fprintf(stderr, "\n");
  if (!answer.is_ok()) return answer.status();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  auto point_json = [&](const sim::CapacityPoint& p) {
    const NestPipeConfig& c = (*configs)[p.family];
    nlohmann::ordered_json j = {{"configuration", c.name},
                                {"variant", std::string(nestpipe::variant_name(c.variant))},
                                {"micro_batches", c.micro_batches > 0 ? c.micro_batches : a.setup.micro_batches},
                                {"workers", p.workers},
                                {"step_ms", p.step_s * 1e3},
                                {"samples_per_s", p.throughput},
                                {"efficiency", p.efficiency},
                                {"exact", p.exact}};
    return j;
  };
  const std::vector<sim::CapacityFamilyResult>& families = answer->families;
  const bool feasible = answer->feasible();
  if (a.json) {
    nlohmann::ordered_json j;
    j["system"] = "nestpipe";
    j["platform"] = profile->name;
    j["model"] = a.setup.model;
    j["batch_per_worker"] = a.setup.batch_per_worker;
    j["target_samples_per_s"] = a.target;
    j["min_efficiency"] = a.min_efficiency;
    j["efficiency_reference_workers"] = q.ladder.front();
    j["worker_counts"] = {{"first", q.ladder.front()}, {"last", q.ladder.back()}, {"count", q.ladder.size()}};
    j["simulated"] = answer->evaluated;
    j["exact_runs"] = answer->exact;
    j["rounds"] = answer->rounds;
    j["space"] = answer->space;
    j["wall_s"] = wall;
    j["answer"] = nullptr;
    j["runner_ups"] = nlohmann::ordered_json::array();
    j["not_meeting"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < families.size(); ++i) {
      const sim::CapacityFamilyResult& r = families[i];
      auto p = point_json(r.answer);
      if (!r.feasible()) {
        static constexpr const char* kKinds[] = {"meets", "too_few_workers", "efficiency_too_low", "outranked"};
        p = {{"configuration", (*configs)[r.family].name},
             {"reason", kKinds[static_cast<int>(r.kind)]},
             {"why_not", r.why_not},
             {"last_simulated", point_json(r.answer)}};
        if (r.kind != sim::CapacityFamilyResult::Kind::kTooLow) p["min_workers"] = r.min_workers;
        j["not_meeting"].push_back(p);
      } else if (i == 0) {
        if (r.has_below) p["below"] = point_json(r.below);
        p["confirm"] = confirm_command(a, (*configs)[r.family], r.answer.workers);
        j["answer"] = p;
      } else {
        j["runner_ups"].push_back(p);
      }
    }
    CT_RETURN_IF_ERROR(write_output("-", j.dump(1) + "\n"));
  } else {
    std::printf("# clustertwin plan nestpipe: %s, batch %d per worker, on %s%s\n", a.setup.model.c_str(),
                a.setup.batch_per_worker, profile->name.c_str(),
                fit_json.empty() ? "" : " (TorchRec baseline calibrated to the paper)");
    std::printf(
        "# target %s samples/s%s; efficiency: per-worker throughput against one node (%d workers) of the "
        "same configuration\n",
        with_thousands(a.target).c_str(),
        a.min_efficiency > 0 ? (", efficiency at least " + format_number("%.1f", 100 * a.min_efficiency) + "%").c_str()
                             : "",
        q.ladder.front());
    std::printf(
        "# searched %zu configurations x %zu worker counts (%s to %s, one node apart): %d of %d points "
        "simulated in %d rounds, %.1f s\n\n",
        q.families.size(), q.ladder.size(), with_thousands(q.ladder.front()).c_str(),
        with_thousands(q.ladder.back()).c_str(), answer->evaluated, answer->space, answer->rounds, wall);
    if (feasible) {
      const sim::CapacityFamilyResult& best = families.front();
      std::printf("answer: %s at %s workers\n", (*configs)[best.family].name.c_str(),
                  with_thousands(best.answer.workers).c_str());
      std::printf("  step %.1f ms, %s samples/s, efficiency %.1f%%\n", best.answer.step_s * 1e3,
                  with_thousands(best.answer.throughput).c_str(), 100 * best.answer.efficiency);
      if (best.has_below) {
        std::printf("  at %s workers: %s samples/s, short of the target\n", with_thousands(best.below.workers).c_str(),
                    with_thousands(best.below.throughput).c_str());
      }
      std::printf("  confirm: %s\n", confirm_command(a, (*configs)[best.family], best.answer.workers).c_str());
    } else {
      std::printf("no configuration meets the target within %s workers\n", with_thousands(q.ladder.back()).c_str());
    }
    bool header = false;
    for (size_t i = 1; i < families.size() && families[i].feasible(); ++i) {
      if (!header) {
        std::printf(
            "\nrunner-ups (each configuration's fewest workers, by the search's estimate: one measured "
            "step):\n  %-34s %8s %10s %12s %11s\n",
            "configuration", "workers", "step ms", "samples/s", "efficiency");
        header = true;
      }
      const sim::CapacityPoint& p = families[i].answer;
      std::printf("  %-34s %8s %10.1f %12s %10.1f%%\n", (*configs)[p.family].name.c_str(),
                  with_thousands(p.workers).c_str(), p.step_s * 1e3, with_thousands(p.throughput).c_str(),
                  100 * p.efficiency);
    }
    header = false;
    for (const sim::CapacityFamilyResult& r : families) {
      if (r.feasible()) continue;
      if (!header) {
        std::printf("\nnot among the answers:\n");
        header = true;
      }
      std::printf("  %-34s %s\n", (*configs)[r.family].name.c_str(), r.why_not.c_str());
    }
  }
  if (!feasible) {
    return Status::check_failed("plan nestpipe: no configuration meets " + with_thousands(a.target) +
                                " samples/s within " + with_thousands(q.ladder.back()) + " workers" +
                                (a.min_efficiency > 0 ? " at the efficiency asked" : ""));
  }
  return Status::ok();
}

}  // namespace

void add_plan_command(CLI::App& app, Action* action) {
  CLI::App* plan = app.add_subcommand(
      "plan",
      "Capacity planning with the twin: the smallest configuration (workers, variant, split) that meets a "
      "throughput target, with the predicted step time, efficiency and the runner-ups. A search over worker "
      "counts one node apart (sim/core/capacity_search.h): each configuration's per-worker throughput bounds the "
      "fewest workers that can meet the target, each miss tightens the bound, and configurations that cannot "
      "rank are dropped; a few rounds of simulations, not every point. The answer's count one node down is "
      "simulated too. Exit code 3 when nothing meets the target.");
  plan->require_subcommand(1, 1);

  auto a = std::make_shared<PlanArgs>();
  CLI::App* np = plan->add_subcommand(
      "nestpipe",
      "NestPipe: which variant (torchrec, dbp, fwp, nestpipe, 2dsp), with which micro-batch split, on how few "
      "workers reaches the target samples/s. The twin of 'clustertwin sim nestpipe' (on npu-1536 the TorchRec "
      "baseline is calibrated to the paper first); the search steers by one-measured-step estimates, and the "
      "answer is run with two measured steps, which its confirm command repeats.");
  np->add_option("--target-throughput", a->target, "Samples per second the whole cluster must reach (e.g. 4e5)")
      ->required();
  np->add_option("--min-efficiency", a->min_efficiency,
                 "Least per-worker throughput against one node of the same configuration, in [0, 1] (0: no bound)")
      ->capture_default_str();
  np->add_option("--platform", a->platform, "Shipped profile (npu-1536, gpu-128, ...) or a YAML file")
      ->capture_default_str();
  np->add_option("--max-workers", a->max_workers, "Most workers to consider (default: the platform's devices)");
  np->add_option("--variants", a->variants, "Variants to consider, comma-separated (semisync, stale, is left out)")
      ->capture_default_str();
  np->add_option("--micro-batches", a->micro_batches, "Micro-batch splits tried for fwp and nestpipe")
      ->capture_default_str();
  np->add_option("--calibration", a->calibration, "As sim nestpipe: auto, paper or none")->capture_default_str();
  np->add_option("--model", a->setup.model, "Model spec: hstu-industrial, fuxi-kuairand, dlrm-criteo, ...")
      ->capture_default_str();
  np->add_option("--batch", a->setup.batch_per_worker, "Samples per worker per step")->capture_default_str();
  np->add_option("--runner-ups", a->runner_ups, "Runner-up configurations to search to the end")->capture_default_str();
  np->add_flag("--json", a->json, "Print the answer as JSON");
  np->add_option("--parallel", a->parallel, "Simulations run at once (default: cores)")->check(CLI::Range(1, 256));
  np->callback([a, action] { *action = [a] { return run_plan_nestpipe(*a); }; });
}

}  // namespace clustertwin::cli
