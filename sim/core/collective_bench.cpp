#include "sim/core/collective_bench.h"

#include "common/text.h"
#include "sim/core/simulator.h"

namespace clustertwin::sim {
models::Plan collective_bench_plan(const CollectiveBenchOptions& options) {
  models::Plan plan;
  plan.system = "collectives";
  plan.variant = std::string(models::collective_op_name(options.op));
  plan.streams = {"comm"};
  const bool p2p = options.op == models::CollectiveOp::kSend || options.op == models::CollectiveOp::kRecv;
  for (size_t i = 0; i < options.sizes.size(); ++i) {
    const int64_t bytes = options.sizes[i];
    auto add = [&](models::CollectiveOp op, int peer_offset, std::vector<models::RankRange> ranks) {
      models::Task t;
      t.id = static_cast<int>(plan.tasks.size());
      t.name = std::string(models::collective_op_name(op)) + " " + std::to_string(bytes) + " B";
      t.kind = models::TaskKind::kCollective;
      t.stream = 0;
      t.bytes = bytes;
      t.cost_key = "collective";
      models::Collective c;
      c.op = op;
      c.algorithm = options.algorithm;
      c.peer_offset = peer_offset;
      c.tag = static_cast<int>(i);
      t.collective = c;
      t.ranks = std::move(ranks);
      plan.tasks.push_back(std::move(t));
    };
    if (p2p) {
      // Rank 0 sends to rank 1, as nccl-tests' sendrecv between two ranks.
      add(models::CollectiveOp::kSend, 1, {{0, 1}});
      add(models::CollectiveOp::kRecv, -1, {{1, 2}});
    } else {
      add(options.op, 0, {});
    }
  }
  return plan;
}

StatusOr<std::vector<CollectiveBenchRow>> bench_collective(const CollectiveBenchOptions& options,
                                                           const cluster::ClusterProfile& profile) {
  if (options.sizes.empty()) return Status::invalid_argument("sizes: none given");
  const models::Plan plan = collective_bench_plan(options);
  SimOptions sim;
  sim.workers = options.workers;
  sim.steps = 1;
  sim.warmup_steps = 0;
  sim.drain_steps = 0;
  sim.auto_fidelity = false;
  sim.fidelity = options.fidelity;
  auto result = simulate_plan(plan, profile, sim);
  if (!result.is_ok()) return result.status();
  std::vector<CollectiveBenchRow> rows;
  const bool p2p = options.op == models::CollectiveOp::kSend || options.op == models::CollectiveOp::kRecv;
  const size_t per_size = p2p ? 2 : 1;
  for (size_t i = 0; i < options.sizes.size(); ++i) {
    CollectiveBenchRow row;
    row.bytes = options.sizes[i];
    // The recv of a pair ends with the transfer: its duration is the time.
    row.time_s = result->tasks[i * per_size + (per_size - 1)].max_s;
    row.algbw_gbps = row.time_s > 0 ? static_cast<double>(row.bytes) / row.time_s / 1e9 : 0;
    row.busbw_gbps = row.algbw_gbps * cluster::bus_factor(options.op, p2p ? 2 : options.workers);
    rows.push_back(row);
  }
  return rows;
}

}  // namespace clustertwin::sim
