// The FlexMARL study (experiments/flexmarl/README.md): one command, the
// twin's side of the paper.
//
//   1. fit sync's (MAS-RL's) decode efficiency so that sync takes the
//      paper's 914.4 s per step on the MA workload (npu-768); the other
//      engines decode at the measured efficiency
//   2. every framework and ablation on MA and CA (CA at MA's fit), set beside the paper's Tables 2-3
//   3. the paper's scale tests: 5 x 32B, 3 x 32B + 7 x 14B, 15 x 14B agents
//   4. a per-device utilisation timeline of the last step (MA and 15 x 14B)
//   5. a Perfetto trace per framework on MA
//   6. CSV, JSON and, when gnuplot is installed, PNG plots
//
// Prints the figures the issue checks and the study's wall time.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "calibrators/flexmarl/flexmarl_paper_fit.h"
#include "common/file_io.h"
#include "common/gnuplot.h"
#include "common/progress.h"
#include "common/text.h"
#include "experiments/flexmarl/paper_tables.h"
#include "models/cluster/cluster_profile.h"
#include "models/flexmarl/agents.h"
#include "sim/flexmarl/flexmarl_twin.h"

namespace {

using namespace clustertwin;

constexpr double kPaperSpeedup = 7.3;      // "up to 7.3x" against MAS-RL: the MA workload (914.4 s against ~125 s)
constexpr double kPaperUtilization = 5.6;  // "up to 5.6x" hardware utilisation
constexpr int kTimelineBins = 120;

[[noreturn]] void fail(const Status& status) {
  std::fprintf(stderr, "flexmarl_study: %s\n", status.message().c_str());
  std::exit(status.exit_code());
}

template <typename T>
T value_or_fail(StatusOr<T> v) {
  if (!v.is_ok()) fail(v.status());
  return std::move(*v);
}

void write(const std::string& path, const std::string& text) {
  Status s = write_file_atomically(path, text);
  if (!s.is_ok()) fail(s);
}

// File-name form of a workload name: "3x32B+7x14B" -> "3x32B_7x14B".
std::string slug(std::string name) {
  std::replace(name.begin(), name.end(), '+', '_');
  return name;
}

std::string gnuplot_script(const std::string& out, const std::vector<std::string>& timelines) {
  const std::string q = "'" + out + "/";
  std::string s =
      "set datafile separator ','\nset terminal pngcairo size 960,560 noenhanced\nset grid ytics\n"
      "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
      "set key outside right\n";
  const char* frameworks[] = {"sync", "marti", "flexmarl", "flexmarl-nobalance", "flexmarl-noasync"};
  // Rows go workload by workload, frameworks inside: x is the row, labelled at each workload's first.
  s += "set style data linespoints\n";
  auto per_workload = [&](const std::string& file, const std::string& title, const std::string& ylabel, int column) {
    std::string p = "set output " + q + file + "'\nset title '" + title + "'\nset ylabel '" + ylabel +
                    "'\nset xlabel 'workload'\nset xtics rotate by -20\nplot ";
    bool first = true;
    for (const char* f : frameworks) {
      p += std::string(first ? "" : ", ") + q + "frameworks.csv' using 0:(strcol(1) eq '" + f + "' ? $" +
           std::to_string(column) + " : 1/0):xtic(strcol(1) eq 'sync' ? strcol(2) : '') with points pt 7 ps 1.5 " +
           "title '" + f + "'";
      first = false;
    }
    return p + "\nunset xlabel\nset xtics norotate\n";
  };
  s += per_workload("step_time.png", "FlexMARL twin on npu-768: step time per framework", "s per step", 5);
  s += per_workload("speedup.png", "speedup against sync (paper: up to 7.3x)", "x", 9);
  s += per_workload("utilization.png", "device utilisation (paper: up to 5.6x against sync)", "busy share", 8);
  for (const std::string& t : timelines) {
    s += "set output " + q + "timeline_" + t + ".png'\nset title 'per-device utilisation over the last step: " + t +
         "'\nset xlabel 'time in step (s)'\nset ylabel 'device'\nset cblabel 'busy share'\nset palette "
         "defined (0 'white', 0.5 '#6baed6', 1 '#08306b')\nset cbrange [0:1]\nset view map\n"
         "plot " +
         q + "timeline_" + t + ".csv' using 2:1:3 every ::1 with points pt 5 ps 0.6 palette notitle\n";
  }
  return s;
}

namespace fm = sim::flexmarl;

// One workload the frameworks run on: MA or a scale test.
struct Case {
  std::string name;
  fm::FlexMarlSetup setup;
};

// The study's parts in the order they run; the figures the issue checks are
// printed at the end.
class FlexMarlStudy {
 public:
  explicit FlexMarlStudy(std::string out) : out_(std::move(out)) {
    std::error_code ec;
    std::filesystem::create_directories(out_ + "/traces", ec);
    if (ec) fail(Status::io_error(out_ + ": " + ec.message()));
    npu_ = value_or_fail(cluster::load_cluster_profile("npu-768"));
  }

  // 1. The one fitted parameter: sync's decode efficiency, so that sync takes the paper's step on MA.
  void fit_sync() {
    std::fprintf(stderr,
                 "flexmarl study -> %s\n  fitting sync's decode efficiency to the paper's sync step (%.1f s)...\n",
                 out_.c_str(), fm::kPaperSyncStepS);
    fm::FlexMarlSetup ma;
    ma.efficiency.decode = value_or_fail(fm::engine_decode_efficiency(fm::kDefaultDeviceProfile, &measured_on_));
    fit_ = value_or_fail(calibrators::calibrate_sync(ma, npu_));
    ma.efficiency.sync_decode = fit_.decode_efficiency;
    cases_ = {{"MA", ma}};
  }

  // 2-5. Every framework on MA, CA and the scale tests, with timelines and traces. CA runs at MA's fit: its
  // MAS-RL step is a prediction, not a second fit.
  void run_frameworks() {
    fm::FlexMarlSetup ca = ma_setup();
    ca.workload = models::flexmarl::ca_workload();
    cases_.push_back({"CA", ca});
    for (const char* agents : {"5x32B", "3x32B+7x14B", "15x14B"}) {
      fm::FlexMarlSetup s = ma_setup();
      s.workload = models::flexmarl::workload_for(value_or_fail(models::flexmarl::parse_agents(agents)));
      s.workload.name = agents;
      cases_.push_back({agents, s});
    }
    for (const Case& c : cases_) {
      auto rows = value_or_fail(fm::run_flexmarl_frameworks(
          c.setup, npu_, models::flexmarl::all_frameworks(), [&](const fm::FlexMarlRow& r, int done, int total) {
            show_progress(done == total, "  %-12s [%d/%d] %-18s %7.1f s per step", c.name.c_str(), done, total,
                          r.framework.c_str(), r.step_s);
          }));
      if (c.name == "MA" || c.name == "15x14B") write_timelines(c.name, rows);
      if (c.name == "MA") write_traces(rows);
      all_.insert(all_.end(), rows.begin(), rows.end());
    }
  }

  // 6. frameworks.{csv,json} and the plots; true when gnuplot drew them.
  bool write_tables_and_plots() const {
    const auto six_digits = [](double v) { return std::stod(format_number("%.6g", v)); };  // as printed
    const nlohmann::ordered_json fit = {{"target_s", six_digits(fm::kPaperSyncStepS)},
                                        {"decode_efficiency", six_digits(fit_.decode_efficiency)},
                                        {"engine_decode_efficiency", six_digits(ma_setup().efficiency.decode)},
                                        {"device_profile", measured_on_},
                                        {"sync_step_s", six_digits(fit_.step_s)},
                                        {"runs", fit_.runs}};
    const nlohmann::ordered_json extra = {
        {"platform", "npu-768"},
        {"calibration", fit},
        {"paper", {{"sync_step_s", 914.4}, {"speedup", 7.3}, {"utilization_gain", 5.6}}}};
    write(out_ + "/frameworks.csv", fm::flexmarl_rows_csv(all_));
    write(out_ + "/frameworks.json", fm::flexmarl_rows_json(all_, extra.dump()));
    write(out_ + "/plots.gp", gnuplot_script(out_, timelines_));
    return run_gnuplot_file(out_ + "/plots.gp");
  }

  // The frameworks table, the fit, and FlexMARL's speedup and utilisation against the paper's.
  void print_figures() const {
    std::printf("%s", fm::flexmarl_rows_table(all_).c_str());
    std::printf(
        "\nfit: sync's (MAS-RL's) decode efficiency %.3f (sync on MA %.1f s, %d runs); the other engines %.3f "
        "(measured: device profile %s)\n",
        fit_.decode_efficiency, fit_.step_s, fit_.runs, ma_setup().efficiency.decode, measured_on_.c_str());
    const fm::FlexMarlRow* on_ma = nullptr;
    for (const fm::FlexMarlRow& r : all_) {
      if (r.framework == "flexmarl" && r.workload == "MA") on_ma = &r;
    }
    for (const fm::FlexMarlRow& r : all_) {
      if (r.framework != "flexmarl") continue;
      std::printf("flexmarl on %-12s speedup %.2fx, utilisation %.2fx\n", r.workload.c_str(), r.speedup,
                  r.utilization_gain);
    }
    std::printf(
        "MA (the paper's workload): speedup %.2fx against the paper's %.1fx (%+.1f%%, within 20%%: %s); step %.1f s "
        "against %.1f s; utilisation gain %.2fx against up-to %.1fx (the paper does not say on which workload)\n",
        on_ma->speedup, kPaperSpeedup, 100 * (on_ma->speedup / kPaperSpeedup - 1),
        std::abs(on_ma->speedup / kPaperSpeedup - 1) <= 0.2 ? "yes" : "no", on_ma->step_s,
        fm::kPaperSyncStepS / kPaperSpeedup, on_ma->utilization_gain, kPaperUtilization);
  }

  // MA's and CA's frameworks against the paper's Tables 2-3: each step over FlexMARL's, what it adds to it, and
  // whether the twin's addition is within 25% of the paper's (issue 48); CA's MAS-RL step is predicted.
  void print_paper_tables() const {
    namespace paper = clustertwin::experiments::flexmarl;
    int within = 0, compared = 0;
    for (const paper::PaperSteps& p : paper::kPaperSteps) {
      const double flex = step(p.workload, "flexmarl");
      std::printf("%s against the paper's Tables 2-3: sync %.1f s (paper %.1f s%s), flexmarl %.1f s (paper %.1f s)\n",
                  std::string(p.workload).c_str(), step(p.workload, "sync"), p.sync_s,
                  p.workload == "MA" ? ", fitted" : ", predicted from MA's fit", flex, p.flexmarl_s);
      for (std::string_view f : paper::kComparedWithFlexMarl) {
        const double ours = paper::added_share(step(p.workload, f), flex);
        const double theirs = paper::added_share(*paper::paper_step_s(p.workload, f), p.flexmarl_s);
        const bool ok = std::abs(ours / theirs - 1) <= paper::kAddedShareTolerance;
        within += ok;
        ++compared;
        std::printf(
            "  %-19s %.2fx flexmarl's step (%+.1f%%), paper %.2fx (%+.1f%%): added share %+.0f%% off, within "
            "25%%: %s\n",
            std::string(f).c_str(), 1 + ours, 100 * ours, 1 + theirs, 100 * theirs, 100 * (ours / theirs - 1),
            ok ? "yes" : "no");
      }
    }
    std::printf("paper's ablations and MARTI within 25%% (added share): %d of %d\n", within, compared);
  }

  // Each workload's ablations against FlexMARL, and whether they come in the order its design implies.
  void print_ablations() const {
    for (const Case& c : cases_) {
      const std::string& w = c.setup.workload.name;
      const double flex = step(w, "flexmarl"), nobalance = step(w, "flexmarl-nobalance"),
                   noasync = step(w, "flexmarl-noasync");
      std::printf(
          "ablations on %-12s noasync %.1f s (%+.1f%%), nobalance %.1f s (%+.1f%%) against flexmarl %.1f s: order "
          "%s\n",
          c.name.c_str(), noasync, 100 * (noasync / flex - 1), nobalance, 100 * (nobalance / flex - 1), flex,
          noasync > nobalance && nobalance > flex ? "yes" : "no");
    }
  }

 private:
  // The step of `framework` on `workload` (0 when it did not run).
  double step(std::string_view workload, std::string_view framework) const {
    for (const fm::FlexMarlRow& r : all_) {
      if (r.workload == workload && r.framework == framework) return r.step_s;
    }
    return 0;
  }

  // MA's setup, with the fitted efficiency: the first case.
  const fm::FlexMarlSetup& ma_setup() const { return cases_.front().setup; }

  // Per-device utilisation over the last step, sync and flexmarl.
  void write_timelines(const std::string& workload, const std::vector<fm::FlexMarlRow>& rows) {
    for (const fm::FlexMarlRow& r : rows) {
      if (r.framework != "sync" && r.framework != "flexmarl") continue;
      const std::string tag = slug(workload) + "_" + r.framework;
      write(out_ + "/timeline_" + tag + ".csv", fm::flexmarl_timeline_csv(r, kTimelineBins));
      timelines_.push_back(tag);
    }
  }

  void write_traces(const std::vector<fm::FlexMarlRow>& rows) const {
    for (const fm::FlexMarlRow& r : rows) {
      Status s = fm::write_flexmarl_trace(r, npu_.name, out_ + "/traces/" + r.framework + ".json");
      if (!s.is_ok()) fail(s);
    }
  }

  std::string out_;
  cluster::ClusterProfile npu_;
  std::string measured_on_;  // the device profile the engines' decode efficiency comes from
  calibrators::SyncFit fit_;
  std::vector<Case> cases_;             // MA first, CA, then the scale tests
  std::vector<fm::FlexMarlRow> all_;    // every case's frameworks
  std::vector<std::string> timelines_;  // the timeline CSVs written, as WORKLOAD_FRAMEWORK
};

}  // namespace

int main(int argc, char** argv) {
  const std::string out = argc > 1 ? argv[1] : "out/flexmarl";
  const auto start = std::chrono::steady_clock::now();
  FlexMarlStudy study(out);
  study.fit_sync();
  study.run_frameworks();
  const bool plotted = study.write_tables_and_plots();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  study.print_figures();
  study.print_ablations();
  study.print_paper_tables();
  std::printf("outputs: %s/frameworks.{csv,json}, timeline_*.csv, traces/*.json%s\n", out.c_str(),
              plotted ? ", *.png" : " (no gnuplot: no PNGs)");
  std::printf("study wall time: %.1f s\n", wall);
  return 0;
}
