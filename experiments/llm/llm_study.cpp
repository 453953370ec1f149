// The LLM twin against published measurements (experiments/llm/README.md):
//
//   1. reads measurements.csv (MEASUREMENTS.md: 40 steps of Megatron-style
//      training from 5 sources); a row the twin cannot model is listed with
//      its reason and left out
//   2. fits the twin's unknowns (calibrate steps: GEMM shares of peak for
//      bf16 and fp8, attention's, a per-layer overhead) to the rows whose
//      split is `fit` (64 GPUs or fewer), on h100-dgx
//   3. predicts every row: H100 rows on the fitted profile, A100 rows on
//      a100-dgx with the fitted shares of peak carried over; and every row
//      again with the assumed efficiencies (no fit), for comparison
//   4. reports the test rows' error (never fitted on): mean and worst, by
//      source and precision; a plot of predicted against measured
//
// Writes rows.csv, study.json, h100-dgx-fitted.yaml, plots.gp and
// predicted_vs_measured.png (atomically) to OUT (default out/llm).
//
//   ct_llm_study [OUT] [--measurements CSV] [--parallel N]

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "calibrators/llm/steps_fit.h"
#include "common/file_io.h"
#include "common/gnuplot.h"
#include "common/text.h"
#include "models/cluster/cluster_profile_yaml.h"

namespace {

using namespace clustertwin;
using calibrators::llm::StepRow;

[[noreturn]] void fail(const Status& status) {
  std::fprintf(stderr, "llm_study: %s\n", status.message().c_str());
  std::exit(status.exit_code());
}

template <class T>
T value_or_fail(StatusOr<T> v) {
  if (!v.is_ok()) fail(v.status());
  return std::move(v).value();
}

// A measured row with its GPU, or the reason the twin cannot model it.
struct Measured {
  StepRow row;
  std::string gpu;
  std::string refused;  // "" when the twin models it
  double predicted_s = 0, assumed_s = 0;
};

std::vector<Measured> read_measurements(const std::string& path) {
  std::istringstream in(value_or_fail(read_file(path)));
  std::string header, line;
  std::getline(in, header);
  const std::vector<std::string> columns = calibrators::llm::csv_fields(header);
  size_t gpu = columns.size(), id = columns.size();
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] == "gpu") gpu = i;
    if (columns[i] == "id") id = i;
  }
  std::vector<Measured> out;
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const std::vector<std::string> fields = calibrators::llm::csv_fields(line);
    Measured m;
    m.gpu = gpu < fields.size() ? fields[gpu] : "";
    auto rows = calibrators::llm::parse_steps_table(header + "\n" + line + "\n", path);
    if (rows.is_ok()) {
      m.row = (*rows)[0];
      m.row.line = number;
    } else {
      m.row.id = id < fields.size() ? fields[id] : "line " + std::to_string(number);
      m.refused = rows.status().message();
    }
    out.push_back(std::move(m));
  }
  return out;
}

struct Summary {
  int n = 0;
  double mean = 0, worst = 0;
  void add(double e) {
    ++n;
    mean += (std::abs(e) - mean) / n;
    worst = std::max(worst, std::abs(e));
  }
  nlohmann::ordered_json json() const { return {{"rows", n}, {"mean_abs_error", mean}, {"worst_abs_error", worst}}; }
};

class LlmStudy {
 public:
  LlmStudy(std::string out, std::string measurements, int parallel)
      : out_(std::move(out)), measurements_(std::move(measurements)), parallel_(parallel) {
    std::error_code ec;
    std::filesystem::create_directories(out_, ec);
    if (ec) fail(Status::io_error(out_ + ": " + ec.message()));
    h100_ = value_or_fail(cluster::load_cluster_profile("h100-dgx"));
    a100_ = value_or_fail(cluster::load_cluster_profile("a100-dgx"));
  }

  void fit() {
    rows_ = read_measurements(measurements_);
    std::vector<StepRow> fit_rows;
    for (const Measured& m : rows_) {
      if (!m.refused.empty()) std::printf("left out: %s\n", m.refused.c_str());
      if (m.refused.empty() && m.row.split == "fit") fit_rows.push_back(m.row);
    }
    std::printf("fitting %zu rows (split fit) on %s ...\n", fit_rows.size(), h100_.name.c_str());
    calibrators::llm::StepsFitOptions options;
    options.parallel = parallel_;
    options.progress = [](int iteration, double rms) {
      std::printf("  iteration %d: rms relative error %.2f%%\n", iteration, 100 * rms);
      std::fflush(stdout);
    };
    fit_ = value_or_fail(calibrators::llm::fit_steps(fit_rows, h100_, options));
    std::fputs(calibrators::llm::steps_fit_report(fit_rows, fit_).c_str(), stdout);
    fit_rows_ = fit_rows;
  }

  // Every modelled row, fitted and assumed, grouped by the profile it runs on.
  void predict() {
    std::map<std::string, double> shares = fit_.values;
    shares.erase("gemm_fp8");  // an A100 has no fp8
    const cluster::ClusterProfile a100_fitted = sim::llm::with_llm_values(a100_, shares);
    for (bool fitted : {true, false}) {
      for (const std::string gpu : {"h100-sxm", "a100-80gb"}) {
        std::vector<StepRow> group;
        std::vector<Measured*> into;
        for (Measured& m : rows_) {
          if (m.refused.empty() && m.gpu == gpu) {
            group.push_back(m.row);
            into.push_back(&m);
          }
        }
        if (group.empty()) continue;
        const cluster::ClusterProfile& base = gpu == "h100-sxm" ? h100_ : a100_;
        const cluster::ClusterProfile& profile = !fitted ? base : gpu == "h100-sxm" ? fit_.profile : a100_fitted;
        std::printf("predicting %zu %s rows (%s) ...\n", group.size(), gpu.c_str(), fitted ? "fitted" : "assumed");
        std::fflush(stdout);
        const std::vector<double> steps = value_or_fail(calibrators::llm::predict_steps(group, profile, parallel_));
        for (size_t i = 0; i < steps.size(); ++i)
          (fitted ? into[i]->predicted_s : into[i]->assumed_s) = steps[i];
      }
    }
  }

  void report() {
    std::printf("\n%-32s %-5s %-9s %5s %-4s %12s %12s %8s %8s\n", "id", "split", "gpu", "GPUs", "prec", "measured ms",
                "predicted ms", "error", "assumed");
    std::string csv =
        "id,split,gpu,workers,precision,measured_ms,predicted_ms,error,assumed_ms,assumed_error,refused\n";
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    std::map<std::string, Summary> groups;
    for (const Measured& m : rows_)
      add_row(m, &csv, &rows, &groups);
    nlohmann::ordered_json summary = nlohmann::ordered_json::object();
    std::printf("\n%-34s %5s %10s %10s\n", "rows", "n", "mean |err|", "worst");
    for (const auto& [name, s] : groups) {
      std::printf("%-34s %5d %9.1f%% %9.1f%%\n", name.c_str(), s.n, 100 * s.mean, 100 * s.worst);
      summary[name] = s.json();
    }
    nlohmann::ordered_json values = nlohmann::ordered_json::object();
    for (const auto& [name, v] : fit_.values)
      values[name] = v;
    nlohmann::ordered_json doc{{"measurements", measurements_}, {"fit_profile", h100_.name}, {"fitted", values},
                               {"fit_rows", fit_rows_.size()},  {"summary", summary},        {"rows", rows}};
    const std::string header = "h100-dgx with the LLM twin's efficiencies fitted by experiments/llm's study to the " +
                               std::to_string(fit_rows_.size()) + " fit rows of measurements.csv\n";
    for (const auto& [file, text] : std::vector<std::pair<std::string, std::string>>{
             {"rows.csv", csv},
             {"study.json", doc.dump(2) + "\n"},
             {"h100-dgx-fitted.yaml", value_or_fail(cluster::cluster_profile_yaml(fit_.profile, header))},
             {"plots.gp", gnuplot_script()}}) {
      if (Status s = write_file_atomically(out_ + "/" + file, text); !s.is_ok()) fail(s);
    }
    const bool plotted = run_gnuplot_file(out_ + "/plots.gp");
    std::printf("outputs: %s/{rows.csv,study.json,h100-dgx-fitted.yaml%s}\n", out_.c_str(),
                plotted ? ",predicted_vs_measured.png" : "; no gnuplot: no PNG");
  }

 private:
  // One row: printed, in the CSV and the JSON, and in its groups' summaries.
  static void add_row(const Measured& m, std::string* csv, nlohmann::ordered_json* rows,
                      std::map<std::string, Summary>* groups) {
    const StepRow& r = m.row;
    if (!m.refused.empty()) {
      *csv += r.id + ",,,,,,,,,,\"" + m.refused + "\"\n";
      rows->push_back({{"id", r.id}, {"refused", m.refused}});
      return;
    }
    const double error = m.predicted_s / r.step_s - 1, assumed = m.assumed_s / r.step_s - 1;
    std::printf("%-32s %-5s %-9s %5d %-4s %12.1f %12.1f %+7.1f%% %+7.1f%%\n", r.id.c_str(), r.split.c_str(),
                m.gpu.c_str(), r.workers, r.setup.split.precision.c_str(), r.step_s * 1e3, m.predicted_s * 1e3,
                100 * error, 100 * assumed);
    *csv += r.id + "," + r.split + "," + m.gpu + "," + std::to_string(r.workers) + "," + r.setup.split.precision + "," +
            format_number("%.1f", r.step_s * 1e3) + "," + format_number("%.1f", m.predicted_s * 1e3) + "," +
            format_number("%.4f", error) + "," + format_number("%.1f", m.assumed_s * 1e3) + "," +
            format_number("%.4f", assumed) + ",\n";
    rows->push_back({{"id", r.id},
                     {"split", r.split},
                     {"gpu", m.gpu},
                     {"workers", r.workers},
                     {"precision", r.setup.split.precision},
                     {"measured_s", r.step_s},
                     {"predicted_s", m.predicted_s},
                     {"error", error},
                     {"assumed_s", m.assumed_s},
                     {"assumed_error", assumed}});
    (*groups)[r.split + " (fitted)"].add(error);
    (*groups)[r.split + " (assumed)"].add(assumed);
    if (r.split == "test") {
      (*groups)["test " + source_of(r.id) + " " + r.setup.split.precision].add(error);
      if (r.workers <= 512) (*groups)["test up to 512 GPUs"].add(error);
    }
  }

  static std::string source_of(const std::string& id) { return id.substr(0, id.find('-')); }

  std::string gnuplot_script() const {
    const std::string q = "'" + out_ + "/";
    return "set datafile separator ','\nset terminal pngcairo size 760,640 noenhanced\nset grid\nset key left top\n"
           "set logscale xy\nset xlabel 'measured step (s)'\nset ylabel 'twin (s)'\nset size square\n"
           "set xrange [0.8:150]\nset yrange [0.8:150]\nset output " +
           q +
           "predicted_vs_measured.png'\nset title 'LLM twin vs published steps (fitted on split=fit only)'\n"
           "plot x with lines lc 'gray' title 'y = x', 1.15*x with lines dt 2 lc 'gray' title '+-15%', "
           "0.85*x with lines dt 2 lc 'gray' notitle, " +
           q +
           "rows.csv' using ($6/1000):(strcol(2) eq 'fit' ? $7/1000 : 1/0) with points pt 6 ps 1.4 lc rgb '#DD8452' "
           "title 'fit rows (fitted on)', " +
           q +
           "rows.csv' using ($6/1000):(strcol(2) eq 'test' ? $7/1000 : 1/0) with points pt 7 ps 1.2 lc rgb '#4C72B0' "
           "title 'test rows (held out)', " +
           q +
           "rows.csv' using ($6/1000):(strcol(2) eq 'test' ? $9/1000 : 1/0) with points pt 1 ps 1.0 lc 'gray' "
           "title 'test, assumed efficiencies'\n";
  }

  std::string out_, measurements_;
  int parallel_;
  cluster::ClusterProfile h100_, a100_;
  std::vector<Measured> rows_;
  std::vector<StepRow> fit_rows_;
  calibrators::llm::StepsFit fit_;
};

}  // namespace

int main(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  std::string out = "out/llm", measurements = std::string(CT_SOURCE_DIR) + "/experiments/llm/measurements.csv";
  int parallel = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--measurements" && i + 1 < argc) {
      measurements = argv[++i];
    } else if (arg == "--parallel" && i + 1 < argc) {
      parallel = std::atoi(argv[++i]);
    } else if (!arg.empty() && arg[0] != '-') {
      out = arg;
    } else {
      std::fprintf(stderr,
                   "llm_study: %s: unknown argument (usage: ct_llm_study [OUT] [--measurements CSV] "
                   "[--parallel N])\n",
                   arg.c_str());
      return 2;
    }
  }
  if (parallel < 1) {
    std::fprintf(stderr, "llm_study: --parallel %d: must be >= 1\n", parallel);
    return 2;
  }
  LlmStudy study(out, measurements, parallel);
  study.fit();
  study.predict();
  study.report();
  std::printf("study wall time: %.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return 0;
}
