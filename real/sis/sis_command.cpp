// SIS's commands: what cli/sis_command.cpp runs once it has parsed the flags.

#include "real/sis/sis_command.h"

#include <chrono>
#include <cstdio>

#include "common/file_io.h"
#include "common/gnuplot.h"
#include "common/progress.h"
#include "real/sis/estimator_study.h"
#include "real/sis/stability_study.h"

namespace clustertwin::real::sis {
namespace {

void show_study_progress(const char* what, int done, int total, std::chrono::steady_clock::time_point start) {
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  show_progress(done == total, "  %s [%d/%d] %.0f s", what, done, total, s);
}

// Writes `script` beside the CSVs and runs gnuplot on it when it is installed.
bool plot_into(const std::string& dir, const std::string& name, const std::string& script) {
  if (!write_file_atomically(dir + "/" + name, script).is_ok()) return false;
  return run_gnuplot_file(dir + "/" + name);
}

EstimatorStudyOptions estimator_options(const SisStudyArgs& a) {
  EstimatorStudyOptions o = a.quick ? quick_estimator_options() : EstimatorStudyOptions{};
  if (a.lengths) o.lengths = *a.lengths;
  if (a.drifts) o.drifts = *a.drifts;
  if (a.replicates) o.replicates = *a.replicates;
  if (a.batch) o.batch = *a.batch;
  if (a.top_k) o.top_k = *a.top_k;
  o.seed = a.seed;
  o.baseline = !a.no_baseline;
  return o;
}

StabilityOptions stability_options(const SisStabilityArgs& a) {
  StabilityOptions o = a.quick ? quick_stability_options() : StabilityOptions{};
  if (a.lags) o.lags = *a.lags;
  if (a.conditions) o.conditions = *a.conditions;
  if (a.seeds) o.seeds = *a.seeds;
  if (a.steps) o.steps = *a.steps;
  if (a.engine_noise) o.engine_noise = *a.engine_noise;
  if (a.lr) o.lr = *a.lr;
  if (a.length) o.length = *a.length;
  if (a.vocab) o.vocab = *a.vocab;
  if (a.states) o.states = *a.states;
  o.seed = a.seed;
  return o;
}

}  // namespace

Status run_sis_study(const SisStudyArgs& a) {
  const EstimatorStudyOptions o = estimator_options(a);
  CT_RETURN_IF_ERROR(validate(o));
  CT_RETURN_IF_ERROR(make_directories(a.out));
  const auto start = std::chrono::steady_clock::now();
  std::fprintf(stderr, "sis study -> %s: %zu lengths x %zu drifts, %lld replicates of %lld sequences\n", a.out.c_str(),
               o.lengths.size(), o.drifts.size(), static_cast<long long>(o.replicates),
               static_cast<long long>(o.batch));
  auto result = run_estimator_study(o, [&](int done, int total) { show_study_progress("cells", done, total, start); });
  if (!result.is_ok()) return result.status();
  const std::string csv = a.out + "/estimators.csv";
  const nlohmann::json json = estimator_json(*result);
  CT_RETURN_IF_ERROR(write_file_atomically(csv, estimator_csv(*result)));
  CT_RETURN_IF_ERROR(write_file_atomically(a.out + "/estimators.json", json.dump(2) + "\n"));
  const bool plotted = plot_into(a.out, "estimators.gp", estimator_gnuplot(*result, a.out));
  CT_RETURN_IF_ERROR(write_stdout(a.json ? json.dump(2) + "\n" : estimator_tables(*result)));
  std::fprintf(stderr, "sis study: %.0f s; wrote %s/estimators.{csv,json}%s\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), a.out.c_str(),
               plotted ? ", estimators_mse.png, estimators_bias.png" : " (no gnuplot: no PNGs)");
  return Status::ok();
}

Status run_sis_stability(const SisStabilityArgs& a) {
  const StabilityOptions o = stability_options(a);
  CT_RETURN_IF_ERROR(validate(o));
  CT_RETURN_IF_ERROR(make_directories(a.out));
  const auto start = std::chrono::steady_clock::now();
  std::fprintf(stderr, "sis stability -> %s: %zu lags x %zu conditions x %lld seeds, %lld steps each\n", a.out.c_str(),
               o.lags.size(), o.conditions.size(), static_cast<long long>(o.seeds), static_cast<long long>(o.steps));
  auto result = run_stability_study(o, [&](int done, int total) { show_study_progress("runs", done, total, start); });
  if (!result.is_ok()) return result.status();
  const std::string mean_csv = a.out + "/stability_mean.csv";
  const nlohmann::json json = stability_json(*result);
  CT_RETURN_IF_ERROR(write_file_atomically(a.out + "/stability_curves.csv", stability_curves_csv(*result)));
  CT_RETURN_IF_ERROR(write_file_atomically(mean_csv, stability_mean_csv(*result)));
  CT_RETURN_IF_ERROR(write_file_atomically(a.out + "/stability_summary.csv", stability_summary_csv(*result)));
  CT_RETURN_IF_ERROR(write_file_atomically(a.out + "/stability.json", json.dump(2) + "\n"));
  const bool plotted = plot_into(a.out, "stability.gp", stability_gnuplot(*result, mean_csv, a.out));
  CT_RETURN_IF_ERROR(write_stdout(a.json ? json.dump(2) + "\n" : stability_table(*result)));
  std::fprintf(stderr, "sis stability: %.0f s; wrote %s/stability_{curves,mean,summary}.csv, stability.json%s\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), a.out.c_str(),
               plotted ? ", stability_success.png" : " (no gnuplot: no PNGs)");
  return Status::ok();
}

}  // namespace clustertwin::real::sis
