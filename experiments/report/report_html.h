#pragma once

// The demo report's HTML pieces: escaping, numbers as the page prints them,
// the "figure | paper | clustertwin | difference" table and the plots. Plain
// HTML with a little inline CSS; no script, nothing fetched from elsewhere.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace clustertwin::report {

/// `text` with &, <, >, " and ' as entities.
std::string escape(std::string_view text);

/// `v` with `digits` decimals and thousands grouped: 5793.83 -> "5,793.83".
/// Non-finite values print as "n/a".
std::string number(double v, int digits);
/// A ratio: 3.0413 -> "3.04x".
std::string times(double v, int digits = 2);
/// A fraction as a percentage: 0.9231 -> "92.3%".
std::string percent(double fraction, int digits = 1);
/// A signed number: 2.4 -> "+2.4", -0.01 -> "0.0" (what rounds to zero has no sign).
std::string signed_number(double v, int digits);

/// How far `ours` is from `paper`, relatively: 3.04 against 3.06 -> "-0.7%".
std::string relative_difference(double ours, double paper);
/// The gap between two percentages in points: 92.31 against 94.07 -> "-1.76 points".
std::string point_difference(double ours_percent, double paper_percent, int digits);

/// One line of a section's comparison table; every cell is plain text.
struct ComparisonRow {
  std::string figure, paper, ours, difference;
};

/// The "figure | paper | clustertwin | difference" table.
std::string comparison_table(const std::vector<ComparisonRow>& rows);

/// A table of plain-text cells; the first column is left-aligned, the rest
/// (numbers) right-aligned.
std::string table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

/// `<figure>` showing OUT/`system`/`file`, linked relative to OUT/report
/// ("../nestpipe/scaling.png"), or, when that PNG is absent, a line saying
/// the plot is not available (the studies draw PNGs only with gnuplot).
std::string plot(const std::filesystem::path& out_dir, const std::string& system, const std::string& file,
                 const std::string& caption);

/// A paragraph of plain text.
std::string paragraph(std::string_view text);

/// A section's `<h2>`, with `id` as its anchor.
std::string heading(std::string_view id, std::string_view title);

/// The whole page around `body` (already HTML), with the style sheet.
std::string page(const std::string& title, const std::string& body);

}  // namespace clustertwin::report
