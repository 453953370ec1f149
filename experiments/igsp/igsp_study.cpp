// The IGSP calibration study (experiments/igsp/README.md): one command, from
// the shipped checkpoint, every figure of the paper's abstract at this
// machine's scale.
//
//   1. prune with each of the 15 sources, the random-bytes control, Self-Cal,
//      SGS and IGSP (both aggregation signs), for every seed
//   2. the retention table (per dimension and total, mean and 95% t-interval
//      over seeds) and the information metrics of every calibration set
//   3. Spearman's rho of every metric against every dimension's retention
//      over the 15 sources, exact permutation p-values, Holm-corrected
//   4. the comparisons: uniform mix vs best single source, IGSP vs Self-Cal
//      and SGS, and the paper's opposite-sign trade-off
//   5. CSV, JSON and (with gnuplot) PNG plots, all written atomically
//
// Prints the tables and its own wall time. The tables themselves are built in
// igsp_study_tables.cpp (igsp_study_internal.h lists the files).

#include <malloc.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/file_io.h"
#include "common/gnuplot.h"
#include "common/text.h"
#include "experiments/igsp/igsp_study_internal.h"
#include "real/igsp/study.h"

namespace clustertwin::experiments::igsp::detail {

void fail(const Status& status) {
  std::fprintf(stderr, "igsp_study: %s\n", status.message().c_str());
  std::exit(status.exit_code());
}

void write(const std::string& path, const std::string& text) {
  Status s = write_file_atomically(path, text);
  if (!s.is_ok()) fail(s);
}

}  // namespace clustertwin::experiments::igsp::detail

namespace {

using namespace clustertwin;
using namespace clustertwin::experiments::igsp::detail;
using clustertwin::SeedSummary;
using real::igsp::StudyRun;

// The library names the options' fields ("seeds 0: must be >= 1"); these are the flags that set them. A bad set
// name comes back as prune's (`calib`), and the message names --calib as it always has.
Status in_study_flag_words(const Status& status) {
  return with_leading_word_replaced(status, {{"seeds", "--seeds"},
                                             {"jobs", "--jobs"},
                                             {"eval_items", "--items"},
                                             {"eval_windows", "--windows"},
                                             {"sparsity", "--sparsity"},
                                             {"samples", "--samples"},
                                             {"method", "--method"},
                                             {"calib", "--calib"}});
}

// Each run allocates and frees activations of a few MiB thousands of times. By default glibc gives such
// memory back to the kernel (unmapping or trimming it) and takes it again, a zeroed page fault per 4 KiB:
// about 4% of the study's CPU time. Keeping it costs some resident memory, nothing else.
void keep_freed_memory() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest: blocks up to 32 MiB come from the heap
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

// The study's options, its runs and the tables built from them, phase by phase.
class IgspStudy {
 public:
  IgspStudy() {
    o_.checkpoint = std::string(CT_SOURCE_DIR) + "/models/igsp/data/byte_lm.pt";
    o_.prune.layer.sparsity = 0.6;
    o_.seeds = 5;
    o_.eval_items = 600;  // the dense model gets ~5% of held-out arithmetic right: 200 items would be ~11
  }

  // The flags, then the output folder; an exit code when the program stops here (0 after --help, 2 for a
  // bad flag).
  std::optional<int> parse(int argc, char** argv) {
    CLI::App app{
        "The IGSP calibration study: prune the shipped byte-level model at 60% with each of the 15 calibration "
        "sources (the four domains and their mixtures), the random-bytes control, Self-Cal, SGS and IGSP (both "
        "4-gram aggregation signs), over several seeds; write the retention table, the information metrics, "
        "Spearman's rho of each metric against each dimension's retention (exact permutation p-values, Holm), the "
        "comparisons and plots.",
        "ct_igsp_study"};
    app.add_option("--model", o_.checkpoint, "Dense checkpoint (clustertwin igsp train)")->capture_default_str();
    app.add_option("-o,--out", out_, "Output folder")->capture_default_str();
    app.add_option("--seeds", o_.seeds, "Seeds per calibration set (calibration draws and generation)")
        ->capture_default_str();
    app.add_option("--first-seed", o_.first_seed, "First seed")->capture_default_str();
    app.add_option("--jobs", o_.jobs, "Runs in parallel, one thread each")->capture_default_str();
    app.add_option("--method", method_, "sparsegpt, wanda or magnitude")->capture_default_str();
    app.add_option("--sparsity", o_.prune.layer.sparsity, "Unstructured sparsity, in [0, 1)")->capture_default_str();
    app.add_option("--samples", o_.calibration.samples, "Calibration samples per set (each the model's context long)")
        ->capture_default_str();
    app.add_option("--items", o_.eval_items, "Held-out arithmetic and commonsense items each")->capture_default_str();
    app.add_option("--windows", o_.eval_windows, "Held-out windows per perplexity")->capture_default_str();
    app.add_option("--sets", sets_, "Comma-separated calibration sets instead of all (as clustertwin prune --calib)");
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
      std::printf("%s", app.help().c_str());
      return 0;
    } catch (const CLI::ParseError& e) {
      std::fprintf(stderr, "igsp_study: %s\n", e.what());
      return 2;
    }
    apply_flags();
    return std::nullopt;
  }

  // Prunes with every set and seed, the progress on stderr; then each set's summary over its seeds.
  void run() {
    // The header comes with the first finished run, so that bad input stays one line.
    auto result = real::igsp::run_study(o_, [this](const StudyRun& r, int done, int total) {
      if (done == 1)
        std::fprintf(stderr, "igsp_study: %s, %d runs (%d seed(s) each), %d job(s)\n", o_.checkpoint.c_str(), total,
                     o_.seeds, o_.jobs);
      std::fprintf(stderr, "  [%2d/%d] %-34s seed %llu: total retention %6.2f%%  (%.1f s)\n", done, total,
                   r.set.c_str(), static_cast<unsigned long long>(r.seed), r.retention.back(), r.seconds);
    });
    if (!result.is_ok()) fail(in_study_flag_words(result.status()));
    result_ = std::move(*result);
    summary_ = summarise_sets(result_.runs);
  }

  // runs.csv, retention.csv, metrics.csv, rho.csv, rho_grid.csv and study.json.
  void write_tables() {
    write(out_ + "/runs.csv", runs_csv(result_.runs));
    retention_ = tabulate_retention(summary_, method_, o_);
    write(out_ + "/retention.csv", retention_.retention_csv);
    write(out_ + "/metrics.csv", retention_.metrics_csv);
    rho_ = tabulate_rho(summary_);
    write(out_ + "/rho.csv", rho_.csv);
    write(out_ + "/rho_grid.csv", rho_.grid);
    comparisons_ = compare_sets(summary_, o_.seeds);
    tradeoff_ = check_tradeoff(rho_.cells);
    write(out_ + "/study.json",
          study_json(o_, method_, result_, summary_, rho_, comparisons_, tradeoff_).dump(2) + "\n");
  }

  // plots.gp, and the PNGs when gnuplot is installed; true when it drew them.
  bool plot() const {
    double top = 105;  // the dense line at 100 stays in view
    for (const SetSummary& s : summary_)
      for (const SeedSummary& r : s.retention)
        top = std::max(top, r.mean + 5);
    write(out_ + "/plots.gp", gnuplot_script(out_, kMetrics, top));
    return run_gnuplot_file(out_ + "/plots.gp");
  }

  // The dense model's scores, then every table.
  void print_tables() const {
    std::string dense_line = "\nDense model:";
    for (const auto& s : result_.dense)
      dense_line += std::string(" ") + clustertwin::models::igsp::domain_name(s.domain) + " " + s.metric + " " +
                    format_number("%.4f", s.value) + ";";
    std::printf("%s\n%s%s%s%s", dense_line.c_str(), retention_.text.c_str(), rho_.text.c_str(),
                comparisons_.text.c_str(), tradeoff_.text.c_str());
  }

  void print_outputs(bool plotted) const {
    std::printf("\noutputs: %s/{runs,retention,metrics,rho}.csv, study.json%s\n", out_.c_str(),
                plotted ? ", retention.png, rho_heatmap.png" : " (no gnuplot: no PNGs)");
  }

 private:
  // The flags that need more than a copy: the method's name, the set list, the output folder.
  void apply_flags() {
    auto m = real::igsp::prune_method_from_name(method_);
    if (!m.is_ok()) fail(in_study_flag_words(m.status()));
    o_.prune.method = *m;
    if (!sets_.empty()) o_.sets = split_commas(sets_);
    std::error_code ec;
    std::filesystem::create_directories(out_, ec);
    if (ec) fail(Status::invalid_argument("--out " + out_ + ": " + ec.message()));
  }

  real::igsp::StudyOptions o_;
  std::string out_ = "out/igsp", method_ = "sparsegpt", sets_;
  real::igsp::StudyResult result_;
  std::vector<SetSummary> summary_;
  RetentionTables retention_;
  RhoTables rho_;
  Comparisons comparisons_;
  Tradeoff tradeoff_;
};

}  // namespace

int main(int argc, char** argv) {
  IgspStudy study;
  if (const std::optional<int> stop = study.parse(argc, argv)) return *stop;
  keep_freed_memory();
  const auto start = std::chrono::steady_clock::now();
  study.run();
  study.write_tables();
  const bool plotted = study.plot();
  study.print_tables();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  study.print_outputs(plotted);
  std::printf("study wall time: %.1f s\n", wall);
  return 0;
}
