#pragma once

// `clustertwin run nestpipe`: NestPipe's real executor, one rank per
// process. No torch in this header: cli/real_command.cpp includes it.

#include "common/status.h"
#include "real/nestpipe/run_args.h"

namespace clustertwin::real::nestpipe {

/// This rank's part of a NestPipe run; rank 0 prints the table (or JSON).
/// InvalidArgument (exit 2) for bad arguments and data, naming the field of
/// NestPipeArgs ("micro_batches 3: must divide batch 64"; the command line
/// says its flag, cli/nestpipe/run.cpp) or the file, and the value; with
/// strict, Internal (exit 1) on rank 0 naming the first stale row when the
/// version oracle found any.
Status run_nestpipe(const NestPipeArgs& args);

}  // namespace clustertwin::real::nestpipe
