// clustertwin run collectives|plan: one rank's work. The command line
// (cli/real_command.cpp) only parses; this file holds what needs torch.

#include "real/core/run_commands.h"

#include <ATen/Parallel.h>

#include <cstdio>

#include "common/json.h"
#include "common/text.h"
#include "models/plan/plan_json.h"
#include "models/plan/plan_validator.h"
#include "real/core/collective_bench.h"
#include "real/core/communicator.h"
#include "real/core/dist_env.h"
#include "real/core/plan_runner.h"
#include "real/core/tracer.h"

namespace clustertwin::real {
namespace {

// Prints `text` to standard output (`path` is always "-" here).
Status write_output(const std::string& path, const std::string& text) {
  (void)path;
  std::fwrite(text.data(), 1, text.size(), stdout);
  return std::fflush(stdout) == 0 ? Status::ok() : Status::io_error("<stdout>: write failed");
}

StatusOr<std::unique_ptr<Communicator>> connect(const RealArgs& a) {
  auto env = read_dist_env();
  if (!env.is_ok()) return env.status();
  if (a.threads < 1) return Status::invalid_argument("threads " + std::to_string(a.threads) + ": must be at least 1");
  // One intra-op thread per rank by default: N ranks share this machine's cores.
  at::set_num_threads(a.threads);
  return connect_for_run(*env, a.device, a.backend, a.timeout_s);
}

}  // namespace

Status run_collectives(const RealArgs& a) {
  RealBenchOptions o;
  for (const std::string& name : split_commas(a.ops)) {
    auto op = models::collective_op_from_name(name);
    if (!op || *op == models::CollectiveOp::kSend || *op == models::CollectiveOp::kRecv) {
      return Status::invalid_argument("ops '" + a.ops + "': unknown collective '" + name +
                                      "' (allowed: allreduce, alltoall, allgather, reducescatter, broadcast)");
    }
    o.ops.push_back(*op);
  }
  auto sizes = parse_sizes(a.sizes, "sizes");
  if (!sizes.is_ok()) return sizes.status();
  o.sizes = *sizes;
  if (a.iters < 1) return Status::invalid_argument("iters " + std::to_string(a.iters) + ": must be at least 1");
  if (a.warmup < 0) return Status::invalid_argument("warmup " + std::to_string(a.warmup) + ": must be >= 0");
  o.iters = a.iters;
  o.warmup = a.warmup;
  auto comm = connect(a);
  if (!comm.is_ok()) return comm.status();
  auto world = (*comm)->world(0);
  if (!world.is_ok()) return world.status();
  CT_RETURN_IF_ERROR((*comm)->barrier(**world));
  Tracer tracer((*comm)->rank());
  tracer.start();
  auto rows = run_collective_bench(**comm, tracer, o);
  if (!rows.is_ok()) return rows.status();
  if (!a.trace.empty()) {
    const nlohmann::ordered_json config = {
        {"ops", a.ops}, {"sizes", a.sizes}, {"iters", a.iters}, {"warmup", a.warmup}};
    traces::Metadata m = real_run_metadata(**comm, "collectives", "bench", config.dump(), a.seed);
    m.streams = {"comm"};
    CT_RETURN_IF_ERROR(tracer.gather_and_write(**comm, **world, m, a.trace));
  }
  if ((*comm)->rank() != 0) return Status::ok();
  if (a.json) {
    nlohmann::ordered_json rows_json = nlohmann::ordered_json::array();
    for (const auto& r : *rows) {
      rows_json.push_back({{"op", std::string(models::collective_op_name(r.op))},
                           {"bytes", r.bytes},
                           {"count", r.count},
                           {"time_us", r.time_us},
                           {"algbw_gbps", r.algbw_gbps},
                           {"busbw_gbps", r.busbw_gbps},
                           {"wrong", r.wrong}});
    }
    const nlohmann::ordered_json out = {{"world_size", (*comm)->world_size()},
                                        {"backend", (*comm)->backend()},
                                        {"device", (*comm)->device().is_cuda() ? "cuda" : "cpu"},
                                        {"staging", (*comm)->staging()},
                                        {"rows", rows_json}};
    return write_output("-", json_document(out));
  }
  std::printf("# clustertwin run collectives: %d ranks, %s, float32, %d iterations after %d warm-up\n",
              (*comm)->world_size(), (*comm)->describe().c_str(), a.iters, a.warmup);
  std::printf("# %14s %12s %6s %14s %12s %12s %12s %7s\n", "size (B)", "count", "type", "op", "time (us)",
              "algbw (GB/s)", "busbw (GB/s)", "#wrong");
  for (const auto& r : *rows) {
    std::printf("  %14lld %12lld %6s %14s %12.2f %12.3f %12.3f %7lld\n", static_cast<long long>(r.bytes),
                static_cast<long long>(r.count), "float", std::string(models::collective_op_name(r.op)).c_str(),
                r.time_us, r.algbw_gbps, r.busbw_gbps, static_cast<long long>(r.wrong));
  }
  if (!a.trace.empty()) std::printf("# trace: %s\n", a.trace.c_str());
  return Status::ok();
}

Status run_plan(const RealArgs& a) {
  auto plan = models::read_plan(a.plan_file);
  if (!plan.is_ok()) return plan.status();
  if (a.steps < 1) return Status::invalid_argument("steps " + std::to_string(a.steps) + ": must be at least 1");
  auto comm = connect(a);
  if (!comm.is_ok()) return comm.status();
  CT_RETURN_IF_ERROR(models::validate_plan_for_world(*plan, a.plan_file, (*comm)->world_size(),
                                                     std::max(1, (*comm)->env().local_world_size)));
  auto world = (*comm)->world(0);
  if (!world.is_ok()) return world.status();
  Tracer tracer((*comm)->rank());
  RunnerOptions options;
  options.steps = a.steps;
  options.check_order = !a.no_check_order;
  PlanRunner runner(*plan, **comm, tracer, options);
  set_synthetic_bodies(runner, a.seed);
  CT_RETURN_IF_ERROR((*comm)->barrier(**world));
  tracer.start();
  CT_RETURN_IF_ERROR(runner.run().with_context(a.plan_file));
  const double elapsed_ms = tracer.now_us() / 1000.0;
  if (!a.trace.empty()) {
    const nlohmann::ordered_json config = {{"plan", a.plan_file}, {"steps", a.steps}};
    traces::Metadata m = real_run_metadata(**comm, plan->system, plan->variant, config.dump(), a.seed);
    m.streams = plan->streams;
    CT_RETURN_IF_ERROR(tracer.gather_and_write(**comm, **world, m, a.trace));
  }
  if ((*comm)->rank() == 0) {
    std::printf("%s/%s: %d steps on %d ranks (%s) in %.3f ms, %.3f ms per step%s%s\n", plan->system.c_str(),
                plan->variant.c_str(), a.steps, (*comm)->world_size(), (*comm)->describe().c_str(), elapsed_ms,
                elapsed_ms / a.steps, a.trace.empty() ? "" : "; trace: ", a.trace.c_str());
  }
  return Status::ok();
}

}  // namespace clustertwin::real
