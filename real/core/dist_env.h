#pragma once

#include <cstdlib>
#include <functional>
#include <string>

#include "common/status.h"

namespace clustertwin::real {

/// Where this process sits in a distributed job, as its launcher described it.
///
/// Three launchers are understood, tried in this order:
///
/// | source       | when                  | rank / world / local rank / local world                          |
/// |--------------|-----------------------|------------------------------------------------------------------|
/// | `"torchrun"` | RANK is set           | RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE                   |
/// | `"slurm"`    | else SLURM_PROCID set | SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE |
/// | `"single"`   | neither               | 0, 1, 0, 1                                                       |
///
/// torchrun and `clustertwin launch` set all four torchrun variables; someone
/// who sets RANK and WORLD_SIZE by hand gets LOCAL_RANK = RANK and
/// LOCAL_WORLD_SIZE = WORLD_SIZE (one node). The rendezvous address always
/// comes from MASTER_ADDR and MASTER_PORT; without them it is 127.0.0.1:29500,
/// except under Slurm, where the first host of the job would be right and
/// 127.0.0.1 would hang, so MASTER_ADDR is required there.
struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;        // index among the processes of this node
  int local_world_size = 1;  // processes on this node
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string source = "single";  // "torchrun", "slurm" or "single"
};

/// Reads the variables of the table above through `getenv` (a fake in tests).
///
/// On success the fields satisfy 0 <= rank < world_size, 0 <= local_rank <
/// local_world_size <= world_size and 1 <= master_port <= 65535. Otherwise
/// returns InvalidArgument naming the variable and its value:
/// `RANK=5: not below WORLD_SIZE=4`, `MASTER_PORT=abc: not a port number (1..65535)`.
StatusOr<DistEnv> read_dist_env(const std::function<const char*(const char*)>& getenv = ::getenv);

}  // namespace clustertwin::real
