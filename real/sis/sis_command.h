#pragma once

// SIS's commands, its one entry for the command line: `clustertwin sis study`
// and `clustertwin sis stability` (cli/sis_command.cpp registers their flags
// and calls these). Tables go to stdout (or JSON), progress to stderr, and
// CSV, JSON and PNG plots (with gnuplot) into `out`, written atomically. No
// torch in this header.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace clustertwin::real::sis {

/// `sis study`: the estimator study (real/sis/estimator_study.h). An empty
/// optional keeps the grid's default (the full grid's, or --quick's); a
/// given value is validated, never replaced.
struct SisStudyArgs {
  bool quick = false, json = false, no_baseline = false;
  std::string out = "out/sis";
  std::optional<std::vector<int64_t>> lengths;
  std::optional<std::vector<double>> drifts;
  std::optional<int64_t> replicates, batch, top_k;
  uint64_t seed = 0;
};

/// Runs the estimator study; writes estimators.{csv,json} and estimators.gp
/// (and its PNGs) into `out`, and the tables or JSON to stdout.
Status run_sis_study(const SisStudyArgs& args);

/// `sis stability`: the GRPO stability study (real/sis/stability_study.h),
/// its options as SisStudyArgs takes them.
struct SisStabilityArgs {
  bool quick = false, json = false;
  std::string out = "out/sis";
  std::optional<std::vector<int64_t>> lags;
  std::optional<std::vector<std::string>> conditions;
  std::optional<int64_t> seeds, steps, length, vocab, states;
  std::optional<double> engine_noise, lr;
  uint64_t seed = 0;
};

/// Runs the stability study; writes stability_{curves,mean,summary}.csv,
/// stability.json and stability.gp (and its PNG) into `out`, and the table or
/// JSON to stdout.
Status run_sis_stability(const SisStabilityArgs& args);

}  // namespace clustertwin::real::sis
