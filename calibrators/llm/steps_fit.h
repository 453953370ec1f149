#pragma once

// Fitting the LLM twin's unknowns to a table of measured steps (`clustertwin
// calibrate steps`, steps_table.h). The unknowns, each written to the fitted
// profile as a cost entry that sim/llm reads (sim/llm/llm_twin.h):
//
//   gemm        the GEMMs' share of the device's bf16/fp16 peak   costs llm/gemm.flop_rate
//   gemm_fp8    the same for fp8 rows, of the fp8 peak             costs llm/gemm_fp8.flop_rate
//   attention   causal attention's share of the bf16 peak          costs llm/attention.flop_rate
//   overhead    seconds per layer and pass (launches, what the     costs llm/layer.latency
//               FLOP and byte terms miss)
//
// Not fitted: the network (its links as the profile gives them, datasheet
// values), the elementwise kernels' bytes and the memory bandwidth, the Adam
// step. By default the fit takes gemm (and gemm_fp8 where the table has fp8
// rows), attention and overhead, as many as the rows allow: two rows an
// unknown at least (with fewer rows, overhead and then attention keep their
// starting values: a few rows of one shape cannot tell GEMMs from attention).
//
// Method: the twin's step time is piecewise linear in the inverse
// efficiencies and the overhead (a critical path of compute costs linear in
// them, and transfers that do not depend on them), so the fit is
// Levenberg-Marquardt on the rows' relative errors, each evaluation a
// simulation of every row, the Jacobian by forward differences. Leave-one-out:
// for each row, one Gauss-Newton step from the full fit on the other rows'
// Jacobian, and that row simulated at the result.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "calibrators/llm/steps_table.h"
#include "common/status.h"
#include "models/cluster/cluster_profile.h"

namespace clustertwin::calibrators::llm {

enum class StepUnknown { kGemm, kGemmFp8, kAttention, kOverhead };
std::string_view step_unknown_name(StepUnknown u);  // "gemm", "gemm_fp8", "attention", "overhead"

struct StepsFitOptions {
  /// The unknowns to fit; empty: the default set (above).
  std::vector<StepUnknown> unknowns;
  int parallel = 1;  // simulations at a time
  int max_iterations = 30;
  /// Called after each iteration with its number and the rows' root-mean-square relative error; may be empty.
  std::function<void(int iteration, double rms)> progress;
};

struct StepsFit {
  cluster::ClusterProfile profile;       // the base with the fitted cost entries
  std::map<std::string, double> values;  // fitted unknown's name -> efficiency (share of peak) or seconds
  std::vector<std::string> fitted;       // the unknowns fitted, in order
  std::vector<double> predicted_s;       // per row, at the fit
  std::vector<double> residual;          // per row: predicted / measured - 1
  std::vector<double> leave_one_out;     // per row: its error when the fit leaves it out
  int iterations = 0;
  int simulations = 0;
};

/// Fits `rows` on `base`. InvalidArgument naming the row for one the profile
/// cannot run (more workers than it has, a precision its device has no peak
/// for); Internal when a simulation fails.
StatusOr<StepsFit> fit_steps(const std::vector<StepRow>& rows, const cluster::ClusterProfile& base,
                             const StepsFitOptions& options);

/// The twin's step times of `rows` on `profile`, simulated `parallel` at a time.
StatusOr<std::vector<double>> predict_steps(const std::vector<StepRow>& rows, const cluster::ClusterProfile& profile,
                                            int parallel);

/// The fit as a table: the values, each row's measured, predicted, residual and leave-one-out error, the means.
std::string steps_fit_report(const std::vector<StepRow>& rows, const StepsFit& fit);
/// The same as JSON.
std::string steps_fit_json(const std::vector<StepRow>& rows, const StepsFit& fit);

}  // namespace clustertwin::calibrators::llm
