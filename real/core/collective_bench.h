#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/plan/plan.h"
#include "real/core/communicator.h"
#include "real/core/tracer.h"

namespace clustertwin::real {

/// The real collective benchmark, as nccl-tests measures: float32 buffers,
/// untimed warm-up iterations, then the mean time of `iters` back-to-back
/// operations per rank, averaged over ranks; after timing, one more
/// operation on known data is checked element by element (#wrong).
struct RealBenchOptions {
  std::vector<models::CollectiveOp> ops;
  std::vector<int64_t> sizes;  // bytes, nccl-tests convention (models/plan/plan.h)
  int iters = 20;
  int warmup = 5;
};

struct RealBenchRow {
  models::CollectiveOp op;
  int64_t bytes = 0;
  int64_t count = 0;      // float32 elements per rank buffer
  double time_us = 0;     // mean per operation, mean over ranks
  double algbw_gbps = 0;  // bytes / time (GB = 1e9 B)
  double busbw_gbps = 0;  // algbw x the bus factor
  int64_t wrong = 0;      // wrong elements over all ranks
};

/// Runs the benchmark on every rank (collective); each timed operation is
/// traced on stream 0. Rows are the same on every rank.
StatusOr<std::vector<RealBenchRow>> run_collective_bench(Communicator& comm, Tracer& tracer,
                                                         const RealBenchOptions& options);

}  // namespace clustertwin::real
