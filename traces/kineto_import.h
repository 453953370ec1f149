#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "traces/kineto_import_options.h"

namespace clustertwin::traces {

/// Converts Kineto traces (one file per rank, plain or .json.gz) into one
/// trace in our format (traces/FORMAT.md) at `output`, written atomically.
///
/// Mapping: GPU kernels -> `compute`, NCCL kernels and any event carrying
/// "Collective name" -> `comm` (with collective, bytes from "In msg nelems" x
/// dtype size, group size; a send's or recv's `peer`, a global rank, from
/// c10d's "Dst Rank" / "Src Rank" or its "Rank" mapped through "Process Group
/// Ranks" or "Global rank start" / "stride"; another collective's group as
/// `group_start` / `group_stride` where those say it; a kernel without these
/// args takes its c10d operator's); memcpy/memset -> `copy`; CPU ops and user
/// annotations -> `host`. pid becomes the rank; each (device or process,
/// stream or thread) of a rank becomes one stream of ours, named after it.
/// Times are rebased so the earliest event of all inputs starts at 0.
/// Errors name the input file, the event index and the field.
Status import_kineto(const std::vector<std::string>& inputs, const std::string& output,
                     const KinetoImportOptions& options, KinetoImportStats* stats);

}  // namespace clustertwin::traces
