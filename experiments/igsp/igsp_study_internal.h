#pragma once

// The IGSP study's program (ct_igsp_study), one concept per file:
//
//   igsp_study.cpp          the program: flags, the runs, then the tables,
//                           files and plots in the order it writes them
//   igsp_study_tables.cpp   each table from the runs: runs, retention and
//                           metrics, the rho table, the comparisons, the
//                           paper's trade-off, study.json
//   igsp_study_summary.cpp  each calibration set's figures over its seeds, and
//                           Welch's interval for a difference of two sets
//   igsp_study_plots.cpp    the gnuplot script of the study's plots

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/igsp/analysis.h"
#include "real/igsp/study.h"

namespace clustertwin::experiments::igsp::detail {

inline const std::vector<std::string> kDimensions = {"general", "code", "math", "commonsense", "total"};
// The information metrics the rho table ranks each source by, in its rows' order.
inline const std::vector<std::string> kMetrics = {"calib_perplexity", "repeated_4gram", "unique_4gram", "byte_coverage",
                                                  "word_types",       "volume",         "mean_length"};

// "igsp_study: MESSAGE" on stderr, and exit with the status's code.
[[noreturn]] void fail(const Status& status);
// Writes `text` to `path` atomically, or fails.
void write(const std::string& path, const std::string& text);

// Everything the tables need about one calibration set, over its seeds.
struct SetSummary {
  std::string name, kind;
  std::vector<clustertwin::SeedSummary> retention;  // per kDimensions
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

// runs.csv: every run, its retention per dimension and its calibration set's metrics.
std::string runs_csv(const std::vector<real::igsp::StudyRun>& runs);

// retention.csv, metrics.csv and the printed retention table, one row per set.
struct RetentionTables {
  std::string retention_csv, metrics_csv, text;
};
RetentionTables tabulate_retention(const std::vector<SetSummary>& summary, const std::string& method,
                                   const real::igsp::StudyOptions& options);

// Spearman's rho of each of kMetrics against each dimension's retention over
// the sets of kind "source": the cells (none outside 3 to 16 sources), rho.csv,
// the heat map's rho_grid.csv and the printed table.
struct RhoTables {
  size_t sources = 0;
  std::vector<clustertwin::models::igsp::RhoCell> cells;  // metric by metric, kDimensions inside
  std::string csv, grid, text;
};
RhoTables tabulate_rho(const std::vector<SetSummary>& summary);

// The comparisons of total retention between sets (uniform mix against the
// best single source, IGSP against Self-Cal and SGS, ...), those whose sets
// ran: study.json's and the printed ones.
struct Comparisons {
  nlohmann::ordered_json json = nlohmann::ordered_json::array();
  std::string text;
};
Comparisons compare_sets(const std::vector<SetSummary>& summary, int seeds);

// The paper's trade-off: calibration perplexity's rho with General retention
// against Math and Code (json null when a side is constant).
struct Tradeoff {
  nlohmann::ordered_json json;
  std::string text;
};
Tradeoff check_tradeoff(const std::vector<clustertwin::models::igsp::RhoCell>& rho);

// study.json: the options, the dense model's scores and every table.
nlohmann::ordered_json study_json(const real::igsp::StudyOptions& options, const std::string& method,
                                  const real::igsp::StudyResult& result, const std::vector<SetSummary>& summary,
                                  const RhoTables& rho, const Comparisons& comparisons, const Tradeoff& tradeoff);

// The script that draws retention.png and rho_heatmap.png from the CSVs in `out`; `ymax` tops the bars.
std::string gnuplot_script(const std::string& out, const std::vector<std::string>& metrics, double ymax);

}  // namespace clustertwin::experiments::igsp::detail
