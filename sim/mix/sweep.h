#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "sim/mix/mix_run.h"

namespace clustertwin::sim::mix {

/// A sweep: every mix under every placement with every seed. Its points are
/// numbered in a fixed order, mix-major, then placement, then seed:
///
///   index = (m x placements + p) x seeds + s
///
/// so `--seeds 1-8` over two mixes and three placements numbers mix 0's
/// packed seeds 0-7, its spread seeds 8-15, ..., mix 1's random seeds 40-47.
struct SweepSpec {
  std::vector<std::string> mixes;  // mix files as given on the command line (their labels)
  std::vector<std::string> placements;
  std::vector<uint64_t> seeds;
  size_t points() const { return mixes.size() * placements.size() * seeds.size(); }
};

/// One point of a sweep.
struct SweepPoint {
  size_t index = 0;
  size_t mix = 0;  // index into SweepSpec::mixes
  std::string placement;
  uint64_t seed = 0;
};

/// Which points one task runs: those with index % count == index_.
struct Shard {
  int index = 0;  // K, 0 <= K < N
  int count = 1;  // N
};

/// Every point of `spec`, in index order.
std::vector<SweepPoint> sweep_points(const SweepSpec& spec);
/// The points of `spec` that `shard` runs, in index order.
std::vector<SweepPoint> shard_points(const SweepSpec& spec, const Shard& shard);

/// The sweep's id: 16 hex digits of a hash of the clustertwin version, the
/// spec (labels, placements, seeds) and the bytes of every input the points
/// read (each mix file, its profile file when it is a path, its plan files).
/// Every point file carries it, so that a merge can tell two sweeps apart.
StatusOr<std::string> sweep_id(const SweepSpec& spec, const std::vector<MixSpec>& mixes);

/// The file of point `index` in the output folder: "point-000042.json". One
/// name per point, so shards never write the same file.
std::string point_file_name(size_t index);

/// A point's file: one JSON object with the sweep id, the spec, the point
/// and the mix's result (mix_result_json).
std::string point_json(const std::string& id, const SweepSpec& spec, const SweepPoint& point, const MixResult& result);

}  // namespace clustertwin::sim::mix
