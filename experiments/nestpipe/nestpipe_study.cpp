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

#include "calibrators/nestpipe_paper_fit.h"
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
       "plot " +
       q + "microbatch.csv' using ($3 == 1 ? $1 : NaN):4 with linespoints title 'with clustering', " + q +
       "microbatch.csv' using ($3 == 0 ? $1 : NaN):4 with linespoints title 'without clustering'\n";
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string out = argc > 1 ? argv[1] : "out/nestpipe";
  const int parallel = argc > 2 ? std::atoi(argv[2]) : 2;
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  std::filesystem::create_directories(out + "/traces", ec);
  if (ec) fail(Status::io_error(out + ": " + ec.message()));

  // 1. The baseline, fitted to the paper's TorchRec.
  std::fprintf(stderr, "nestpipe study -> %s\n  calibrating npu-1536's TorchRec baseline to the paper...\n",
               out.c_str());
  sim::nestpipe::NestPipeSetup setup;
  calibrators::BaselineFit fit;
  const cluster::ClusterProfile npu = value_or_fail(calibrators::calibrate_nestpipe_baseline(
      value_or_fail(cluster::load_cluster_profile("npu-1536")), setup, calibrators::PaperBaseline{}, &fit));

  // 2. Every variant at every scale.
  sim::nestpipe::NestPipeSweep sweep;
  sweep.variants = models::nestpipe::all_variants();
  sweep.workers = {128, 256, 512, 1024, 1536};
  sweep.parallel = parallel;
  sweep.options = sim::nestpipe::nestpipe_sim_options();
  sweep.options.steps = 6;
  sweep.options.warmup_steps = 2;
  sweep.options.drain_steps = 1;
  sweep.progress = [](const sim::nestpipe::NestPipeRow& r, int d, int t) { progress("scaling", r, d, t); };
  const auto rows = value_or_fail(sim::nestpipe::run_nestpipe_sweep(setup, npu, sweep));
  write(out + "/scaling.csv", sim::nestpipe::nestpipe_rows_csv(rows));
  write(out + "/scaling.json",
        sim::nestpipe::nestpipe_rows_json(rows, "{\"platform\":\"npu-1536\",\"model\":\"" + setup.model +
                                                    "\",\"calibration\":" + calibrators::baseline_fit_json(fit) + "}"));
  std::string breakdown = "variant,compute_ms,exposed_a2a_ms,exposed_lookup_ms,other_ms\n";
  for (const sim::nestpipe::NestPipeRow& r : rows) {
    if (r.workers != 1536) continue;
    breakdown += r.variant + "," + std::to_string(r.compute_ms) + "," + std::to_string(r.exposed_comm_ms) + "," +
                 std::to_string(r.lookup_ms) + "," + std::to_string(r.other_ms) + "\n";
  }
  write(out + "/breakdown_1536.csv", breakdown);

  // 3. The 128-GPU cluster.
  std::fprintf(stderr, "  gpu-128 (fuxi-kuairand), baseline shares assumed as at 128 NPUs...\n");
  sim::nestpipe::NestPipeSetup gpu_setup;
  gpu_setup.model = "fuxi-kuairand";
  calibrators::BaselineFit gpu_fit;
  const cluster::ClusterProfile gpu = value_or_fail(
      calibrators::calibrate_nestpipe_baseline(value_or_fail(cluster::load_cluster_profile("gpu-128")), gpu_setup,
                                               calibrators::gpu_128_assumed_baseline(), &gpu_fit));
  sim::nestpipe::NestPipeSweep gpu_sweep = sweep;
  gpu_sweep.workers = {128};
  gpu_sweep.progress = [](const sim::nestpipe::NestPipeRow& r, int d, int t) { progress("gpu-128", r, d, t); };
  const auto gpu_rows = value_or_fail(sim::nestpipe::run_nestpipe_sweep(gpu_setup, gpu, gpu_sweep));
  write(out + "/gpu128.csv", sim::nestpipe::nestpipe_rows_csv(gpu_rows));
  write(out + "/gpu128.json", sim::nestpipe::nestpipe_rows_json(
                                  gpu_rows, "{\"platform\":\"gpu-128\",\"model\":\"" + gpu_setup.model +
                                                "\",\"calibration\":" + calibrators::baseline_fit_json(gpu_fit) + "}"));

  // 4. Micro-batch size, with and without clustering, at 1,536 workers.
  std::vector<models::Plan> plans;
  std::vector<std::pair<int, bool>> labels;
  for (int micro_size : {256, 128, 64, 32, 16}) {
    for (bool clustering : {true, false}) {
      sim::nestpipe::NestPipeSetup s = setup;
      s.micro_batches = setup.batch_per_worker / micro_size;
      s.clustering = clustering;
      plans.push_back(value_or_fail(sim::nestpipe::nestpipe_plan(s, Variant::kNestPipe, 1536)));
      labels.emplace_back(micro_size, clustering);
    }
  }
  std::vector<sim::SimJob> jobs;
  for (const models::Plan& p : plans) {
    sim::SimOptions o = sweep.options;
    o.workers = 1536;
    o.steps = 4;
    o.warmup_steps = 1;
    o.drain_steps = 1;
    jobs.push_back({&p, &npu, o});
  }
  std::fprintf(stderr, "  micro-batch sensitivity at 1,536 workers (%zu runs)...\n", jobs.size());
  const auto micro = sim::simulate_many(jobs, parallel);
  std::string micro_csv = "micro_batch_samples,micro_batches,clustering,step_ms,exposed_a2a_ms,a2a_ms\n";
  // The best micro-batch size with clustering, and the exposed All2All with and without it at 16 samples.
  int best_micro = 0;
  double best_step = 0, exposed_16[2] = {0, 0};
  for (size_t i = 0; i < micro.size(); ++i) {
    if (!micro[i].is_ok()) fail(micro[i].status());
    double a2a = 0, exposed = 0;
    for (const sim::LayerMetrics& l : micro[i]->breakdown) {
      if (l.name == "all2all") a2a = l.busy_s, exposed = l.exposed_s;
    }
    if (labels[i].second && (best_micro == 0 || micro[i]->step_time_s < best_step)) {
      best_micro = labels[i].first;
      best_step = micro[i]->step_time_s;
    }
    if (labels[i].first == 16) exposed_16[labels[i].second ? 1 : 0] = exposed;
    micro_csv += std::to_string(labels[i].first) + "," + std::to_string(setup.batch_per_worker / labels[i].first) +
                 "," + (labels[i].second ? "1" : "0") + "," + std::to_string(micro[i]->step_time_s * 1e3) + "," +
                 std::to_string(exposed * 1e3) + "," + std::to_string(a2a * 1e3) + "\n";
  }
  write(out + "/microbatch.csv", micro_csv);
  {
    const sim::nestpipe::NestPipeRow* dbp_row = find(rows, "dbp", 1536);
    const sim::nestpipe::NestPipeRow* sp2d_row = find(rows, "2dsp", 1536);
    nlohmann::ordered_json j;
    j["workers"] = 1536;
    j["best_micro_batch_samples"] = best_micro;
    j["best_step_ms"] = best_step * 1e3;
    j["exposed_a2a_16_clustered_ms"] = exposed_16[1] * 1e3;
    j["exposed_a2a_16_unclustered_ms"] = exposed_16[0] * 1e3;
    j["dbp_speedup"] = dbp_row->speedup;
    j["sp2d_speedup"] = sp2d_row->speedup;
    j["sp2d_sync_every_steps"] = setup.replica_sync_every;
    write(out + "/microbatch.json", j.dump(1) + "\n");
  }

  // 5. A trace per variant: 128 workers, four steps (the pipeline filling up, then steady).
  sim::nestpipe::NestPipeSweep traced = sweep;
  traced.workers = {128};
  traced.options.steps = 4;
  traced.options.warmup_steps = 1;
  traced.options.drain_steps = 1;
  traced.trace_dir = out + "/traces";
  traced.progress = [](const sim::nestpipe::NestPipeRow& r, int d, int t) { progress("traces", r, d, t); };
  value_or_fail(sim::nestpipe::run_nestpipe_sweep(setup, npu, traced));

  // 6. Plots.
  write(out + "/plots.gp", gnuplot_script(out));
  const bool plotted = run_gnuplot_file(out + "/plots.gp");

  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const sim::nestpipe::NestPipeRow* np = find(rows, "nestpipe", 1536);
  const sim::nestpipe::NestPipeRow* np_gpu = find(gpu_rows, "nestpipe", 128);
  std::printf("%s", sim::nestpipe::nestpipe_rows_table(rows).c_str());
  std::printf(
      "\nbaseline fit: dense %.2f TFLOP/s, lookup %.3f GB/s + %.3f ms per requester, All2All efficiency %.3f, "
      "congestion at %.0f peers (largest miss %.2f%%)\n",
      fit.dense_flop_rate / 1e12, fit.lookup_byte_rate / 1e9, fit.lookup_per_request_s * 1e3, fit.a2a_efficiency,
      fit.a2a_congestion_peers, 100 * fit.max_error);
  std::printf(
      "nestpipe at 1536 on npu-1536: speedup %.2fx (paper %.2fx, %+.1f%%), scaling efficiency %.2f%% (paper "
      "%.2f%%, %+.2f points)\n",
      np->speedup, kPaperSpeedup1536, 100 * (np->speedup / kPaperSpeedup1536 - 1), 100 * np->scaling_efficiency,
      100 * kPaperEfficiency1536, 100 * (np->scaling_efficiency - kPaperEfficiency1536));
  std::printf("nestpipe at 128 on gpu-128: speedup %.2fx (paper %.2fx, %+.1f%%)\n", np_gpu->speedup,
              kPaperSpeedupGpu128, 100 * (np_gpu->speedup / kPaperSpeedupGpu128 - 1));
  const sim::nestpipe::NestPipeRow* dbp = find(rows, "dbp", 1536);
  const sim::nestpipe::NestPipeRow* sp2d = find(rows, "2dsp", 1536);
  std::printf("at 1536: dbp %.2fx, 2dsp %.2fx (its replicas' sync every %d step(s) included)\n", dbp->speedup,
              sp2d->speedup, setup.replica_sync_every);
  std::printf(
      "micro-batch sensitivity at 1536: best step %.1f ms at %d samples per micro-batch; exposed All2All at 16 "
      "samples %.1f ms with clustering, %.1f ms without (%.1fx)\n",
      best_step * 1e3, best_micro, exposed_16[1] * 1e3, exposed_16[0] * 1e3,
      exposed_16[1] > 0 ? exposed_16[0] / exposed_16[1] : 0.0);
  std::printf("outputs: %s/{scaling,gpu128}.{csv,json}, breakdown_1536.csv, microbatch.csv, traces/*.json%s\n",
              out.c_str(), plotted ? ", *.png" : " (no gnuplot: no PNGs)");
  std::printf("study wall time: %.1f s\n", wall);
  return 0;
}
