// Task bodies that run any plan for real from its sizes alone (see
// set_synthetic_bodies in plan_runner.h).

#include <cmath>
#include <map>
#include <mutex>

#include "real/core/plan_runner.h"

namespace clustertwin::real {
namespace {

// Per-task buffers, made on first use. Each task runs on one stream thread,
// so only the map needs the lock.
class BodyBuffers {
 public:
  explicit BodyBuffers(uint64_t seed) : seed_(seed) {}

  std::vector<at::Tensor>& of(const models::Task& task, at::Device device,
                              const std::function<std::vector<at::Tensor>(at::Generator&, at::Device)>& make) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = buffers_.find(task.id);
    if (it == buffers_.end()) {
      at::Generator gen = at::detail::createCPUGenerator(seed_ + static_cast<uint64_t>(task.id));
      it = buffers_.emplace(task.id, make(gen, device)).first;
    }
    return it->second;
  }

 private:
  uint64_t seed_;
  std::mutex mutex_;
  std::map<int, std::vector<at::Tensor>> buffers_;
};

int64_t floats_for(int64_t bytes, int64_t multiple) {
  const int64_t n = std::max<int64_t>(1, (bytes + 3) / 4);
  return (n + multiple - 1) / multiple * multiple;
}

// Compute: k x k matrix products adding up to the task's FLOPs (2 k^3 each).
Status compute_body(BodyBuffers& buffers, TaskContext& c) {
  if (c.task.flops <= 0) return Status::ok();
  const int64_t k = std::clamp<int64_t>(std::llround(std::cbrt(c.task.flops / 2)), 1, 1024);
  const int64_t repeats = std::max<int64_t>(1, std::llround(c.task.flops / (2.0 * k * k * k)));
  auto& b = buffers.of(c.task, c.comm.device(), [k](at::Generator& gen, at::Device device) {
    auto opts = at::TensorOptions().dtype(at::kFloat);
    return std::vector<at::Tensor>{at::rand({k, k}, gen, opts).to(device), at::rand({k, k}, gen, opts).to(device),
                                   at::empty({k, k}, opts.device(device))};
  });
  for (int64_t r = 0; r < repeats; ++r)
    at::mm_out(b[2], b[0], b[1]);
  return Status::ok();
}

// Copies and host work: move the task's bytes from one buffer to another.
Status copy_body(BodyBuffers& buffers, TaskContext& c) {
  auto& b = buffers.of(c.task, c.comm.device(), [&c](at::Generator& gen, at::Device device) {
    const int64_t n = std::max<int64_t>(1, c.task.bytes);
    return std::vector<at::Tensor>{at::randint(0, 255, {n}, gen, at::kByte), at::empty({n}, at::kByte).to(device)};
  });
  b[1].copy_(b[0]);
  return Status::ok();
}

// Lookups: gather the task's bytes as 256-byte rows from a table four times as large.
Status lookup_body(BodyBuffers& buffers, TaskContext& c) {
  auto& b = buffers.of(c.task, c.comm.device(), [&c](at::Generator& gen, at::Device device) {
    const int64_t rows = std::max<int64_t>(1, c.task.bytes / 256);
    auto opts = at::TensorOptions().dtype(at::kFloat);
    return std::vector<at::Tensor>{at::rand({4 * rows, 64}, gen, opts).to(device),
                                   at::randint(0, 4 * rows, {rows}, gen, at::kLong).to(device)};
  });
  at::Tensor out = at::index_select(b[0], 0, b[1]);
  (void)out;
  return Status::ok();
}

// The all-to-all of b[0] into b[1]: even, or uneven by the task's split_bytes.
Status all_to_all_body(TaskContext& c, const models::Collective& col, Group& g, std::vector<at::Tensor>& b) {
  std::vector<int64_t> splits;
  if (!col.split_bytes.empty()) {
    // Uneven: what this rank sends to each member; receives use the same table.
    for (int64_t s : col.split_bytes)
      splits.push_back(s / 4);
    int64_t sum = 0;
    for (int64_t s : splits)
      sum += s;
    at::Tensor in = b[0].narrow(0, 0, std::min<int64_t>(sum, b[0].numel()));
    at::Tensor out = b[1].narrow(0, 0, in.numel());
    return c.comm.all_to_all(g, out, in, splits, splits);
  }
  return c.comm.all_to_all(g, b[1], b[0]);
}

// Collectives: the real c10d operation on the task's bytes (float32).
Status collective_body(BodyBuffers& buffers, TaskContext& c) {
  const models::Collective& col = *c.task.collective;
  Group& g = *c.group;
  const int n = g.size();
  auto& b = buffers.of(c.task, c.comm.device(), [&](at::Generator& gen, at::Device device) {
    auto opts = at::TensorOptions().dtype(at::kFloat);
    const int64_t total = floats_for(c.task.bytes, n);
    return std::vector<at::Tensor>{at::rand({total}, gen, opts).to(device), at::empty({total}, opts.device(device))};
  });
  switch (col.op) {
    case models::CollectiveOp::kAllReduce:
      return c.comm.all_reduce(g, b[0]);
    case models::CollectiveOp::kAllToAll:
      return all_to_all_body(c, col, g, b);
    case models::CollectiveOp::kAllGather: {
      at::Tensor in = b[0].narrow(0, 0, b[0].numel() / n);
      return c.comm.all_gather(g, b[1], in);
    }
    case models::CollectiveOp::kReduceScatter: {
      at::Tensor out = b[1].narrow(0, 0, b[1].numel() / n);
      return c.comm.reduce_scatter(g, out, b[0]);
    }
    case models::CollectiveOp::kBroadcast:
      return c.comm.broadcast(g, b[0], col.root);
    case models::CollectiveOp::kSend:
    case models::CollectiveOp::kRecv: {
      const int peer = ((c.rank + col.peer_offset) % c.world_size + c.world_size) % c.world_size;
      return col.op == models::CollectiveOp::kSend ? c.comm.send(g, b[0], peer, col.tag)
                                                   : c.comm.recv(g, b[0], peer, col.tag);
    }
  }
  return Status::internal("unknown collective");
}

}  // namespace

void set_synthetic_bodies(PlanRunner& runner, uint64_t seed) {
  auto buffers = std::make_shared<BodyBuffers>(seed);
  runner.set_body(models::TaskKind::kCompute, [buffers](TaskContext& c) { return compute_body(*buffers, c); });
  TaskBody copy = [buffers](TaskContext& c) { return copy_body(*buffers, c); };
  runner.set_body(models::TaskKind::kCopy, copy);
  runner.set_body(models::TaskKind::kHost, copy);
  runner.set_body(models::TaskKind::kLookup, [buffers](TaskContext& c) { return lookup_body(*buffers, c); });
  runner.set_body(models::TaskKind::kCollective, [buffers](TaskContext& c) { return collective_body(*buffers, c); });
}

}  // namespace clustertwin::real
