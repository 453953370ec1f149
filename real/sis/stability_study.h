#pragma once

// SIS's stability study (experiments/sis/README.md; `clustertwin sis
// stability` runs it, real/sis/sis_command.h): GRPO on the automaton task
// (real/sis/automaton_task.h) with a verifiable success test, rollouts
// drawn from the policy `lag` updates old by a rollout engine whose logits
// carry noise, with and without SIS, over several seeds.
//
//   each step   the engine samples `group` sequences from each start state
//               (the prompts) with the stale weights plus engine noise;
//               advantages are normalised within each prompt's group; the
//               trainer takes `epochs` Adam steps on GRPO's clipped loss with
//               pi_old = its own recomputation of the stale weights
//   conditions  grpo; grpo+sis (SIS tests pi_theta / pi_old, the policy lag);
//               grpo+sis-engine (SIS tests pi_theta / engine, the mismatch)
//   measured    after every step, exactly: J and the success rate
//               P(R >= success_reward) from uniform start states
//   reported    success curves, steps to the success target, collapse (the
//               final success rate below half the best the run reached, or a
//               non-finite parameter), SIS's acceptance rate

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace clustertwin::real::sis {

struct StabilityOptions {
  std::vector<int64_t> lags = {0, 1, 2, 4, 8};
  std::vector<std::string> conditions = {"grpo", "grpo+sis", "grpo+sis-engine"};
  int64_t seeds = 5;
  int64_t steps = 300;
  int64_t length = 32, vocab = 16, states = 8;
  int64_t group = 8;             // sequences per prompt (start state)
  int64_t epochs = 1;            // updates per batch (lag 0 with one epoch is on-policy); SIS redraws each
  double lr = 0.05;              // Adam
  double clip = 0.2;             // GRPO's eps
  double engine_noise = 0.5;     // N(0, sigma^2) on the engine's logits, fresh each step
  double policy_scale = 0.5;     // initial parameters ~ N(0, scale^2)
  double success_reward = 0.75;  // a sequence succeeds when R >= this
  double success_target = 0.5;   // steps to reach this success rate
  uint64_t seed = 0;
};

/// The `--quick` grid: lags 0, 2 and 8, 120 steps, 5 seeds.
StabilityOptions quick_stability_options();

/// InvalidArgument naming the option and its value.
Status validate(const StabilityOptions& options);

struct StabilityRun {
  std::string condition;
  int64_t lag = 0;
  int64_t seed = 0;
  std::vector<double> j, success;  // after each step
  double acceptance = 0;           // mean over the SIS draws (NaN without SIS)
  int64_t steps_to_target = -1;    // -1: never
  bool collapsed = false;
};

struct StabilitySummary {
  std::string condition;
  int64_t lag = 0;
  double final_success = 0, final_low = 0, final_high = 0;  // mean and 95% t-interval over seeds
  double best_success = 0;                                  // mean over seeds
  int reached = 0;                                          // seeds that reached the target
  double median_steps = 0;                                  // over those that did (NaN if none)
  double collapse_rate = 0, acceptance = 0;
};

struct StabilityStudy {
  StabilityOptions options;
  std::vector<StabilityRun> runs;  // by lag, then condition, then seed
  std::vector<StabilitySummary> summary;
};

/// Runs every (lag, condition, seed); `progress(done, total)` after each run.
/// Byte-identical results for the same options.
StatusOr<StabilityStudy> run_stability_study(const StabilityOptions& options,
                                             const std::function<void(int, int)>& progress = {});

/// step,condition,lag,seed,j,success per row; then the summary's CSV.
std::string stability_curves_csv(const StabilityStudy& study);
std::string stability_summary_csv(const StabilityStudy& study);
nlohmann::json stability_json(const StabilityStudy& study);
std::string stability_table(const StabilityStudy& study);
/// Mean success curves over seeds, one panel per lag, into
/// `out_dir`/stability_success.png; `mean_csv` is stability_mean_csv's file.
std::string stability_mean_csv(const StabilityStudy& study);
std::string stability_gnuplot(const StabilityStudy& study, const std::string& mean_csv, const std::string& out_dir);

}  // namespace clustertwin::real::sis
