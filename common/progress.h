#pragma once

// Progress of a long run, on stderr. On a terminal each update redraws one
// line ("\r"); in a log or a pipe (CI, `make demo`'s saved output, `2>file`)
// each update is a line of its own, so the log reads one step per line
// instead of one line of carriage returns.

namespace clustertwin {

/// Shows the printf-style `format` as the run's progress; `last` ends the
/// progress line: show_progress(done == total, "[%d/%d] ...", done, total).
[[gnu::format(printf, 2, 3)]] void show_progress(bool last, const char* format, ...);

/// Ends a progress line that is still open on a terminal (after updates
/// shown without `last`); does nothing otherwise.
void end_progress();

/// Whether stderr is a terminal (progress redraws one line).
bool progress_redraws();

}  // namespace clustertwin
