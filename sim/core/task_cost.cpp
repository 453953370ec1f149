#include "sim/core/task_cost.h"

#include <algorithm>

namespace clustertwin::sim {

StatusOr<double> task_seconds(const models::Task& task, const cluster::DeviceType& device,
                              const cluster::ClusterProfile& profile) {
  const std::string where = "task '" + task.name + "'";
  auto cost = task.cost_key.empty() ? profile.costs.end() : profile.costs.find(task.cost_key);
  if (cost != profile.costs.end()) {
    return cost->second.seconds(task.flops, static_cast<double>(task.bytes), static_cast<double>(task.requests));
  }
  const double bytes = static_cast<double>(task.bytes);
  switch (task.kind) {
    case models::TaskKind::kCompute: {
      double seconds = 0;
      if (task.flops > 0) {
        const std::string dtype = task.dtype.empty() ? profile.default_dtype : task.dtype;
        auto peak = device.peak_flops.find(dtype);
        if (peak == device.peak_flops.end() || peak->second <= 0) {
          return Status::invalid_argument(where + ": device '" + device.name + "' of profile '" + profile.name +
                                          "' has no peak for dtype '" + dtype + "'");
        }
        seconds = task.flops / (peak->second * device.compute_efficiency);
      }
      if (bytes > 0 && device.memory_bandwidth > 0) {
        seconds = std::max(seconds, bytes / (device.memory_bandwidth * device.memory_efficiency));
      }
      return seconds;
    }
    case models::TaskKind::kLookup:
      if (bytes == 0) return 0.0;
      if (profile.host_memory_bandwidth <= 0) {
        return Status::invalid_argument(
            where + ": a lookup without a cost key needs host_memory_bandwidth in profile '" + profile.name + "'");
      }
      return bytes / (profile.host_memory_bandwidth / profile.devices_per_node);
    case models::TaskKind::kHost:
      return Status::invalid_argument(where + ": host work has no roofline; cost key '" + task.cost_key +
                                      "' is not in the costs of profile '" + profile.name + "'");
    case models::TaskKind::kCollective:
    case models::TaskKind::kCopy:
      break;
  }
  return Status::internal(where + ": task_seconds called for a transfer");
}

}  // namespace clustertwin::sim
