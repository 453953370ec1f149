#pragma once

// SIS's exact-gradient estimator study (experiments/sis/README.md; `clustertwin
// sis study` runs it, real/sis/sis_command.h): on the automaton task
// (real/sis/automaton_task.h), where grad J is known exactly,
// every estimator of real/sis/estimators.h is drawn `replicates` times from
// batches of the behaviour policy, for each sequence length and each policy
// drift, and compared with the exact gradient:
//
//   bias       ||mean g_hat - g*|| / ||g*||, with the replicates' own noise
//              removed: sqrt(max(0, ||mean - g*||^2 - tr Cov / R))
//   bias_se    sqrt(tr Cov / R) / ||g*||: the noise floor of that bias
//   variance   tr Cov / ||g*||^2 (one batch's estimate)
//   mse        mean ||g_hat - g*||^2 / ||g*||^2 (= bias^2 + variance)
//   cosine     mean cos(g_hat, g*) over replicates
//   ess        Kish's effective sample size of the coefficients, as a
//              fraction of the batch's tokens: (sum c)^2 / (n sum c^2)
//   acceptance SIS's acceptance rate (NaN for the others)

// Plain C++ (no libtorch headers): the SIS commands (real/sis/sis_command.h)
// are its callers.

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace clustertwin::real::sis {

struct EstimatorStudyOptions {
  std::vector<int64_t> lengths = {4, 16, 64, 256};
  std::vector<double> drifts = {0.05, 0.2, 0.5, 1.0};  // N(0, drift^2) added to mu's parameters
  int64_t replicates = 1000;
  int64_t batch = 32;  // sequences per estimate
  int64_t vocab = 8, states = 5;
  double policy_scale = 0.5;                   // pi's parameters ~ N(0, scale^2)
  double cap = 2.0;                            // tis, mis
  double icepop_low = 0.5, icepop_high = 5.0;  // icepop
  int64_t top_k = 3;                           // sis-topk
  // Advantages R - b with b the exact expected reward of the policy that drew
  // the batch (what GRPO's group mean estimates, held constant so that the
  // unbiased estimators stay unbiased), or raw R.
  bool baseline = true;
  uint64_t seed = 0;
};

/// The `--quick` grid: every length, three drifts, 200 replicates.
EstimatorStudyOptions quick_estimator_options();

/// InvalidArgument naming the option and its value.
Status validate(const EstimatorStudyOptions& options);

struct EstimatorRow {
  int64_t length = 0;
  double drift = 0;
  double kl = 0;  // exact mean per-token KL(mu || pi)
  std::string estimator;
  double bias = 0, bias_se = 0, variance = 0, mse = 0, cosine = 0, ess = 0, acceptance = 0;
};

/// Whether SIS (exact envelope) lands between token IS and sequence IS in
/// bias and in variance, per (length, drift) cell.
struct BetweenVerdict {
  int64_t length = 0;
  double drift = 0;
  bool bias_between = false, variance_between = false;
  double sis_bias = 0, token_bias = 0, seq_bias = 0, sis_variance = 0, token_variance = 0, seq_variance = 0;
};

struct EstimatorStudy {
  EstimatorStudyOptions options;
  std::vector<EstimatorRow> rows;  // by length, then drift, then estimator
  std::vector<BetweenVerdict> verdicts;
};

/// Runs the grid; `progress(done, total)` after each cell. Byte-identical
/// results for the same options.
StatusOr<EstimatorStudy> run_estimator_study(const EstimatorStudyOptions& options,
                                             const std::function<void(int, int)>& progress = {});

std::string estimator_csv(const EstimatorStudy& study);
nlohmann::json estimator_json(const EstimatorStudy& study);
/// The tables as printed: one per (length, drift), then the verdicts.
std::string estimator_tables(const EstimatorStudy& study);
/// A gnuplot script, its data inline, drawing MSE and bias against length,
/// one panel per drift, into `out_dir`/estimators_{mse,bias}.png.
std::string estimator_gnuplot(const EstimatorStudy& study, const std::string& out_dir);

}  // namespace clustertwin::real::sis
