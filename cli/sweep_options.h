#pragma once

// The flags of `clustertwin sim sweep` that name its seeds, placements and
// shard (cli/sim_sweep_command.cpp): command-line text to a sweep's spec
// (sim/mix/sweep.h). The command's own words, so they live with it.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "sim/mix/sweep.h"

namespace clustertwin::cli {

using sim::mix::Shard;

/// "1-8", "0,3,5-7": seeds, ascending and without repeats as written.
/// InvalidArgument "--seeds VALUE: ..." otherwise.
StatusOr<std::vector<uint64_t>> parse_seed_list(const std::string& text);
/// "packed,spread,random": placement policies, each at most once.
StatusOr<std::vector<std::string>> parse_placement_list(const std::string& text);
/// "K/N" with 0 <= K < N. InvalidArgument "--shard VALUE: ..." otherwise.
StatusOr<Shard> parse_shard(const std::string& text);
/// The shard of a Slurm array task: SLURM_ARRAY_TASK_ID (K) and
/// SLURM_ARRAY_TASK_COUNT (N), read through `getenv` (returns nullptr when
/// unset). InvalidArgument names the variable and its value when one is
/// missing, not a number, or K is not in [0, N).
StatusOr<Shard> shard_from_env(const std::function<const char*(const char*)>& getenv);

}  // namespace clustertwin::cli
