#pragma once

// Writing a cluster profile as YAML in the schema parse_cluster_profile reads
// (sim/platforms/README.md): what `clustertwin calibrate` writes. Numbers are
// written in SI base units with the shortest text that reads back to the same
// double, so that write(parse(write(p))) == write(p).

#include <string>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"

namespace clustertwin::cluster {

/// The shortest decimal that reads back to `value` exactly (the profiles'
/// numbers: a written profile reads back to the same doubles).
std::string yaml_number(double value);
/// `text` as a YAML double-quoted string: any one-line or multi-line text survives.
std::string yaml_quoted(const std::string& text);

/// The YAML text of `profile`, `header` (one or more lines, "" for none)
/// first as comments. InvalidArgument for a profile that stands on a SimGrid
/// platform file (which YAML cannot hold).
StatusOr<std::string> cluster_profile_yaml(const ClusterProfile& profile, const std::string& header);

}  // namespace clustertwin::cluster
