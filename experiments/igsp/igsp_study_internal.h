#pragma once

// The IGSP study's program (ct_igsp_study), one concept per file:
//
//   igsp_study.cpp          the program: flags, the runs, the tables, the rho
//                           table, the comparisons, CSV and JSON
//   igsp_study_summary.cpp  each calibration set's figures over its seeds, and
//                           Welch's interval for a difference of two sets
//   igsp_study_plots.cpp    the gnuplot script of the study's plots

#include <string>
#include <vector>

#include "models/igsp/analysis.h"
#include "real/igsp/study.h"

namespace clustertwin::experiments::igsp::detail {

inline const std::vector<std::string> kDimensions = {"general", "code", "math", "commonsense", "total"};

// Everything the tables need about one calibration set, over its seeds.
struct SetSummary {
  std::string name, kind;
  std::vector<clustertwin::igsp::SeedSummary> retention;  // per kDimensions
  std::vector<std::vector<double>> retention_by_seed;
  double perplexity = 0, unique = 0, repeated = 0, byte_coverage = 0, word_types = 0, volume = 0, mean_length = 0;
};

// One summary per set, in the order of `runs` (run_study gives them set by set).
std::vector<SetSummary> summarise_sets(const std::vector<real::igsp::StudyRun>& runs);

// Welch's interval for mean(a) - mean(b): the sets' seeds are independent draws, not pairs.
// With one seed on either side there is no interval (`interval` false).
struct Difference {
  double mean = 0, low = 0, high = 0;
  bool interval = false;
};
Difference welch(const std::vector<double>& a, const std::vector<double>& b);

// The script that draws retention.png and rho_heatmap.png from the CSVs in `out`; `ymax` tops the bars.
std::string gnuplot_script(const std::string& out, const std::vector<std::string>& metrics, double ymax);

}  // namespace clustertwin::experiments::igsp::detail
