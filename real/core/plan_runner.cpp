#include "real/core/plan_runner.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "common/check.h"
#include "models/plan/task_event.h"

namespace clustertwin::real {

// Completion flags of (step, task) on this rank, and the first failure.
struct PlanRunner::State {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<std::vector<char>> done;  // [step][task]
  std::vector<traces::Event> events;    // recorded at the end when the device keeps the time
  Status failure;
  bool failed = false;
};

PlanRunner::PlanRunner(const models::Plan& plan, Communicator& comm, Tracer& tracer, RunnerOptions options)
    : plan_(plan), comm_(comm), tracer_(tracer), options_(options), state_(std::make_unique<State>()) {}

PlanRunner::~PlanRunner() = default;

const TaskBody* PlanRunner::body_for(const models::Task& task) const {
  auto key = task.cost_key.empty() ? key_bodies_.end() : key_bodies_.find(task.cost_key);
  if (key != key_bodies_.end()) return &key->second;
  auto kind = kind_bodies_.find(task.kind);
  return kind == kind_bodies_.end() ? nullptr : &kind->second;
}

Status PlanRunner::prepare_groups() {
  const int world = comm_.world_size(), rank = comm_.rank();
  task_group_.assign(plan_.tasks.size(), nullptr);
  const int per_node = std::max(1, comm_.env().local_world_size);
  for (const models::Task& t : plan_.tasks) {
    if (!t.collective || !models::runs_on(t, rank, world)) continue;
    const bool p2p = t.collective->op == models::CollectiveOp::kSend || t.collective->op == models::CollectiveOp::kRecv;
    const std::vector<int> members =
        p2p ? comm_.all_ranks() : models::group_members(t.collective->group, rank, world, per_node);
    auto group = comm_.group(members, t.stream);
    if (!group.is_ok()) return group.status();
    task_group_[t.id] = *group;
  }
  return Status::ok();
}

namespace {

// What a rank is about to run, as 8 int64: task id, step, operation, bytes,
// and the first 32 bytes of the task's name (so that a rank can name what
// another rank ran, even from a different plan).
constexpr int kDescriptor = 8;

std::vector<int64_t> describe(const models::Task& task, int step) {
  std::vector<int64_t> d(kDescriptor, 0);
  d[0] = task.id;
  d[1] = step;
  d[2] = static_cast<int64_t>(task.collective->op);
  d[3] = task.bytes;
  std::memcpy(d.data() + 4, task.name.data(), std::min<size_t>(task.name.size(), 32));
  return d;
}

std::string name_in(const int64_t* d) {
  const char* text = reinterpret_cast<const char*>(d + 4);
  return std::string(text, strnlen(text, 32));
}

}  // namespace

Status PlanRunner::check_order(const models::Task& task, int step, Group& group) {
  const std::vector<int64_t> mine = describe(task, step);
  at::Tensor in = at::tensor(mine, at::kLong).to(comm_.device());
  at::Tensor gathered =
      at::zeros({group.size() * kDescriptor}, at::TensorOptions().dtype(at::kLong).device(comm_.device()));
  CT_RETURN_IF_ERROR(comm_.all_gather(group, gathered, in));
  const at::Tensor all = gathered.to(at::kCPU).contiguous();
  const int64_t* data = all.data_ptr<int64_t>();
  for (int i = 0; i < group.size(); ++i) {
    const int64_t* other = data + i * kDescriptor;
    if (std::equal(mine.begin(), mine.end(), other)) continue;
    return Status::internal("collective order differs across ranks on stream '" + plan_.streams[task.stream] +
                            "': rank " + std::to_string(comm_.rank()) + " issued '" + task.name + "' (step " +
                            std::to_string(step) + ", " + std::to_string(task.bytes) + " B) while rank " +
                            std::to_string(group.members[i]) + " issued '" + name_in(other) + "' (step " +
                            std::to_string(other[1]) + ", " + std::to_string(other[3]) + " B)");
  }
  return Status::ok();
}

// The device waits for the dependencies of `task` that ran on other streams
// (those on its own stream are in order already).
void PlanRunner::wait_on_device(int step, const models::Task& task, int stream) {
  const int world = comm_.world_size(), rank = comm_.rank();
  for (int d : task.deps) {
    const models::Task& dep = plan_.tasks[d];
    if (dep.stream != stream && models::runs_on(dep, rank, world)) streams_->wait_for(step, d);
  }
  if (step == 0) return;
  for (int d : task.prev_step_deps) {
    const models::Task& dep = plan_.tasks[d];
    if (dep.stream != stream && models::runs_on(dep, rank, world)) streams_->wait_for(step - 1, d);
  }
}

Status PlanRunner::run_stream(int stream, const std::vector<int>& tasks) {
  State& s = *state_;
  streams_->enter(stream);
  const int world = comm_.world_size(), rank = comm_.rank();
  auto ready = [&](int step, const models::Task& t) {
    for (int d : t.deps) {
      if (models::runs_on(plan_.tasks[d], rank, world) && !s.done[step][d]) return false;
    }
    if (step > 0) {
      for (int d : t.prev_step_deps) {
        if (models::runs_on(plan_.tasks[d], rank, world) && !s.done[step - 1][d]) return false;
      }
    }
    return true;
  };
  for (int step = 0; step < options_.steps; ++step) {
    for (int id : tasks) {
      const models::Task& t = plan_.tasks[id];
      {
        std::unique_lock<std::mutex> lock(s.mutex);
        s.cv.wait(lock, [&] { return s.failed || ready(step, t); });
        if (s.failed) return Status::ok();
      }
      const TaskBody* body = body_for(t);
      if (body == nullptr) {
        return Status::invalid_argument("task '" + t.name + "': no body for kind '" +
                                        std::string(models::task_kind_name(t.kind)) + "' or cost key '" + t.cost_key +
                                        "'");
      }
      if (options_.check_order && task_group_[id] != nullptr && t.collective->op != models::CollectiveOp::kSend &&
          t.collective->op != models::CollectiveOp::kRecv) {
        CT_RETURN_IF_ERROR(check_order(t, step, *task_group_[id]));
      }
      TaskContext ctx{plan_, t, rank, world, step, comm_, task_group_[id]};
      wait_on_device(step, t, stream);
      const double start = tracer_.now_us();
      const double cpu_start = Tracer::thread_cpu_us();
      streams_->start(step, id);
      CT_RETURN_IF_ERROR((*body)(ctx));
      streams_->end(step, id);
      const double cpu_end = Tracer::thread_cpu_us();
      const double end = tracer_.now_us();
      traces::Event e =
          models::task_event(t, rank, stream, step, start, end, task_group_[id] ? task_group_[id]->size() : 0);
      e.cpu_us = std::max(0.0, cpu_end - cpu_start);
      {
        std::lock_guard<std::mutex> lock(s.mutex);
        s.done[step][id] = 1;
        if (streams_->timed()) {
          s.events.push_back(std::move(e));
        } else {
          tracer_.record(std::move(e));
        }
      }
      s.cv.notify_all();
    }
  }
  return Status::ok();
}

Status PlanRunner::run() {
  CT_RETURN_IF_ERROR(prepare_groups());
  State& s = *state_;
  s.done.assign(options_.steps, std::vector<char>(plan_.tasks.size(), 0));
  s.events.clear();
  streams_ = make_stream_set(comm_.device(), static_cast<int>(plan_.streams.size()), options_.steps,
                             static_cast<int>(plan_.tasks.size()));
  streams_->mark_origin([this] { return tracer_.now_us(); });
  std::vector<std::thread> threads;
  std::vector<Status> results(plan_.streams.size());
  // The rank's intra-op width (--threads) for every stream thread too: OpenMP's thread count is per thread, so
  // a new thread would otherwise run libtorch's and OpenBLAS's kernels on every core of the machine, and N
  // ranks on shared cores would run N x cores threads against each other.
  const int intra_op_threads = at::get_num_threads();
  for (int stream = 0; stream < static_cast<int>(plan_.streams.size()); ++stream) {
    std::vector<int> tasks;
    for (const models::Task& t : plan_.tasks) {
      if (t.stream == stream && models::runs_on(t, comm_.rank(), comm_.world_size())) tasks.push_back(t.id);
    }
    if (tasks.empty()) continue;
    threads.emplace_back([this, stream, tasks, &results, &s, intra_op_threads] {
      at::set_num_threads(intra_op_threads);
      Status status = run_stream(stream, tasks);
      if (!status.is_ok()) {
        {
          std::lock_guard<std::mutex> lock(s.mutex);
          if (!s.failed) s.failure = status;
          s.failed = true;
        }
        s.cv.notify_all();
      }
      results[stream] = status;
    });
  }
  for (std::thread& t : threads)
    t.join();
  if (streams_->timed()) {
    // The device's intervals replace the host's, which become the launch interval.
    streams_->finish();
    for (traces::Event& e : s.events) {
      if (!s.failed) {
        const auto [start, end] = streams_->times_us(static_cast<int>(*e.step), static_cast<int>(*e.task_id));
        e.host_ts_us = e.ts_us;
        e.host_dur_us = e.dur_us;
        e.ts_us = start;
        e.dur_us = end - start;
      }
      tracer_.record(std::move(e));
    }
    s.events.clear();
  }
  return s.failed ? s.failure : Status::ok();
}

}  // namespace clustertwin::real
