#pragma once

// Internal to the Chakra import (chakra_import.cpp): one rank's file to
// tasks, and the ranks' tasks merged into one order for the plan.

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/status.h"
#include "models/plan/import/chakra_plan.h"
#include "models/plan/plan.h"

namespace clustertwin::models::chakra_detail {

/// A node of one rank's file as a task. `task` has its name but no id,
/// deps, stream or ranks yet: those come from the merge. Names identify a
/// task across ranks (node ids need not: Chakra's text converter numbers
/// the nodes of all ranks in one sequence), so dependencies are names too.
/// The same on two ranks (same_but_deps, and dependencies that differ only
/// by tasks one of them does not run): one task, run by both.
struct RankTask {
  uint64_t node_id = 0;
  Task task;
  std::string stream;
  std::vector<std::string> deps;            // task names, after skipped nodes are bypassed; sorted
  std::vector<std::string> prev_step_deps;  // task names (ct_prev_step_deps); sorted
  std::optional<double> duration;           // seconds, when priced by duration_micros
  bool by_flops = false;                    // a file written elsewhere, priced by num_ops on the roofline
  /// Equal in everything a rank's file says about the task itself.
  bool same_but_deps(const RankTask& o) const {
    return task == o.task && stream == o.stream && duration == o.duration && by_flops == o.by_flops;
  }
};

struct FileCounts {
  int64_t nodes = 0;
  int64_t skipped = 0;
  int64_t world_groups = 0;
  int64_t ctrl_deps_ignored = 0;
};

/// METADATA_NODE and INVALID_NODE: no work, skipped.
bool skipped_type(int type);

/// Everything about `node` but its dependencies, as rank `rank` of `world`
/// runs it under the task name `name` (chakra_node.cpp). `counts` gains the
/// collectives whose group is not known. InvalidArgument names the file,
/// node and attribute.
StatusOr<RankTask> convert_node(const traces::chakra::Node& node, const std::string& name, int rank, int world,
                                const std::vector<std::string>& ct_streams, const ChakraImportOptions& options,
                                const std::string& path, FileCounts* counts);

/// The tasks of `input` (rank `rank` of `world`) in file order, which becomes
/// their order on each stream; or, where that would make a task wait on its
/// stream for one that depends on it, in an order that respects their
/// dependencies (ties: file order). `ct_streams`: the stream names of our
/// own export, or empty. InvalidArgument names the file and node.
StatusOr<std::vector<RankTask>> rank_tasks(const ChakraInput& input, int rank, int world,
                                           const std::vector<std::string>& ct_streams,
                                           const ChakraImportOptions& options, FileCounts* counts);

/// A task as the ranks that run it the same (RankTask) see it: their
/// dependencies merged, each rank waiting for those it runs.
struct Variant {
  RankTask task;
  std::vector<int> ranks;
  size_t key = SIZE_MAX;  // the earliest position it holds on any rank: the merged order's tie-break
};

/// Every rank's tasks as variants (chakra_merge.cpp).
struct MergedTasks {
  std::vector<Variant> variants;
  std::unordered_map<std::string, std::vector<int>> variants_of;  // task name -> variant indices
  std::vector<std::unordered_map<std::string, int>> variant_at;   // rank -> task name -> variant
};

/// Merge: a node with the same name and content on several ranks is one
/// task. Their dependencies may differ by tasks that one of the ranks does
/// not run (an export leaves those out of that rank's file): the task waits
/// for all of them, and each rank for those it runs. `per_rank[r]`: rank r's
/// tasks in its order.
MergedTasks merge_rank_tasks(const std::vector<std::vector<RankTask>>& per_rank);

/// One order of the variants for all ranks that keeps each rank's order of
/// the tasks on a stream (stream order is plan order; a dependency needs no
/// place in it); ties by `key`. InvalidArgument naming `path` (the first
/// rank's file) and a task the ranks order differently.
StatusOr<std::vector<int>> merged_order(const MergedTasks& merged, const std::vector<std::vector<RankTask>>& per_rank,
                                        const std::string& path);

}  // namespace clustertwin::models::chakra_detail
