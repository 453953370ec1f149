// clustertwin sim collective|plan: the twin from the command line.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <thread>

#include "cli/command.h"
#include "common/json.h"
#include "common/text.h"
#include "models/plan/data_parallel.h"
#include "models/plan/plan_json.h"
#include "sim/core/collective_bench.h"
#include "sim/core/simulator.h"

namespace clustertwin::cli {
namespace {

struct SimArgs {
  // sim collective
  std::string op = "allreduce";
  std::string algorithm = "auto";
  std::string bytes = "1K:1G";
  // sim plan
  std::string plan_file;
  int steps = 6;
  int warmup = 2;
  int drain = 1;
  std::string trace_out;
  bool data_parallel = false;
  double bucket_mib = 25;
  std::string grad_bytes;
  std::string grads_from;
  std::string grads_to;
  double scale_compute = 1;
  std::string write_plan;
  bool no_shortcut = false;
  // both
  std::string workers = "8";
  std::string platform = "h100-1024";
  std::string fidelity = "auto";
  bool json = false;
  std::string csv;
  int parallel = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
};

Status parse_fidelity(const std::string& text, sim::Fidelity* fidelity, bool* automatic) {
  *automatic = text == "auto";
  if (text == "auto" || text == "flow") {
    *fidelity = sim::Fidelity::kFlow;
  } else if (text == "step") {
    *fidelity = sim::Fidelity::kStep;
  } else {
    return Status::invalid_argument("--fidelity '" + text + "': unknown fidelity (allowed: auto, step, flow)");
  }
  return Status::ok();
}

// The benchmark's options from the flags: the collective, its algorithm, sizes, workers and fidelity.
StatusOr<sim::CollectiveBenchOptions> collective_options(const SimArgs& a) {
  sim::CollectiveBenchOptions o;
  auto op = models::collective_op_from_name(a.op);
  if (!op || *op == models::CollectiveOp::kRecv) {
    return Status::invalid_argument("--op '" + a.op +
                                    "': unknown collective (allowed: allreduce, alltoall, allgather, reducescatter, "
                                    "broadcast, send)");
  }
  o.op = *op;
  auto algorithm = models::algorithm_from_name(a.algorithm);
  if (!algorithm) {
    return Status::invalid_argument("--algo '" + a.algorithm +
                                    "': unknown algorithm (allowed: auto, ring, tree, halving_doubling, hierarchical, "
                                    "direct)");
  }
  o.algorithm = *algorithm;
  auto sizes = parse_sizes(a.bytes, "--bytes");
  if (!sizes.is_ok()) return sizes.status();
  o.sizes = *sizes;
  auto workers = parse_workers(a.workers);
  if (!workers.is_ok()) return workers.status();
  if (workers->size() != 1) return Status::invalid_argument("--workers '" + a.workers + "': give one worker count");
  o.workers = workers->front();
  bool automatic = false;
  CT_RETURN_IF_ERROR(parse_fidelity(a.fidelity, &o.fidelity, &automatic));
  if (automatic) o.fidelity = o.workers <= sim::kStepFidelityMaxWorkers ? sim::Fidelity::kStep : sim::Fidelity::kFlow;
  return o;
}

// The collective's rows as JSON: the benchmark's settings, then one object per size.
std::string collective_json(const SimArgs& a, const sim::CollectiveBenchOptions& o, const std::string& algo,
                            const std::string& platform, const std::vector<sim::CollectiveBenchRow>& rows) {
  nlohmann::ordered_json rows_json = nlohmann::ordered_json::array();
  for (const auto& r : rows) {
    rows_json.push_back(
        {{"bytes", r.bytes}, {"time_us", r.time_s * 1e6}, {"algbw_gbps", r.algbw_gbps}, {"busbw_gbps", r.busbw_gbps}});
  }
  const nlohmann::ordered_json out = {{"op", a.op},
                                      {"algorithm", algo},
                                      {"workers", o.workers},
                                      {"platform", platform},
                                      {"fidelity", std::string(sim::fidelity_name(o.fidelity))},
                                      {"rows", rows_json}};
  return json_document(out);
}

Status run_collective(const SimArgs& a) {
  auto options = collective_options(a);
  if (!options.is_ok()) return options.status();
  const sim::CollectiveBenchOptions& o = *options;
  auto profile = cluster::load_cluster_profile(a.platform);
  if (!profile.is_ok()) return profile.status();
  auto rows = sim::bench_collective(o, *profile);
  if (!rows.is_ok()) return in_flag_words(rows.status(), {{"sizes", "--bytes"}, {"workers", "--workers"}});

  const std::string algo(models::algorithm_name(sim::resolve_algorithm(o.op, o.algorithm)));
  if (!a.csv.empty()) {
    std::string csv = "op,algorithm,workers,platform,fidelity,bytes,time_us,algbw_gbps,busbw_gbps\n";
    for (const auto& r : *rows) {
      csv += a.op + "," + algo + "," + std::to_string(o.workers) + "," + profile->name + "," +
             std::string(sim::fidelity_name(o.fidelity)) + "," + std::to_string(r.bytes) + "," +
             json_number(r.time_s * 1e6) + "," + json_number(r.algbw_gbps) + "," + json_number(r.busbw_gbps) + "\n";
    }
    CT_RETURN_IF_ERROR(write_output(a.csv, csv));
  }
  if (a.json) return write_output("-", collective_json(a, o, algo, profile->name, *rows));
  std::printf("# clustertwin sim collective: %s (%s), %d workers on %s, fidelity %s\n", a.op.c_str(), algo.c_str(),
              o.workers, profile->name.c_str(), std::string(sim::fidelity_name(o.fidelity)).c_str());
  std::printf("# %14s %14s %12s %12s\n", "size (B)", "time (us)", "algbw (GB/s)", "busbw (GB/s)");
  for (const auto& r : *rows) {
    std::printf("  %14lld %14.2f %12.2f %12.2f\n", static_cast<long long>(r.bytes), r.time_s * 1e6, r.algbw_gbps,
                r.busbw_gbps);
  }
  return Status::ok();
}

// --scale-compute: every compute task's FLOPs times the factor. Returns the header's lines.
StatusOr<std::string> scale_plan_compute(const SimArgs& a, const cluster::ClusterProfile& profile, models::Plan* plan) {
  if (!std::isfinite(a.scale_compute) || a.scale_compute <= 0) {
    return Status::invalid_argument("--scale-compute " + format_number("%g", a.scale_compute) +
                                    ": must be a positive number");
  }
  auto scaled = models::scale_compute(*plan, a.scale_compute, a.plan_file);
  if (!scaled.is_ok()) return scaled.status();
  *plan = std::move(scaled).value();
  int fixed = 0;  // compute tasks whose cost ignores FLOPs
  for (const models::Task& t : plan->tasks) {
    auto cost = t.cost_key.empty() ? profile.costs.end() : profile.costs.find(t.cost_key);
    fixed += t.kind == models::TaskKind::kCompute && cost != profile.costs.end() && cost->second.flop_rate <= 0;
  }
  std::string said = "# compute scaled by " + json_number(a.scale_compute) + " (FLOPs of every compute task)\n";
  if (fixed > 0) {
    said += "# note: " + std::to_string(fixed) + " compute task(s) are priced by a measured time alone (cost " +
            "keys without a FLOP rate) and keep it\n";
  }
  return said;
}

// The what-if transformations sim plan applies before it runs the plan:
// --scale-compute, then --data-parallel. Returns what it did, for the table's header.
StatusOr<std::string> transform_plan(const SimArgs& a, const cluster::ClusterProfile& profile, models::Plan* plan) {
  std::string said;
  if (a.scale_compute != 1) {
    auto scaled = scale_plan_compute(a, profile, plan);
    if (!scaled.is_ok()) return scaled.status();
    said += *scaled;
  }
  if (!a.data_parallel) return said;
  models::DataParallelOptions o;
  if (!std::isfinite(a.bucket_mib) || a.bucket_mib <= 0 || std::llround(a.bucket_mib * 1048576) < 1) {
    return Status::invalid_argument("--bucket-mib " + format_number("%g", a.bucket_mib) +
                                    ": must be a positive size in MiB (at least one byte)");
  }
  o.bucket_bytes = std::llround(a.bucket_mib * 1048576);
  int64_t marked = 0;  // the plan's own gradient bytes
  for (const models::Task& t : plan->tasks)
    marked += t.grad_bytes;
  if (marked == 0 && a.grad_bytes.empty()) {
    return Status::invalid_argument("--data-parallel: no task of " + a.plan_file +
                                    " carries grad_bytes; give the gradient bytes in all with --grad-bytes");
  }
  if (marked > 0 && !a.grad_bytes.empty()) {
    return Status::invalid_argument("--grad-bytes '" + a.grad_bytes + "': the tasks of " + a.plan_file +
                                    " carry their grad_bytes (" + std::to_string(marked) + " bytes in all)");
  }
  if (!a.grad_bytes.empty()) {
    auto sizes = parse_sizes(a.grad_bytes, "--grad-bytes");
    if (!sizes.is_ok()) return sizes.status();
    if (sizes->size() != 1 || sizes->front() < 1) {
      return Status::invalid_argument("--grad-bytes '" + a.grad_bytes + "': give one size of at least 1 byte");
    }
    o.grad_bytes_total = sizes->front();
  }
  for (const auto& [flag, task] : {std::pair{"--grads-from", a.grads_from}, std::pair{"--grads-to", a.grads_to}}) {
    auto named = [&task](const models::Task& t) { return t.name == task; };
    if (!task.empty() && std::none_of(plan->tasks.begin(), plan->tasks.end(), named))
      return Status::invalid_argument(std::string(flag) + " '" + task + "': not a task of " + a.plan_file);
  }
  o.grads_first = a.grads_from;
  o.grads_last = a.grads_to;
  auto with_dp = models::add_data_parallel(*plan, o, a.plan_file);
  if (!with_dp.is_ok()) return with_dp.status();
  int64_t grads = 0;
  for (const models::Task& t : with_dp->tasks)
    grads += t.grad_bytes;
  const size_t buckets = with_dp->tasks.size() - plan->tasks.size();
  *plan = std::move(with_dp).value();
  said += "# data parallel: " + std::to_string(grads) + " bytes of gradients in " + std::to_string(buckets) +
          " all-reduce(s) of up to " + json_number(a.bucket_mib) + " MiB over all workers\n";
  return said;
}

// The rows as CSV, one per worker count.
std::string plan_csv(const std::vector<sim::SimResult>& results) {
  std::string csv = "system,variant,platform,workers,fidelity,step_time_s,compute_s,comm_s,exposed_comm_s,mfu,wall_s\n";
  for (const auto& r : results) {
    csv += r.system + "," + r.variant + "," + r.platform + "," + std::to_string(r.workers) + "," +
           std::string(sim::fidelity_name(r.fidelity)) + "," + json_number(r.step_time_s) + "," +
           json_number(r.compute_s) + "," + json_number(r.comm_s) + "," + json_number(r.exposed_comm_s) + "," +
           json_number(r.mfu) + "," + json_number(r.wall_s) + "\n";
  }
  return csv;
}

// The table: a row per worker count and, for one count, each stream's utilisation.
void print_plan_table(const SimArgs& a, const models::Plan& plan, const std::string& platform,
                      const std::string& transformed, const std::vector<sim::SimResult>& results) {
  std::printf("# clustertwin sim plan: %s/%s on %s\n", plan.system.c_str(), plan.variant.c_str(), platform.c_str());
  std::printf("%s", transformed.c_str());
  std::printf("# %8s %9s %14s %12s %12s %16s %8s %10s\n", "workers", "fidelity", "step (ms)", "compute (ms)",
              "comm (ms)", "exposed comm (ms)", "MFU", "wall (s)");
  for (const auto& r : results) {
    std::printf("  %8d %9s %14.3f %12.3f %12.3f %16.3f %7.1f%% %10.2f\n", r.workers,
                std::string(sim::fidelity_name(r.fidelity)).c_str(), r.step_time_s * 1e3, r.compute_s * 1e3,
                r.comm_s * 1e3, r.exposed_comm_s * 1e3, r.mfu * 100, r.wall_s);
  }
  if (results.size() == 1) {
    std::printf("# per stream: ");
    for (const auto& s : results[0].streams)
      std::printf("%s %.1f%% busy  ", s.stream.c_str(), s.utilization * 100);
    std::printf("\n");
  }
  if (!a.trace_out.empty()) std::printf("# trace: %s (open in https://ui.perfetto.dev)\n", a.trace_out.c_str());
}

Status run_plan(const SimArgs& a) {
  auto plan = models::read_plan(a.plan_file);
  if (!plan.is_ok()) return plan.status();
  auto workers = parse_workers(a.workers);
  if (!workers.is_ok()) return workers.status();
  auto profile = cluster::load_cluster_profile(a.platform);
  if (!profile.is_ok()) return profile.status();
  auto transformed = transform_plan(a, *profile, &*plan);
  if (!transformed.is_ok()) return transformed.status();
  if (!a.write_plan.empty()) CT_RETURN_IF_ERROR(models::write_plan(a.write_plan, *plan));
  sim::SimOptions o;
  o.steps = a.steps;
  o.warmup_steps = a.warmup;
  o.drain_steps = a.drain;
  CT_RETURN_IF_ERROR(parse_fidelity(a.fidelity, &o.fidelity, &o.auto_fidelity));
  o.collective_shortcut = !a.no_shortcut;
  if (!a.trace_out.empty() && workers->size() > 1) {
    return Status::invalid_argument("--trace-out: give one worker count to write a trace");
  }
  o.trace_out = a.trace_out;
  std::vector<sim::SimJob> jobs;
  for (int w : *workers) {
    o.workers = w;
    jobs.push_back({&*plan, &*profile, o});
  }
  std::vector<sim::SimResult> results;
  for (auto& r : sim::simulate_many(jobs, a.parallel)) {
    if (!r.is_ok()) return in_sim_option_words(r.status()).with_context(a.plan_file);
    results.push_back(std::move(r).value());
  }
  if (!a.csv.empty()) CT_RETURN_IF_ERROR(write_output(a.csv, plan_csv(results)));
  if (a.json) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const sim::SimResult& r : results)
      rows.push_back(nlohmann::ordered_json::parse(sim::sim_result_to_json(r)));
    return write_output("-", json_document({{"rows", rows}}));
  }
  print_plan_table(a, *plan, profile->name, *transformed, results);
  return Status::ok();
}

// sim collective: its flags, into the shared arguments.
void add_collective_command(CLI::App& sim, const std::shared_ptr<SimArgs>& a, Action* action) {
  CLI::App* coll = sim.add_subcommand(
      "collective",
      "Simulate one collective at a range of sizes and print nccl-tests columns (size, time, algbw, busbw; "
      "GB = 1e9 bytes; busbw = algbw x 2(n-1)/n for allreduce, (n-1)/n for allgather, reducescatter and alltoall, "
      "1 for broadcast and send)");
  coll->add_option("--op", a->op, "allreduce, alltoall, allgather, reducescatter, broadcast or send")
      ->capture_default_str();
  coll->add_option("--algo", a->algorithm, "auto, ring, tree, halving_doubling, hierarchical or direct")
      ->capture_default_str();
  coll->add_option("--bytes", a->bytes,
                   "Sizes: a doubling range LO:HI or a list, with K/M/G (powers of 1024); per-rank buffer for "
                   "allreduce/broadcast/send, total per rank for alltoall, total size for allgather/reducescatter")
      ->capture_default_str();
  coll->add_option("--workers", a->workers, "Number of workers")->capture_default_str();
  coll->add_option(
          "--platform", a->platform,
          "Shipped profile (npu-1536, npu-768, gpu-128, h100-1024, h200-1gpu, localhost-cpu, a100-dgx, h100-dgx, "
          "h200-dgx) or a YAML file")
      ->capture_default_str();
  coll->add_option(
          "--fidelity", a->fidelity,
          "step (every message), flow (aggregate flows per phase and node pair), or auto (step up to 64 workers)")
      ->capture_default_str();
  coll->add_flag("--json", a->json, "Print JSON instead of the table");
  coll->add_option("--csv", a->csv, "Also write the rows as CSV to this file (atomically)");
  coll->callback([a, action] { *action = [a] { return run_collective(*a); }; });
}

// sim plan: its flags, the what-if transformations' among them.
void add_plan_command(CLI::App& sim, const std::shared_ptr<SimArgs>& a, Action* action) {
  CLI::App* plan = sim.add_subcommand(
      "plan",
      "Run a hand-written step plan (JSON, see models/plan/README.md) on a platform and report step time, "
      "compute, communication, exposed communication, MFU and per-stream utilisation");
  plan->add_option("PLAN", a->plan_file, "Plan file (.json)")->required();
  plan->add_option("--workers", a->workers, "Worker count, or a list: 128,256,512")->capture_default_str();
  plan->add_option("--platform", a->platform, "Shipped profile or a YAML file")->capture_default_str();
  plan->add_option("--steps", a->steps, "Steps to simulate")->capture_default_str();
  plan->add_option("--warmup", a->warmup, "Steps before the measured window")->capture_default_str();
  plan->add_option("--drain", a->drain,
                   "Steps after the measured window (a pipeline's last steps have nothing behind them)")
      ->capture_default_str();
  plan->add_option("--fidelity", a->fidelity, "auto, step or flow")->capture_default_str();
  plan->add_option("--trace-out", a->trace_out, "Write the simulated trace (Perfetto shows the pipeline)");
  plan->add_flag("--no-collective-shortcut", a->no_shortcut,
                 "Move every collective over the network as flows (default: where one collective at a time has the "
                 "fabric, each distinct one is simulated once and its repeats take its time; the same results within "
                 "1e-9 relative)");
  plan->add_flag("--json", a->json, "Print JSON (one row per worker count)");
  plan->add_option("--csv", a->csv, "Also write the rows as CSV to this file (atomically)");
  CLI::Option* dp = plan->add_flag(
      "--data-parallel", a->data_parallel,
      "Add data parallelism as PyTorch's DDP does: the gradients (the tasks' grad_bytes, or --grad-bytes) "
      "all-reduced over all workers in buckets of --bucket-mib, each launched once the task that completes it "
      "ends, on a stream of its own ('dp allreduce'), overlapping the rest of the backward; the task after the "
      "last gradient (the optimizer) waits for the last bucket. For a step without its gradient all-reduce (a "
      "one-GPU trace). A plan that has its collectives changes its data-parallel degree with --workers alone");
  plan->add_option("--bucket-mib", a->bucket_mib, "Gradient bucket size in MiB (DDP's bucket_cap_mb)")
      ->capture_default_str()
      ->needs(dp);
  CLI::Option* grad_bytes =
      plan->add_option("--grad-bytes", a->grad_bytes,
                       "Gradient bytes in all (K/M/G: powers of 1024), for a plan whose tasks carry no grad_bytes: "
                       "spread evenly over the compute tasks from --grads-from to --grads-to")
          ->needs(dp);
  plan->add_option("--grads-from", a->grads_from,
                   "With --grad-bytes: the first task (by name) that completes gradients (default: the first "
                   "compute task)")
      ->needs(grad_bytes);
  plan->add_option("--grads-to", a->grads_to,
                   "With --grad-bytes: the last task (by name) that completes gradients (default: the last compute "
                   "task)")
      ->needs(grad_bytes);
  plan->add_option("--scale-compute", a->scale_compute,
                   "Multiply every compute task's FLOPs (a batch this many times the plan's); tasks priced by a "
                   "measured time alone (the kernels of a derived plan) keep it")
      ->capture_default_str();
  plan->add_option("--write-plan", a->write_plan,
                   "Write the plan as simulated (after --scale-compute and --data-parallel) to this file (atomically)");
  plan->add_option("--parallel", a->parallel, "Simulations run at once, each in its own process (default: cores)")
      ->check(CLI::Range(1, 256));
  plan->callback([a, action] { *action = [a] { return run_plan(*a); }; });
}

}  // namespace

StatusOr<std::vector<int>> parse_workers(const std::string& text) {
  std::vector<int> out;
  for (const std::string& item : split_commas(text)) {
    char* end = nullptr;
    const long value = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || value < 1 || value > (1 << 20)) {
      return Status::invalid_argument("--workers '" + text + "': '" + item +
                                      "' is not a worker count (a positive integer; several as 128,256,512)");
    }
    out.push_back(static_cast<int>(value));
  }
  return out;
}

void add_sim_command(CLI::App& app, Action* action) {
  auto a = std::make_shared<SimArgs>();
  CLI::App* sim = app.add_subcommand("sim", "Run the twin (SimGrid): collectives, hand-written plans, systems");
  sim->require_subcommand(1, 1);

  add_collective_command(*sim, a, action);
  add_plan_command(*sim, a, action);

#define CT_SYSTEM(name, title) add_sim_##name##_command(*sim, action);
#include "common/systems.def"
#undef CT_SYSTEM
  add_sim_mix_command(*sim, action);
  add_sim_sweep_commands(*sim, action);
}

}  // namespace clustertwin::cli
