#include "real/core/collective_bench.h"

#include <chrono>

namespace clustertwin::real {
namespace {

using models::CollectiveOp;

double bus_factor(CollectiveOp op, int n) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return 2.0 * (n - 1) / n;
    case CollectiveOp::kAllToAll:
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
      return static_cast<double>(n - 1) / n;
    default:
      return 1.0;
  }
}

// Buffers of one (op, size): `in` and `out` as the operation needs them.
struct Buffers {
  at::Tensor in, out;
};

Buffers make_buffers(CollectiveOp op, int64_t count, int n, at::Device device) {
  auto opts = at::TensorOptions().dtype(at::kFloat).device(device);
  switch (op) {
    case CollectiveOp::kAllGather:
      return {at::zeros({count / n}, opts), at::zeros({count}, opts)};
    case CollectiveOp::kReduceScatter:
      return {at::zeros({count}, opts), at::zeros({count / n}, opts)};
    default:
      return {at::zeros({count}, opts), at::zeros({count}, opts)};
  }
}

Status run_once(Communicator& comm, Group& g, CollectiveOp op, Buffers& b) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return comm.all_reduce(g, b.in);
    case CollectiveOp::kAllToAll:
      return comm.all_to_all(g, b.out, b.in);
    case CollectiveOp::kAllGather:
      return comm.all_gather(g, b.out, b.in);
    case CollectiveOp::kReduceScatter:
      return comm.reduce_scatter(g, b.out, b.in);
    case CollectiveOp::kBroadcast:
      return comm.broadcast(g, b.in, 0);
    default:
      return Status::invalid_argument("ops: " + std::string(models::collective_op_name(op)) +
                                      " is not benchmarked (allowed: allreduce, alltoall, allgather, reducescatter, "
                                      "broadcast)");
  }
}

// Fills the input with known values, runs once, and counts wrong elements.
// Values are small integers, exact in float32.
StatusOr<int64_t> check(Communicator& comm, Group& g, CollectiveOp op, Buffers& b) {
  const int n = g.size();
  const int64_t r = g.index;
  at::Tensor k = at::arange(b.in.numel(), at::TensorOptions().dtype(at::kLong));
  at::Tensor expected;
  switch (op) {
    case CollectiveOp::kAllReduce:
      // in[i] = (r + 1)(i mod 7 + 1); the sum over ranks is n(n+1)/2 (i mod 7 + 1).
      b.in.copy_(((k % 7 + 1) * (r + 1)).to(at::kFloat));
      expected = ((k % 7 + 1) * (n * (n + 1) / 2)).to(at::kFloat);
      break;
    case CollectiveOp::kAllToAll: {
      // Chunk j of rank r holds 64 r + j; chunk i received from rank i holds 64 i + r.
      const int64_t chunk = b.in.numel() / n;
      b.in.copy_((k.div(chunk, "floor") + 64 * r).to(at::kFloat));
      expected = (k.div(chunk, "floor") * 64 + r).to(at::kFloat);
      break;
    }
    case CollectiveOp::kAllGather: {
      // Rank r sends (r + 1) + (i mod 5); chunk i of the output holds (i + 1) + (i mod 5).
      b.in.copy_((k % 5 + r + 1).to(at::kFloat));
      at::Tensor ko = at::arange(b.out.numel(), at::TensorOptions().dtype(at::kLong));
      const int64_t chunk = b.in.numel();
      expected = ((ko % chunk) % 5 + ko.div(chunk, "floor") + 1).to(at::kFloat);
      break;
    }
    case CollectiveOp::kReduceScatter: {
      // Chunk j of rank r holds (r + 1)(j + 1); rank r ends with (r + 1) n(n+1)/2.
      const int64_t chunk = b.in.numel() / n;
      b.in.copy_(((k.div(chunk, "floor") + 1) * (r + 1)).to(at::kFloat));
      expected = at::full({b.out.numel()}, static_cast<float>((r + 1) * n * (n + 1) / 2));
      break;
    }
    case CollectiveOp::kBroadcast:
      // The root holds i mod 11, the others zeros.
      b.in.copy_(r == 0 ? (k % 11).to(at::kFloat) : at::zeros({b.in.numel()}));
      expected = (k % 11).to(at::kFloat);
      break;
    default:
      return Status::internal("no check for this collective");
  }
  CT_RETURN_IF_ERROR(run_once(comm, g, op, b));
  const bool in_place = op == CollectiveOp::kAllReduce || op == CollectiveOp::kBroadcast;
  at::Tensor result = (in_place ? b.in : b.out).to(at::kCPU);
  at::Tensor wrong = at::full({1}, (result != expected).sum().item<int64_t>(),
                              at::TensorOptions().dtype(at::kLong).device(comm.device()));
  CT_RETURN_IF_ERROR(comm.all_reduce(g, wrong));
  return wrong.item<int64_t>();
}

}  // namespace

StatusOr<std::vector<RealBenchRow>> run_collective_bench(Communicator& comm, Tracer& tracer,
                                                         const RealBenchOptions& options) {
  auto world = comm.world(0);
  if (!world.is_ok()) return world.status();
  Group& g = **world;
  const int n = g.size();
  std::vector<RealBenchRow> rows;
  for (CollectiveOp op : options.ops) {
    for (int64_t bytes : options.sizes) {
      RealBenchRow row;
      row.op = op;
      row.bytes = bytes;
      // Whole float32 elements, divisible into n chunks where the operation splits the buffer.
      const int64_t unit = (op == CollectiveOp::kAllReduce || op == CollectiveOp::kBroadcast) ? 1 : n;
      row.count = std::max<int64_t>(unit, bytes / 4 / unit * unit);
      Buffers b = make_buffers(op, row.count, n, comm.device());
      for (int i = 0; i < options.warmup; ++i)
        CT_RETURN_IF_ERROR(run_once(comm, g, op, b));
      CT_RETURN_IF_ERROR(comm.barrier(g));
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < options.iters; ++i) {
        const double t0 = tracer.now_us();
        const double cpu0 = Tracer::thread_cpu_us();
        CT_RETURN_IF_ERROR(run_once(comm, g, op, b));
        const double cpu = Tracer::thread_cpu_us() - cpu0;
        traces::Event e;
        e.name = std::string(models::collective_op_name(op)) + " " + std::to_string(bytes) + " B";
        e.category = traces::Category::kComm;
        e.ts_us = t0;
        e.dur_us = tracer.now_us() - t0;
        e.cost_key = "collective/" + std::string(models::collective_op_name(op));
        e.step = i;
        e.bytes = bytes;
        e.collective = models::collective_op_name(op);
        e.group_size = n;
        e.cpu_us = std::max(0.0, cpu);
        tracer.record(std::move(e));
      }
      const double mine =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / options.iters;
      at::Tensor t = at::full({1}, mine, at::TensorOptions().dtype(at::kDouble).device(comm.device()));
      CT_RETURN_IF_ERROR(comm.all_reduce(g, t));
      row.time_us = t.item<double>() / n;
      row.algbw_gbps = static_cast<double>(bytes) / (row.time_us * 1e-6) / 1e9;
      row.busbw_gbps = row.algbw_gbps * bus_factor(op, n);
      auto wrong = check(comm, g, op, b);
      if (!wrong.is_ok()) return wrong.status();
      row.wrong = *wrong;
      rows.push_back(row);
    }
  }
  return rows;
}

}  // namespace clustertwin::real
