#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "sim/mix/sweep.h"

namespace clustertwin::sim::mix {

/// One job of one point, as its point file reports it.
struct SweepJobRow {
  std::string job;
  double alone_s = 0;  // step time alone on its nodes
  double mixed_s = 0;  // step time in the mix
  double slowdown = 0;
};

/// One point file, read back.
struct SweepPointResult {
  SweepPoint point;
  std::string file;
  std::vector<SweepJobRow> jobs;
};

/// A point file as read back: its sweep's id and spec, and its point.
struct SweepPointFile {
  std::string id;
  SweepSpec spec;
  SweepPointResult result;
};

/// Reads one point file. InvalidArgument naming `path` when it cannot be
/// read, is not JSON, or lacks a field of the format.
StatusOr<SweepPointFile> read_sweep_point(const std::string& path);

/// The points of one sweep, merged from a folder of point files.
struct MergedSweep {
  std::string id;
  SweepSpec spec;
  std::vector<SweepPointResult> points;  // by index; only those found
  std::vector<SweepPoint> missing;       // by index
};

/// Reads every "point-*.json" of `dir` (other files, and the temporary
/// files of writes in flight, are left alone) and checks that they are one
/// sweep's: InvalidArgument with one line naming the file for a file that
/// cannot be read or parsed, a point of another sweep (another id), a point
/// whose index, mix, placement or seed disagrees with its sweep's order, and
/// a point found twice (naming both files); and naming `dir` when it has no
/// point file, or, unless `allow_missing`, when points are missing (listed).
/// The result does not depend on how the sweep was sharded.
StatusOr<MergedSweep> merge_sweep(const std::string& dir, bool allow_missing);

/// Per point and job (mix, placement, seed, job, step alone and in the mix,
/// slowdown), then per mix, placement and job the mean, min and max
/// slowdown over its seeds.
std::string merged_table(const MergedSweep& sweep);
/// The per point and job rows as CSV, with a header line.
std::string merged_csv(const MergedSweep& sweep);
/// The rows and the summary as one JSON object.
std::string merged_json(const MergedSweep& sweep);

}  // namespace clustertwin::sim::mix
