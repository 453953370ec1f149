#pragma once

// What-if transformations of a step plan: add data parallelism to a
// one-worker step, and scale its compute to another batch.
//
// Data parallelism as PyTorch's DistributedDataParallel does it: gradients
// are all-reduced in buckets of a fixed size, each launched as soon as the
// backward tasks that produce its gradients are done, on a stream of its own,
// so that it overlaps the rest of the backward; the optimizer waits for the
// last bucket.
//
//   compute:  fwd  b1   b2   b3   b4   b5  | opt        b_i: backward task with grad_bytes
//                   |         |         |     ^
//                   v         v         v     |         each bucket waits for the task
//   dp allreduce:  ar0 ----> ar1 ----> ar2 ---+         that filled it; in order
//
// The buckets are cut from the gradient bytes in plan order: tasks add their
// grad_bytes to the open bucket, and each time it holds bucket_bytes a bucket
// of exactly bucket_bytes is all-reduced (a task that completes more than
// one bucket launches them all); what is left after the last task with
// grad_bytes is one more, smaller bucket. DDP keeps each parameter whole
// (a bucket holds bucket_bytes or a little more, and its first bucket is
// smaller); the plan knows only bytes per task, so the sizes here are the
// cap itself.
//
// Changing the data-parallel degree of a plan that already has its
// collectives (a plan derived from a multi-rank trace) needs no transform:
// run it at another worker count (`sim plan --workers N`); its world-group
// collectives grow with the world. add_data_parallel is for a step that has
// no gradient all-reduce yet.

#include <cstdint>
#include <string>

#include "common/status.h"
#include "models/plan/plan.h"

namespace clustertwin::models {

/// DDP's default bucket_cap_mb: 25 MiB.
inline constexpr int64_t kDdpBucketBytes = int64_t{25} << 20;

struct DataParallelOptions {
  /// Gradient bytes per all-reduce bucket (the last one holds the rest).
  int64_t bucket_bytes = kDdpBucketBytes;
  /// For a plan whose tasks carry no grad_bytes: the gradient bytes in all,
  /// spread evenly over the compute tasks from `grads_first` to `grads_last`
  /// (task names, plan order, both included; "" for the plan's first and
  /// last compute task). The last of them takes the rounding remainder.
  /// 0: use the tasks' grad_bytes. A crude stand-in for the real order in
  /// which gradients complete: prefer a plan whose tasks carry grad_bytes.
  int64_t grad_bytes_total = 0;
  std::string grads_first;
  std::string grads_last;
  /// The stream the all-reduces run on; added to the plan's streams.
  std::string stream = "dp allreduce";
};

/// Returns `plan` with gradient all-reduces added (see the top of this
/// file). The new tasks, after the plan's own, are named "<stream> <k>"
/// (k = 0, 1, ...): kind collective, an all-reduce over the world of the
/// bucket's bytes, on `options.stream`, with a dep on the task that filled
/// the bucket. The task that follows the last task with grad_bytes on its
/// stream (the optimizer) gets a dep on the last all-reduce; when no task
/// follows it, the first task of that stream waits for the last all-reduce
/// of the previous step (prev_step_deps) instead.
///
/// An all-reduce among one rank moves nothing: on one worker the twin runs
/// the plan as before.
///
/// InvalidArgument with one line starting with `name` when bucket_bytes or
/// grad_bytes_total is not positive where it must be, the plan carries no
/// grad_bytes and no total is given (or carries them and a total is given
/// too), a grads_first/grads_last name is not a task (or they are in the
/// wrong order, or hold no compute task), the stream already exists, a task
/// with grad_bytes runs on some ranks only, or a new task's name is taken.
StatusOr<Plan> add_data_parallel(const Plan& plan, const DataParallelOptions& options, const std::string& name);

/// Returns `plan` with every compute task's flops multiplied by `scale` (a
/// batch `scale` times the recorded one: a step's FLOPs grow with its
/// samples). Tasks priced by a cost key with no FLOP rate (kernels of a plan
/// derived from a trace are priced by their measured time) do not change:
/// scaling those would need a time per sample. InvalidArgument naming `name`
/// and the value when `scale` is not a positive finite number.
StatusOr<Plan> scale_compute(const Plan& plan, double scale, const std::string& name);

}  // namespace clustertwin::models
