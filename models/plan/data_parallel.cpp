#include "models/plan/data_parallel.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>
#include <vector>

#include "common/text.h"
#include "models/plan/plan_validator.h"

namespace clustertwin::models {
namespace {

// The id of the task named `task_name`, or of the first (last) compute task
// when the name is empty; `field` names the option in messages.
StatusOr<int> find_task(const Plan& plan, const std::string& task_name, bool last, std::string_view field,
                        const std::string& where) {
  if (task_name.empty()) {
    for (size_t k = 0; k < plan.tasks.size(); ++k) {
      const Task& t = plan.tasks[last ? plan.tasks.size() - 1 - k : k];
      if (t.kind == TaskKind::kCompute) return t.id;
    }
    return Status::invalid_argument(where + "the plan has no compute task to carry the gradients");
  }
  for (const Task& t : plan.tasks) {
    if (t.name == task_name) return t.id;
  }
  return Status::invalid_argument(where + std::string(field) + " '" + task_name + "' is not a task of the plan");
}

// Spreads options.grad_bytes_total evenly over the compute tasks from
// grads_first to grads_last (see DataParallelOptions).
Status spread_gradients(Plan* plan, const DataParallelOptions& options, const std::string& where) {
  auto first = find_task(*plan, options.grads_first, false, "grads_first", where);
  if (!first.is_ok()) return first.status();
  auto last = find_task(*plan, options.grads_last, true, "grads_last", where);
  if (!last.is_ok()) return last.status();
  if (*first > *last) {
    return Status::invalid_argument(where + "grads_first '" + plan->tasks[*first].name + "' (task " +
                                    std::to_string(*first) + ") comes after grads_last '" + plan->tasks[*last].name +
                                    "' (task " + std::to_string(*last) + ")");
  }
  std::vector<int> carriers;
  for (int id = *first; id <= *last; ++id) {
    if (plan->tasks[id].kind == TaskKind::kCompute) carriers.push_back(id);
  }
  if (carriers.empty()) {
    return Status::invalid_argument(where + "no compute task from '" + plan->tasks[*first].name + "' to '" +
                                    plan->tasks[*last].name + "' to carry the gradients");
  }
  const int64_t each = options.grad_bytes_total / static_cast<int64_t>(carriers.size());
  for (int id : carriers)
    plan->tasks[id].grad_bytes = each;
  plan->tasks[carriers.back()].grad_bytes += options.grad_bytes_total - each * static_cast<int64_t>(carriers.size());
  return Status::ok();
}

// The options against the plan: a bucket size, gradient bytes, a stream name the plan does not use yet.
Status check_data_parallel(const Plan& plan, const DataParallelOptions& options, const std::string& name,
                           const std::string& where) {
  if (options.bucket_bytes <= 0) {
    return Status::invalid_argument(where + "bucket_bytes " + std::to_string(options.bucket_bytes) + " must be > 0");
  }
  if (options.grad_bytes_total < 0) {
    return Status::invalid_argument(where + "grad_bytes_total " + std::to_string(options.grad_bytes_total) +
                                    " must be >= 0 (0: the tasks' grad_bytes)");
  }
  if (options.stream.empty()) return Status::invalid_argument(where + "the all-reduce stream needs a name");
  CT_RETURN_IF_ERROR(validate_plan(plan, name));
  if (std::find(plan.streams.begin(), plan.streams.end(), options.stream) != plan.streams.end()) {
    return Status::invalid_argument(where + "the plan already has a stream '" + options.stream +
                                    "' (data parallelism added twice?)");
  }
  return Status::ok();
}

// The gradients: the tasks' own grad_bytes, or grad_bytes_total spread over them; never both.
Status place_gradients(const DataParallelOptions& options, const std::string& where, Plan* out) {
  int64_t marked = 0;
  for (const Task& t : out->tasks)
    marked += t.grad_bytes;
  if (options.grad_bytes_total > 0) {
    if (marked > 0) {
      return Status::invalid_argument(where + "the plan's tasks carry grad_bytes (" + std::to_string(marked) +
                                      " bytes in all); grad_bytes_total " + std::to_string(options.grad_bytes_total) +
                                      " would replace them");
    }
    CT_RETURN_IF_ERROR(spread_gradients(out, options, where));
  } else if (marked == 0) {
    return Status::invalid_argument(where +
                                    "no task carries grad_bytes; give grad_bytes_total, the gradient bytes in all");
  } else if (!options.grads_first.empty() || !options.grads_last.empty()) {
    return Status::invalid_argument(where + "grads_first and grads_last place grad_bytes_total, which is not given");
  }
  return Status::ok();
}

// An all-reduce per bucket of gradient bytes on a stream of its own, each after the task that fills it;
// returns the last task with gradients.
StatusOr<int> add_buckets(const DataParallelOptions& options, const std::string& where, Plan* out) {
  std::set<std::string> names;
  for (const Task& t : out->tasks) {
    names.insert(t.name);
    if (t.grad_bytes > 0 && !t.ranks.empty()) {
      return Status::invalid_argument(where + "task '" + t.name +
                                      "' has grad_bytes but runs on some ranks only; an all-reduce over the world "
                                      "needs the gradients on every rank");
    }
  }
  const int stream = static_cast<int>(out->streams.size());
  out->streams.push_back(options.stream);
  const size_t own_tasks = out->tasks.size();
  auto add_bucket = [&](int64_t bytes, int filled_by) -> Status {
    Task ar;
    ar.id = static_cast<int>(out->tasks.size());
    ar.name = options.stream + " " + std::to_string(out->tasks.size() - own_tasks);
    if (!names.insert(ar.name).second) {
      return Status::invalid_argument(where + "the plan already has a task named '" + ar.name + "'");
    }
    ar.kind = TaskKind::kCollective;
    ar.stream = stream;
    ar.bytes = bytes;
    ar.collective = Collective{};  // an all-reduce over the world, the executor's algorithm
    ar.deps = {filled_by};
    out->tasks.push_back(std::move(ar));
    return Status::ok();
  };
  int64_t open = 0;  // bytes of the bucket being filled
  int last_grad = -1;
  for (size_t id = 0; id < own_tasks; ++id) {
    if (out->tasks[id].grad_bytes == 0) continue;
    open += out->tasks[id].grad_bytes;
    last_grad = static_cast<int>(id);
    for (; open >= options.bucket_bytes; open -= options.bucket_bytes)
      CT_RETURN_IF_ERROR(add_bucket(options.bucket_bytes, last_grad));
  }
  if (open > 0) CT_RETURN_IF_ERROR(add_bucket(open, last_grad));
  return last_grad;
}

// The optimizer: the task after the last gradient's on its stream waits for the last all-reduce.
void wait_for_gradients(int last_grad, size_t own_tasks, Plan* out) {
  const int last_ar = out->tasks.back().id;
  const int grad_stream = out->tasks[last_grad].stream;
  auto same_stream = [&](const Task& t) { return t.stream == grad_stream; };
  auto next = std::find_if(out->tasks.begin() + last_grad + 1, out->tasks.begin() + own_tasks, same_stream);
  if (next != out->tasks.begin() + own_tasks) {
    next->deps.push_back(last_ar);
  } else {
    // Nothing follows it in this step: the next step's first task on the stream waits for the reduced gradients.
    std::find_if(out->tasks.begin(), out->tasks.begin() + own_tasks, same_stream)->prev_step_deps.push_back(last_ar);
  }
}

}  // namespace

StatusOr<Plan> add_data_parallel(const Plan& plan, const DataParallelOptions& options, const std::string& name) {
  const std::string where = name + ": data parallelism: ";
  CT_RETURN_IF_ERROR(check_data_parallel(plan, options, name, where));
  Plan out = plan;
  CT_RETURN_IF_ERROR(place_gradients(options, where, &out));
  const size_t own_tasks = out.tasks.size();
  auto last_grad = add_buckets(options, where, &out);
  if (!last_grad.is_ok()) return last_grad.status();
  wait_for_gradients(*last_grad, own_tasks, &out);
  CT_RETURN_IF_ERROR(validate_plan(out, name));
  return out;
}

StatusOr<Plan> scale_compute(const Plan& plan, double scale, const std::string& name) {
  if (!std::isfinite(scale) || scale <= 0) {
    return Status::invalid_argument(name + ": compute scale " + format_number("%g", scale) +
                                    " must be a positive finite number");
  }
  Plan out = plan;
  for (Task& t : out.tasks) {
    if (t.kind == TaskKind::kCompute) t.flops *= scale;
  }
  return out;
}

}  // namespace clustertwin::models
