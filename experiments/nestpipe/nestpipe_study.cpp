// The NestPipe scaling study (experiments/nestpipe/README.md): one command,
// every figure of the twin's side of the paper.
//
//   1. calibrate the TorchRec baseline of npu-1536 to the paper's figures
//   2. every variant at 128, 256, 512, 1,024 and 1,536 workers
//   3. the 128-GPU cluster (fuxi-kuairand on gpu-128) at 128 workers
//   4. micro-batch sensitivity at 1,536 workers: nestpipe with and without
//      key-centric clustering, micro-batches of 16 to 256 samples
//   5. a Perfetto trace per variant (128 workers, a few steps)
//   6. CSV, JSON and, when gnuplot is installed, PNG plots
//
// Prints the figures the issue checks and the study's wall time.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "calibrators/nestpipe/nestpipe_paper_fit.h"
#include "common/file_io.h"
#include "common/gnuplot.h"
#include "common/progress.h"
#include "models/cluster/cluster_profile.h"
#include "sim/nestpipe/nestpipe_twin.h"

namespace {

using namespace clustertwin;
using models::nestpipe::Variant;

constexpr double kPaperSpeedup1536 = 3.06;
constexpr double kPaperEfficiency1536 = 0.9407;
constexpr double kPaperSpeedupGpu128 = 1.36;

[[noreturn]] void fail(const Status& status) {
  std::fprintf(stderr, "nestpipe_study: %s\n", status.message().c_str());
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

const sim::nestpipe::NestPipeRow* find(const std::vector<sim::nestpipe::NestPipeRow>& rows, const std::string& variant,
                                       int workers) {
  for (const sim::nestpipe::NestPipeRow& r : rows) {
    if (r.variant == variant && r.workers == workers) return &r;
  }
  return nullptr;
}

// The JSON tables' settings: the platform, the model and the baseline's fit.
std::string rows_extra(const std::string& platform, const std::string& model, const std::string& fit_json) {
  return nlohmann::ordered_json{
      {"platform", platform}, {"model", model}, {"calibration", nlohmann::ordered_json::parse(fit_json)}}
      .dump();
}

void progress(const char* stage, const sim::nestpipe::NestPipeRow& r, int done, int total) {
  show_progress(done == total, "  %s [%d/%d] %s at %d workers: %.1f ms", stage, done, total, r.variant.c_str(),
                r.workers, r.step_ms);
}

// Gnuplot script for the four plots, reading the CSVs the study wrote.
std::string gnuplot_script(const std::string& out) {
  const std::string q = "'" + out + "/";
  std::string s =
      "set datafile separator ','\nset terminal pngcairo size 900,560 noenhanced\nset key outside right\n"
      "set grid\nset xlabel 'workers'\nset logscale x 2\nset xtics (128,256,512,1024,1536)\n";
  const char* variants[] = {"torchrec", "semisync", "dbp", "fwp", "nestpipe", "2dsp"};
  auto per_variant = [&](int column) {
    std::string plot = "plot ";
    for (const char* v : variants) {
      plot += std::string(plot == "plot " ? "" : ", ") + q + "scaling.csv' using (strcol(1) eq '" + v +
              "' ? $2 : NaN):" + std::to_string(column) + " with linespoints title '" + v + "'";
    }
    return plot + "\n";
  };
  s += "set output " + q + "step_time.png'\nset title 'NestPipe twin on npu-1536: step time'\nset ylabel 'ms'\n" +
       per_variant(3);
  s += "set output " + q +
       "scaling_efficiency.png'\nset title 'scaling efficiency (per-worker throughput vs 128)'\n"
       "set ylabel '%'\n" +
       std::string("set yrange [0:110]\n");
  {
    std::string plot = "plot ";
    for (const char* v : variants) {
      plot += std::string(plot == "plot " ? "" : ", ") + q + "scaling.csv' using (strcol(1) eq '" + v +
              "' ? $2 : NaN):($11*100) with linespoints title '" + v + "'";
    }
    s += plot + ", 94.07 with lines dashtype 2 title 'paper: nestpipe 94.07% at 1536'\n";
  }
  s += "unset yrange\nunset logscale x\nset xtics auto\n";
  s += "set output " + q +
       "breakdown_1536.png'\nset title 'where the step goes at 1,536 workers (exposed time)'\n"
       "set ylabel 'ms'\nset xlabel ''\nset style data histograms\nset style histogram rowstacked\n"
       "set style fill solid 0.8 border -1\nset boxwidth 0.7\n"
       "plot " +
       q +
       "breakdown_1536.csv' using 2:xtic(1) title 'dense compute', '' using 3 title 'exposed All2All', "
       "'' using 4 title 'exposed lookup', '' using 5 title 'other'\n";
  s += "set style data linespoints\nset output " + q +
       "microbatch.png'\n"
       "set title 'nestpipe at 1,536 workers: micro-batch size'\nset xlabel 'micro-batch (samples)'\n"
       "set logscale x 2\nset ylabel 'step ms'\n"
       // Room around the end points, which a log axis would put on the border.
       "set offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05\n"
       "plot " +
       q + "microbatch.csv' using ($3 == 1 ? $1 : NaN):4 with linespoints title 'with clustering', " + q +
       "microbatch.csv' using ($3 == 0 ? $1 : NaN):4 with linespoints title 'without clustering'\n";
  return s;
}

namespace np = sim::nestpipe;

// The study's parts in the order they run; each writes its files as it
// finishes, and the figures the issue checks are printed at the end.
class NestPipeStudy {
 public:
  NestPipeStudy(std::string out, int parallel) : out_(std::move(out)), parallel_(parallel) {
    std::error_code ec;
    std::filesystem::create_directories(out_ + "/traces", ec);
    if (ec) fail(Status::io_error(out_ + ": " + ec.message()));
  }

  // 1. npu-1536's TorchRec baseline, fitted to the paper's.
  void calibrate_baseline() {
    std::fprintf(stderr, "nestpipe study -> %s\n  calibrating npu-1536's TorchRec baseline to the paper...\n",
                 out_.c_str());
    npu_ = value_or_fail(calibrators::calibrate_nestpipe_baseline(
        value_or_fail(cluster::load_cluster_profile("npu-1536")), setup_, calibrators::PaperBaseline{}, &fit_));
  }

  // 2. Every variant at every scale: scaling.{csv,json} and where the step goes at 1,536 workers.
  void run_scaling() {
    sweep_.variants = models::nestpipe::all_variants();
    sweep_.workers = {128, 256, 512, 1024, 1536};
    sweep_.parallel = parallel_;
    sweep_.options = np::nestpipe_sim_options();
    sweep_.options.steps = 6;
    sweep_.options.warmup_steps = 2;
    sweep_.options.drain_steps = 1;
    sweep_.progress = [](const np::NestPipeRow& r, int d, int t) { progress("scaling", r, d, t); };
    rows_ = value_or_fail(np::run_nestpipe_sweep(setup_, npu_, sweep_));
    write(out_ + "/scaling.csv", np::nestpipe_rows_csv(rows_));
    write(out_ + "/scaling.json",
          np::nestpipe_rows_json(rows_, rows_extra("npu-1536", setup_.model, calibrators::baseline_fit_json(fit_))));
    std::string breakdown = "variant,compute_ms,exposed_a2a_ms,exposed_lookup_ms,other_ms\n";
    for (const np::NestPipeRow& r : rows_) {
      if (r.workers != 1536) continue;
      breakdown += r.variant + "," + std::to_string(r.compute_ms) + "," + std::to_string(r.exposed_comm_ms) + "," +
                   std::to_string(r.lookup_ms) + "," + std::to_string(r.other_ms) + "\n";
    }
    write(out_ + "/breakdown_1536.csv", breakdown);
  }

  // 3. The 128-GPU cluster, its baseline's shares assumed as at 128 NPUs.
  void run_gpu128() {
    std::fprintf(stderr, "  gpu-128 (fuxi-kuairand), baseline shares assumed as at 128 NPUs...\n");
    np::NestPipeSetup gpu_setup;
    gpu_setup.model = "fuxi-kuairand";
    calibrators::BaselineFit gpu_fit;
    const cluster::ClusterProfile gpu = value_or_fail(
        calibrators::calibrate_nestpipe_baseline(value_or_fail(cluster::load_cluster_profile("gpu-128")), gpu_setup,
                                                 calibrators::gpu_128_assumed_baseline(), &gpu_fit));
    np::NestPipeSweep gpu_sweep = sweep_;
    gpu_sweep.workers = {128};
    gpu_sweep.progress = [](const np::NestPipeRow& r, int d, int t) { progress("gpu-128", r, d, t); };
    gpu_rows_ = value_or_fail(np::run_nestpipe_sweep(gpu_setup, gpu, gpu_sweep));
    write(out_ + "/gpu128.csv", np::nestpipe_rows_csv(gpu_rows_));
    write(out_ + "/gpu128.json",
          np::nestpipe_rows_json(gpu_rows_,
                                 rows_extra("gpu-128", gpu_setup.model, calibrators::baseline_fit_json(gpu_fit))));
  }

  // 4. nestpipe at 1,536 workers with micro-batches of 256 down to 16 samples, with and without clustering.
  void run_micro_batch_sensitivity() {
    std::vector<models::Plan> plans;
    std::vector<MicroBatch> labels;
    for (int micro_size : {256, 128, 64, 32, 16}) {
      for (bool clustering : {true, false}) {
        np::NestPipeSetup s = setup_;
        s.micro_batches = setup_.batch_per_worker / micro_size;
        s.clustering = clustering;
        plans.push_back(value_or_fail(np::nestpipe_plan(s, Variant::kNestPipe, 1536)));
        labels.push_back({micro_size, clustering});
      }
    }
    std::vector<sim::SimJob> jobs;
    for (const models::Plan& p : plans) {
      sim::SimOptions o = sweep_.options;
      o.workers = 1536;
      o.steps = 4;
      o.warmup_steps = 1;
      o.drain_steps = 1;
      jobs.push_back({&p, &npu_, o});
    }
    std::fprintf(stderr, "  micro-batch sensitivity at 1,536 workers (%zu runs)...\n", jobs.size());
    write(out_ + "/microbatch.csv", tabulate_micro_batches(sim::simulate_many(jobs, parallel_), labels));
    write(out_ + "/microbatch.json", micro_batch_json());
  }

  // 5. A trace per variant: 128 workers, four steps (the pipeline filling up, then steady).
  void write_traces() const {
    np::NestPipeSweep traced = sweep_;
    traced.workers = {128};
    traced.options.steps = 4;
    traced.options.warmup_steps = 1;
    traced.options.drain_steps = 1;
    traced.trace_dir = out_ + "/traces";
    traced.progress = [](const np::NestPipeRow& r, int d, int t) { progress("traces", r, d, t); };
    value_or_fail(np::run_nestpipe_sweep(setup_, npu_, traced));
  }

  // 6. The plots, when gnuplot is installed; true when it drew them.
  bool plot() const {
    write(out_ + "/plots.gp", gnuplot_script(out_));
    return run_gnuplot_file(out_ + "/plots.gp");
  }

  // The scaling table, the fit, and the twin's figures against the paper's.
  void print_figures(bool plotted) const {
    const np::NestPipeRow* np_row = find(rows_, "nestpipe", 1536);
    const np::NestPipeRow* np_gpu = find(gpu_rows_, "nestpipe", 128);
    std::printf("%s", np::nestpipe_rows_table(rows_).c_str());
    std::printf(
        "\nbaseline fit: dense %.2f TFLOP/s, lookup %.3f GB/s + %.3f ms per requester, All2All efficiency %.3f, "
        "congestion at %.0f peers (largest miss %.2f%%)\n",
        fit_.dense_flop_rate / 1e12, fit_.lookup_byte_rate / 1e9, fit_.lookup_per_request_s * 1e3, fit_.a2a_efficiency,
        fit_.a2a_congestion_peers, 100 * fit_.max_error);
    std::printf(
        "nestpipe at 1536 on npu-1536: speedup %.2fx (paper %.2fx, %+.1f%%), scaling efficiency %.2f%% (paper "
        "%.2f%%, %+.2f points)\n",
        np_row->speedup, kPaperSpeedup1536, 100 * (np_row->speedup / kPaperSpeedup1536 - 1),
        100 * np_row->scaling_efficiency, 100 * kPaperEfficiency1536,
        100 * (np_row->scaling_efficiency - kPaperEfficiency1536));
    std::printf("nestpipe at 128 on gpu-128: speedup %.2fx (paper %.2fx, %+.1f%%)\n", np_gpu->speedup,
                kPaperSpeedupGpu128, 100 * (np_gpu->speedup / kPaperSpeedupGpu128 - 1));
    const np::NestPipeRow* dbp = find(rows_, "dbp", 1536);
    const np::NestPipeRow* sp2d = find(rows_, "2dsp", 1536);
    std::printf("at 1536: dbp %.2fx, 2dsp %.2fx (its replicas' sync every %d step(s) included)\n", dbp->speedup,
                sp2d->speedup, setup_.replica_sync_every);
    std::printf(
        "micro-batch sensitivity at 1536: best step %.1f ms at %d samples per micro-batch; exposed All2All at 16 "
        "samples %.1f ms with clustering, %.1f ms without (%.1fx)\n",
        best_step_ * 1e3, best_micro_, exposed_16_[1] * 1e3, exposed_16_[0] * 1e3,
        exposed_16_[1] > 0 ? exposed_16_[0] / exposed_16_[1] : 0.0);
    std::printf("outputs: %s/{scaling,gpu128}.{csv,json}, breakdown_1536.csv, microbatch.csv, traces/*.json%s\n",
                out_.c_str(), plotted ? ", *.png" : " (no gnuplot: no PNGs)");
  }

 private:
  struct MicroBatch {
    int samples;
    bool clustering;
  };

  // microbatch.csv, one row per run, the runs with clustering first (each series' rows together, so that the
  // plot's lines join them); keeps the best micro-batch size with clustering and the exposed All2All with and
  // without it at 16 samples.
  std::string tabulate_micro_batches(const std::vector<StatusOr<sim::SimResult>>& micro,
                                     const std::vector<MicroBatch>& labels) {
    std::string csv = "micro_batch_samples,micro_batches,clustering,step_ms,exposed_a2a_ms,a2a_ms\n";
    std::vector<size_t> order;
    for (bool clustering : {true, false}) {
      for (size_t i = 0; i < micro.size(); ++i) {
        if (labels[i].clustering == clustering) order.push_back(i);
      }
    }
    for (size_t i : order) {
      if (!micro[i].is_ok()) fail(micro[i].status());
      double a2a = 0, exposed = 0;
      for (const sim::LayerMetrics& l : micro[i]->breakdown) {
        if (l.name == "all2all") a2a = l.busy_s, exposed = l.exposed_s;
      }
      if (labels[i].clustering && (best_micro_ == 0 || micro[i]->step_time_s < best_step_)) {
        best_micro_ = labels[i].samples;
        best_step_ = micro[i]->step_time_s;
      }
      if (labels[i].samples == 16) exposed_16_[labels[i].clustering ? 1 : 0] = exposed;
      csv += std::to_string(labels[i].samples) + "," + std::to_string(setup_.batch_per_worker / labels[i].samples) +
             "," + (labels[i].clustering ? "1" : "0") + "," + std::to_string(micro[i]->step_time_s * 1e3) + "," +
             std::to_string(exposed * 1e3) + "," + std::to_string(a2a * 1e3) + "\n";
    }
    return csv;
  }

  std::string micro_batch_json() const {
    nlohmann::ordered_json j;
    j["workers"] = 1536;
    j["best_micro_batch_samples"] = best_micro_;
    j["best_step_ms"] = best_step_ * 1e3;
    j["exposed_a2a_16_clustered_ms"] = exposed_16_[1] * 1e3;
    j["exposed_a2a_16_unclustered_ms"] = exposed_16_[0] * 1e3;
    j["dbp_speedup"] = find(rows_, "dbp", 1536)->speedup;
    j["sp2d_speedup"] = find(rows_, "2dsp", 1536)->speedup;
    j["sp2d_sync_every_steps"] = setup_.replica_sync_every;
    return j.dump(1) + "\n";
  }

  std::string out_;
  int parallel_;
  np::NestPipeSetup setup_;
  calibrators::BaselineFit fit_;
  cluster::ClusterProfile npu_;  // npu-1536 with the fitted baseline
  np::NestPipeSweep sweep_;      // the scaling sweep; the other parts change a copy
  std::vector<np::NestPipeRow> rows_, gpu_rows_;
  int best_micro_ = 0;  // samples per micro-batch of the fastest step with clustering
  double best_step_ = 0, exposed_16_[2] = {0, 0};
};

}  // namespace

int main(int argc, char** argv) {
  const std::string out = argc > 1 ? argv[1] : "out/nestpipe";
  const int parallel = argc > 2 ? std::atoi(argv[2]) : 2;
  const auto start = std::chrono::steady_clock::now();
  NestPipeStudy study(out, parallel);
  study.calibrate_baseline();
  study.run_scaling();
  study.run_gpu128();
  study.run_micro_batch_sensitivity();
  study.write_traces();
  const bool plotted = study.plot();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  study.print_figures(plotted);
  std::printf("study wall time: %.1f s\n", wall);
  return 0;
}
