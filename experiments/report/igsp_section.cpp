// IGSP's section of the demo report (report_sections.h): the calibration study, real pruning on this
// machine's CPU.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "experiments/report/report_html.h"
#include "experiments/report/report_input.h"
#include "experiments/report/report_sections.h"

namespace clustertwin::report {
namespace {

namespace fs = std::filesystem;

// IGSP's abstract (../shared/papers/abstracts.md): LLaMA-3.1-8B, SparseGPT at
// 60% sparsity, total retention in percent, and rho over 15 sources.
constexpr double kMixTotal = 58.8;                                        // the uniform multi-source mix
constexpr double kBestSingleTotal = 50.0;                                 // the best single source, MetaMath
constexpr double kC4Total = 40.0;                                         // the C4 default
constexpr double kIgspOverSelfCal = 2.4;                                  // points
constexpr double kIgspOverSgs = 4.8;                                      // points
constexpr double kRhoGeneral = 0.71, kRhoMath = -0.53, kRhoCode = -0.59;  // calibration perplexity vs retention
constexpr int kPaperSources = 15;
// What `make igsp` runs (experiments/igsp/README.md), to say what the quick run leaves out.
constexpr int kFullStudySets = 20, kFullStudySeeds = 5;

constexpr const char* kUniformMix = "general+code+math+commonsense";

// The comparison a - b the study wrote, with its interval when there are seeds enough to have one.
ComparisonRow difference_row(const Field& comparisons, const std::string& figure, const std::string& a,
                             const std::string& b, const std::string& paper_text, double paper, int64_t seeds) {
  const std::optional<Field> c = comparisons.find_optional({{"a", a}, {"b", b}});
  if (!c) return {figure, paper_text, "not in this run (" + a + " or " + b + " was not pruned)", "-"};
  const double d = (*c)["difference"].number();
  std::string ours = signed_number(d, 1) + " (" + number((*c)["a_total"].number(), 1) + " vs " +
                     number((*c)["b_total"].number(), 1) + ", " + b + ")";
  if (seeds >= 2)
    ours += " [" + signed_number((*c)["low"].number(), 1) + ", " + signed_number((*c)["high"].number(), 1) + "]";
  return {figure, paper_text, ours, point_difference(d, paper, 1)};
}

ComparisonRow rho_row(const Field& tradeoff, const std::string& dimension, double paper, size_t sources) {
  const std::string figure = "Spearman's rho, calibration perplexity vs " + dimension + " retention";
  const std::string paper_text = signed_number(paper, 2) + " (" + std::to_string(kPaperSources) + " sources)";
  if (tradeoff.is_null()) return {figure, paper_text, "not defined in this run", "-"};
  const double rho = tradeoff["rho_" + dimension].number();
  return {figure, paper_text,
          signed_number(rho, 2) + " (p " + number(tradeoff["p_" + dimension].number(), 2) + ", " +
              std::to_string(sources) + " sources)",
          signed_number(rho - paper, 2)};
}

// The sets of kind "source" the study ran, and the best single one (one domain, no mixture) by total retention.
struct Sources {
  size_t count = 0;
  std::string best;  // empty when no single source ran
};
Sources survey_sources(const Field& sets) {
  Sources sources;
  double best_total = 0;
  for (const Field& set : sets.elements()) {
    if (set["kind"].string() != "source") continue;
    ++sources.count;
    const std::string name = set["set"].string();
    const double total = set["retention"]["total"]["mean"].number();
    if (name.find('+') == std::string::npos && (sources.best.empty() || total > best_total))
      sources.best = name, best_total = total;
  }
  return sources;
}

// The gaps the IGSP abstract reports, ours beside each.
std::vector<ComparisonRow> igsp_comparison(const Field& root, const Sources& sources, int64_t seeds) {
  const Field comparisons = root["comparisons"];
  return {
      difference_row(comparisons, "Uniform mix minus the best single source, total retention (points)", kUniformMix,
                     sources.best.empty() ? "(no single source)" : sources.best,
                     signed_number(kMixTotal - kBestSingleTotal, 1) + " (" + number(kMixTotal, 1) + " vs " +
                         number(kBestSingleTotal, 1) + ", MetaMath)",
                     kMixTotal - kBestSingleTotal, seeds),
      difference_row(
          comparisons, "Uniform mix minus the general-text default (the paper's C4)", kUniformMix, "general",
          signed_number(kMixTotal - kC4Total, 1) + " (" + number(kMixTotal, 1) + " vs " + number(kC4Total, 1) + ", C4)",
          kMixTotal - kC4Total, seeds),
      difference_row(comparisons, "IGSP minus Self-Cal, total retention (points)", "igsp", "selfcal",
                     signed_number(kIgspOverSelfCal, 1), kIgspOverSelfCal, seeds),
      difference_row(comparisons, "IGSP minus SGS, total retention (points)", "igsp", "sgs",
                     signed_number(kIgspOverSgs, 1), kIgspOverSgs, seeds),
      rho_row(root["tradeoff"], "general", kRhoGeneral, sources.count),
      rho_row(root["tradeoff"], "math", kRhoMath, sources.count),
      rho_row(root["tradeoff"], "code", kRhoCode, sources.count),
  };
}

// One row per calibration set: mean retention per dimension, the total's interval, the calibration perplexity.
std::vector<std::vector<std::string>> retention_rows(const Field& sets, int64_t seeds) {
  std::vector<std::vector<std::string>> rows;
  for (const Field& set : sets.elements()) {
    std::vector<std::string> line = {set["set"].string(), set["kind"].string()};
    for (const char* d : {"general", "code", "math", "commonsense", "total"})
      line.push_back(number(set["retention"][d]["mean"].number(), 1));
    const Field total = set["retention"]["total"];
    const std::optional<double> low = total["low"].number_or_null(), high = total["high"].number_or_null();
    line.push_back(seeds >= 2 && low && high ? "[" + number(*low, 1) + ", " + number(*high, 1) + "]" : "-");
    line.push_back(number(set["calib_perplexity"].number(), 2));
    rows.push_back(line);
  }
  return rows;
}

// "general perplexity 3.21, math accuracy 5.2%, ...": the dense model's score per dimension.
std::string dense_scores(const Field& dense) {
  std::string text;
  for (const Field& d : dense.elements()) {
    const std::string metric = d["metric"].string();
    const double v = d["value"].number();
    text += std::string(text.empty() ? "" : ", ") + d["dimension"].string() + " " + metric + " " +
            (metric == "accuracy" ? percent(v) : number(v, 2));
  }
  return text;
}

// What a quick run (fewer sets or seeds than `make igsp`) leaves out; empty for the full study.
std::string igsp_quick_note(size_t run_sets, int64_t seeds, size_t sources) {
  if (static_cast<int>(run_sets) >= kFullStudySets && seeds >= kFullStudySeeds) return "";
  return "<p class=\"note\"><strong>Quick version:</strong> " + std::to_string(run_sets) + " of the study's " +
         std::to_string(kFullStudySets) + " calibration sets, " + std::to_string(seeds) +
         (seeds == 1 ? " seed" : " seeds") + " each" +
         (seeds < 2 ? " (so no intervals: a difference of a point or two may be seed noise)" : "") + ", rho over " +
         std::to_string(sources) + " sources instead of " + std::to_string(kPaperSources) +
         ". The full study, every set over " + std::to_string(kFullStudySeeds) +
         " seeds with 95% intervals (about 14 min on 2 "
         "cores): <code>make igsp</code> (<code>experiments/igsp/README.md</code>).</p>\n";
}

}  // namespace

Section igsp_section(const fs::path& out) {
  const JsonFile study(out / "igsp" / "study.json");
  const Field root = study.root();
  const Field sets = root["sets"];
  const int64_t seeds = root["seeds"].integer();

  Section s;
  s.id = "igsp";
  s.title = "IGSP: calibration data for high-sparsity pruning";
  s.basis = "real kernel on this machine's CPU: " + root["method"].string() + " at " +
            percent(root["sparsity"].number(), 0) + " sparsity on the shipped byte-level model";
  s.measured = {
      "Every retention figure: the shipped byte-level model pruned on this machine with each calibration "
      "set (" +
      std::to_string(seeds) + (seeds == 1 ? " seed" : " seeds") +
      " each) and scored on held-out text (General and Code perplexity) and generated "
      "arithmetic (Math exact match); Spearman's rho and its p-values computed from those runs."};
  s.assumed = {
      "The capability dimensions are this small model's own (licence and README text, C/C++ headers, "
      "arithmetic), standing in for the paper's benchmarks on LLaMA-class models; the paper's figures "
      "are beside ours for their direction, not their size."};

  const Sources sources = survey_sources(sets);
  const std::vector<ComparisonRow> comparison = igsp_comparison(root, sources, seeds);
  const std::vector<std::vector<std::string>> retention = retention_rows(sets, seeds);
  const std::string dense = dense_scores(root["dense"]);

  s.html = heading(s.id, s.title);
  s.html += "<p>Real pruning on this machine: " + escape(root["method"].string()) + " at " +
            escape(percent(root["sparsity"].number(), 0)) + " unstructured sparsity of <code>" +
            escape(root["checkpoint"].string()) + "</code> with each calibration set (" +
            std::to_string(root["samples"].integer()) + " samples), then retention = 100 x pruned / dense per " +
            "capability (dense: " + escape(dense) + "). The paper prunes LLaMA-3.1-8B: absolute retentions do not " +
            "compare, so the table compares the gaps its abstract reports.</p>\n";
  s.html += igsp_quick_note(sets.elements().size(), seeds, sources.count);
  s.html += comparison_table(comparison);
  s.html += "<h3>Retention per calibration set (%)</h3>\n";
  s.html += table({"set", "kind", "general", "code", "math", "commonsense", "total", "total 95% CI", "calib. ppl"},
                  retention);
  s.html += plot(out, "igsp", "retention.png", "retention per dimension and calibration set");
  s.html += plot(out, "igsp", "rho_heatmap.png", "Spearman's rho of each set metric against each dimension");
  s.html +=
      "<p class=\"note\">Tables: <a href=\"../igsp/retention.csv\">retention.csv</a>, "
      "<a href=\"../igsp/rho.csv\">rho.csv</a>, <a href=\"../igsp/runs.csv\">runs.csv</a>.</p>\n";
  return s;
}

}  // namespace clustertwin::report
