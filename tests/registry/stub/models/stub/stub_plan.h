#pragma once

// The stub system's step plan: compute, then an all-reduce of its gradients.

#include <cstdint>

#include "models/plan/plan.h"

namespace clustertwin::models::stub {

/// Per step `compute_flops` of compute (cost key "stub_compute"), then a
/// ring all-reduce of `gradient_bytes` over every worker.
Plan stub_plan(double compute_flops, int64_t gradient_bytes);

}  // namespace clustertwin::models::stub
