#pragma once

// Plots through gnuplot (the package gnuplot-nox, from
// scripts/install-deps.sh): the studies and commands write a script and run
// it; without gnuplot they write their tables and no PNGs.

#include <functional>
#include <string>

#include "common/status.h"

namespace clustertwin {

/// Whether gnuplot is on the PATH.
bool gnuplot_installed();

/// Runs gnuplot on the script at `path`; false when gnuplot is not
/// installed or the script fails (its messages go to stderr).
bool run_gnuplot_file(const std::string& path);

/// Draws `png` atomically: `script(output)` is a gnuplot script that sets its
/// terminal and then `set output` to `output`, a temporary file beside `png`
/// that is renamed onto it once gnuplot succeeds (and removed if it fails).
/// IoError naming `png` when gnuplot cannot run, fails or draws nothing.
Status draw_png_with_gnuplot(const std::string& png, const std::function<std::string(const std::string&)>& script);

}  // namespace clustertwin
