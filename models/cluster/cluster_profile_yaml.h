#pragma once

// Writing a cluster profile as YAML in the schema parse_cluster_profile reads
// (sim/platforms/README.md): what `clustertwin calibrate` writes. Numbers are
// written in SI base units with the shortest text that reads back to the same
// double, so that write(parse(write(p))) == write(p).

#include <string>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"

namespace clustertwin::cluster {

/// The YAML text of `profile`, `header` (one or more lines, "" for none)
/// first as comments. InvalidArgument for a profile that stands on a SimGrid
/// platform file (which YAML cannot hold).
StatusOr<std::string> cluster_profile_yaml(const ClusterProfile& profile, const std::string& header);

}  // namespace clustertwin::cluster
