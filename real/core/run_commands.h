#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace clustertwin::real {

/// The arguments of `clustertwin run collectives|plan` (see cli/real_command.cpp).
struct RealArgs {
  std::string ops = "allreduce,alltoall,allgather,reducescatter,broadcast";
  std::string sizes = "1K:64M";
  int iters = 20;
  int warmup = 5;
  std::string plan_file;
  int steps = 10;
  bool no_check_order = false;
  std::string trace;
  std::string device = "auto";
  std::string backend = "auto";
  double timeout_s = 30;
  int threads = 1;
  uint64_t seed = 0;
  bool json = false;
};

/// `run collectives`: this rank's part of the collective benchmark; rank 0 prints the table (or JSON).
Status run_collectives(const RealArgs& args);
/// `run plan`: this rank's part of a plan run with synthetic bodies; rank 0 prints the step time.
Status run_plan(const RealArgs& args);

}  // namespace clustertwin::real
