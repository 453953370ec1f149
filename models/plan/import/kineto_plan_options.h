#pragma once

// How a step plan is derived from an imported Kineto trace (kineto_plan.h
// says what each option decides): the derivation's entry and its parts
// (kineto_steps.h) both read it.

namespace clustertwin::models {

struct DerivePlanOptions {
  /// A stream idle for longer than this before a task waited for another stream.
  double min_wait_us = 1.0;
  /// Keep the host's side of the step as host tasks where the device waited for a launch.
  bool host_tasks = true;
  /// A launch that began within this many us of another stream's task's end waited for that task.
  double sync_window_us = 10.0;
};

}  // namespace clustertwin::models
