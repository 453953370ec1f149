#pragma once

// Plans as JSON files, for plans written by hand and for plans saved by a
// plan builder. The schema (see also models/plan/README.md):
//
//   {"system": "synthetic", "variant": "overlap", "streams": ["compute", "comm"],
//    "tasks": [
//      {"name": "fwd", "kind": "compute", "stream": "compute", "flops": 1.2e12, "bytes": 0,
//       "cost_key": "dense_fwd", "dtype": "bf16", "deps": [], "prev_step_deps": ["update"],
//       "micro_batch": 0, "batch_offset": 0, "ranks": [[0, 8], [16, -1]]},
//      {"name": "grad_ar", "kind": "collective", "stream": "comm", "bytes": 104857600,
//       "collective": {"op": "allreduce", "group": "world", "algorithm": "ring"}, "deps": ["fwd"]},
//      {"name": "emb_a2a", "kind": "collective", "stream": "comm", "bytes": 1048576,
//       "collective": {"op": "alltoall", "group": {"block": 8}, "split_bytes": [...]}},
//      {"name": "p2p_send", "kind": "collective", "stream": "comm", "bytes": 4096,
//       "collective": {"op": "send", "peer_offset": 1, "tag": 3}}
//    ]}
//
// Top level: "streams" and "tasks" are required; "system" and "variant"
// default to "". A task's id is its position in "tasks".
// Task: "name", "kind" and "stream" are required; "stream", "deps" and
// "prev_step_deps" name streams and tasks (tasks may be named before they are
// defined). Optional fields take the defaults of plan.h: flops 0, bytes 0,
// cost_key "", dtype "", deps [], prev_step_deps [], micro_batch -1, batch_offset 0,
// requests 0, ranks []
// (every rank; a range is [begin, end) with end -1 for the world size).
//   kind       compute | collective | copy | lookup | host
//   flops      a non-negative finite number
//   bytes      a non-negative integer (1e8 is accepted: it is an integer)
// Collective ("collective", present exactly when kind is "collective"): "op"
// is required; the rest default as in plan.h.
//   op         allreduce | alltoall | allgather | reducescatter | broadcast | send | recv
//   group      "world" (default) | "node" | {"block": G} | {"stride": G}
//   algorithm  auto (default) | ring | tree | halving_doubling | hierarchical | direct
//   root, peer_offset, tag   integers, default 0
//   split_bytes              non-negative integers, default [] (uniform)
//
// Any field not listed here, and any field given twice, is an error: plans
// are written by hand, and a typo must not fall back to a default silently.

#include <string>
#include <string_view>

#include "common/status.h"
#include "models/plan/plan.h"

namespace clustertwin::models {

/// Parses a plan from JSON text and checks its structure (validate_plan).
/// `name` (the file name) starts every error message. On failure returns
/// InvalidArgument with one line naming the field, the task and the bad
/// value: "plan.json: field 'tasks[2].flops': -5 must be >= 0".
StatusOr<Plan> plan_from_json(std::string_view text, const std::string& name);

/// Reads and parses a plan file (plain or gzip). NotFound or IoError when the
/// file cannot be read, else as plan_from_json with the path as the name.
StatusOr<Plan> read_plan(const std::string& path);

/// The plan as JSON in the schema above: deterministic, two-space indented,
/// one task per line, fields that hold their default left out. For a plan
/// that passed validate_plan, plan_from_json(plan_to_json(p)) == p.
std::string plan_to_json(const Plan& plan);

/// Writes plan_to_json(plan) to `path` atomically; IoError names the path.
Status write_plan(const std::string& path, const Plan& plan);

}  // namespace clustertwin::models
