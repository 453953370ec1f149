#pragma once

#include <string>
#include <vector>

#include "sim/mix/mix_run.h"

namespace clustertwin::sim::mix {

/// A gnuplot script (for draw_png_with_gnuplot) that draws into `output`:
/// left, each job's slowdown under each placement of `by_placement` (one
/// run of the same mix per placement, bars grouped by job); right, when
/// `timelines` has jobs with a checkpoint policy under failures, each
/// such job's goodput against its checkpoint interval (log scale), Young's
/// interval marked. Deterministic: the same results, the same script.
std::string mix_plot_script(const std::vector<MixResult>& by_placement, const MixResult& timelines,
                            const std::string& output);

}  // namespace clustertwin::sim::mix
