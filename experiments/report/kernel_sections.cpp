// The report's sections for the two systems that run as real numerical
// kernels on this machine: IGSP and SIS (report_sections.h).

#include <algorithm>
#include <cmath>
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

// SIS (../shared/papers/sis.md, "What the paper reports").
constexpr double kSisGrpoMath = 49.05, kSisGrpoMathWithSis = 52.59;  // Qwen3-8B / GRPO, math average
constexpr double kSisOverheadPercent = 1.0;                          // "about 1% wall-clock overhead"
// The full grids' defaults (experiments/sis/estimator_study.h, stability_study.h), to tell a quick run.
constexpr int64_t kFullSisReplicates = 1000, kFullSisSteps = 300;
// The estimator table shows this sequence length when the run has it (the README's table), else the longest.
constexpr int64_t kSisShownLength = 64;

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

// The elements of an array that must not be empty.
std::vector<Field> nonempty(const Field& array) {
  std::vector<Field> elements = array.elements();
  if (elements.empty()) throw InputError(array.file() + ": field " + array.path() + " is empty");
  return elements;
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

  // The best single source: one domain, no mixture.
  std::string best;
  double best_total = 0;
  size_t sources = 0;
  for (const Field& set : sets.elements()) {
    if (set["kind"].string() != "source") continue;
    ++sources;
    const std::string name = set["set"].string();
    const double total = set["retention"]["total"]["mean"].number();
    if (name.find('+') == std::string::npos && (best.empty() || total > best_total)) best = name, best_total = total;
  }
  const Field comparisons = root["comparisons"];
  const std::vector<ComparisonRow> comparison = {
      difference_row(comparisons, "Uniform mix minus the best single source, total retention (points)", kUniformMix,
                     best.empty() ? "(no single source)" : best,
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
      rho_row(root["tradeoff"], "general", kRhoGeneral, sources),
      rho_row(root["tradeoff"], "math", kRhoMath, sources),
      rho_row(root["tradeoff"], "code", kRhoCode, sources),
  };

  std::vector<std::vector<std::string>> retention;
  for (const Field& set : sets.elements()) {
    std::vector<std::string> line = {set["set"].string(), set["kind"].string()};
    for (const char* d : {"general", "code", "math", "commonsense", "total"})
      line.push_back(number(set["retention"][d]["mean"].number(), 1));
    const Field total = set["retention"]["total"];
    const std::optional<double> low = total["low"].number_or_null(), high = total["high"].number_or_null();
    line.push_back(seeds >= 2 && low && high ? "[" + number(*low, 1) + ", " + number(*high, 1) + "]" : "-");
    line.push_back(number(set["calib_perplexity"].number(), 2));
    retention.push_back(line);
  }
  std::string dense;
  for (const Field& d : root["dense"].elements()) {
    const std::string metric = d["metric"].string();
    const double v = d["value"].number();
    dense += std::string(dense.empty() ? "" : ", ") + d["dimension"].string() + " " + metric + " " +
             (metric == "accuracy" ? percent(v) : number(v, 2));
  }

  const size_t run_sets = sets.elements().size();
  s.html = heading(s.id, s.title);
  s.html += "<p>Real pruning on this machine: " + escape(root["method"].string()) + " at " +
            escape(percent(root["sparsity"].number(), 0)) + " unstructured sparsity of <code>" +
            escape(root["checkpoint"].string()) + "</code> with each calibration set (" +
            std::to_string(root["samples"].integer()) + " samples), then retention = 100 x pruned / dense per " +
            "capability (dense: " + escape(dense) + "). The paper prunes LLaMA-3.1-8B: absolute retentions do not " +
            "compare, so the table compares the gaps its abstract reports.</p>\n";
  if (static_cast<int>(run_sets) < kFullStudySets || seeds < kFullStudySeeds) {
    s.html += "<p class=\"note\"><strong>Quick version:</strong> " + std::to_string(run_sets) + " of the study's " +
              std::to_string(kFullStudySets) + " calibration sets, " + std::to_string(seeds) +
              (seeds == 1 ? " seed" : " seeds") + " each" +
              (seeds < 2 ? " (so no intervals: a difference of a point or two may be seed noise)" : "") +
              ", rho over " + std::to_string(sources) + " sources instead of " + std::to_string(kPaperSources) +
              ". The full study, every set over " + std::to_string(kFullStudySeeds) +
              " seeds with 95% intervals (about 14 min on 2 "
              "cores): <code>make igsp</code> (<code>experiments/igsp/README.md</code>).</p>\n";
  }
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

Section sis_section(const fs::path& out) {
  const JsonFile estimators(out / "sis" / "estimators.json");
  const JsonFile stability(out / "sis" / "stability.json");
  const Field est_options = estimators.root()["options"];
  const Field rows = estimators.root()["rows"];
  const Field stab_options = stability.root()["options"];
  const Field summary = stability.root()["summary"];

  Section s;
  s.id = "sis";
  s.title = "SIS: selective importance sampling for off-policy RL";
  s.basis =
      "real kernel on this machine's CPU: an autoregressive policy on an automaton-scored task whose gradient "
      "is exact";
  s.measured = {
      "Bias and variance of each estimator against the exact gradient, and the stability runs' steps to "
      "the target and collapses, computed on this machine."};
  s.assumed = {
      "The task (a small policy on an automaton-scored task) stands in for the paper's Qwen3 models on math; "
      "the paper's figures are beside ours for their direction, not their size."};

  // Claim 1: between token IS and sequence IS, cell by cell.
  const std::vector<Field> verdicts = estimators.root()["sis_between_token_and_sequence_is"].elements();
  int bias_between = 0, variance_between = 0;
  for (const Field& v : verdicts) {
    bias_between += v["bias"].boolean();
    variance_between += v["variance"].boolean();
  }
  const std::string cells = std::to_string(verdicts.size());

  // Claim 2: robustness to stale rollouts, at the stalest lag of the run.
  int64_t lag = 0;
  for (const Field& l : nonempty(stab_options["lags"]))
    lag = std::max(lag, l.integer());
  const int64_t seeds = stab_options["seeds"].integer();
  const double target = stab_options["success_target"].number();
  auto steps = [&](const char* condition) {
    return summary.find({{"condition", condition}, {"lag", lag}})["median_steps_to_target"].number_or_null();
  };
  const std::optional<double> grpo_steps = steps("grpo"), sis_steps = steps("grpo+sis");
  auto steps_text = [](const std::optional<double>& v) { return v ? number(*v, 0) : std::string("never"); };
  std::string steps_difference = "-";
  if (grpo_steps && sis_steps) {
    const double change = 100 * (*sis_steps / *grpo_steps - 1);
    steps_difference = number(std::abs(change), 0) + "% " + (change <= 0 ? "fewer" : "more") + " steps with SIS";
  }
  // Collapses over every lag, per condition.
  std::string collapses;
  for (const Field& c : stab_options["conditions"].elements()) {
    const std::string condition = c.string();
    double collapsed = 0;
    int runs = 0;
    for (const Field& x : summary.elements()) {
      if (x["condition"].string() != condition) continue;
      collapsed += x["collapse_rate"].number() * static_cast<double>(seeds);
      runs += static_cast<int>(seeds);
    }
    collapses += std::string(collapses.empty() ? "" : "; ") + condition + " " + number(collapsed, 0) + " of " +
                 std::to_string(runs);
  }

  const std::vector<ComparisonRow> comparison = {
      {"SIS (exact envelope) between token-level and sequence-level IS", "proved: SIS narrows the token/sequence gap",
       "bias between in " + std::to_string(bias_between) + " of " + cells + " (length, drift) cells; variance in " +
           std::to_string(variance_between) + " of " + cells,
       "-"},
      {"Robustness to off-policy data: steps to " + percent(target, 0) + " success, rollouts " + std::to_string(lag) +
           " updates stale (median of " + std::to_string(seeds) + " seeds)",
       "substantially stronger robustness (Qwen3-8B GRPO math average " + number(kSisGrpoMath, 2) + " -> " +
           number(kSisGrpoMathWithSis, 2) + " with SIS)",
       "GRPO " + steps_text(grpo_steps) + ", GRPO+SIS " + steps_text(sis_steps), steps_difference},
      {"Runs that collapsed (final success below half the run's best)", "fewer with SIS (not quantified)", collapses,
       "-"},
      {"Wall-clock overhead", "about " + number(kSisOverheadPercent, 0) + "%",
       "not measured by the demo: ct_sis_bench (experiments/sis/README.md, section 3)", "-"},
  };

  // Bias per estimator and drift at one length.
  std::vector<int64_t> lengths;
  for (const Field& l : nonempty(est_options["lengths"]))
    lengths.push_back(l.integer());
  const int64_t length = std::find(lengths.begin(), lengths.end(), kSisShownLength) != lengths.end()
                             ? kSisShownLength
                             : *std::max_element(lengths.begin(), lengths.end());
  std::vector<double> drifts;
  for (const Field& d : nonempty(est_options["drifts"]))
    drifts.push_back(d.number());
  std::vector<std::string> header = {"estimator"};
  for (double d : drifts)
    header.push_back("drift " + number(d, 2));
  std::vector<std::string> names;
  for (const Field& r : rows.elements()) {
    const std::string name = r["estimator"].string();
    if (r["length"].integer() == length && std::find(names.begin(), names.end(), name) == names.end())
      names.push_back(name);
  }
  if (names.empty()) {
    throw InputError(estimators.file() + ": no element of rows has length = " + std::to_string(length) +
                     ", a length options.lengths lists");
  }
  std::vector<std::vector<std::string>> bias;
  std::vector<std::string> kl = {"(per-token KL)"};
  for (const std::string& name : names) {
    std::vector<std::string> line = {name};
    for (double d : drifts) {
      const Field r = rows.find({{"length", length}, {"drift", d}, {"estimator", name}});
      const std::optional<double> b = r["bias"].number_or_null();
      line.push_back(b ? number(*b, 3) : "n/a");
      if (name == names.front()) {
        const std::optional<double> k = r["kl"].number_or_null();
        kl.push_back(k ? number(*k, 4) : "n/a");
      }
    }
    bias.push_back(line);
  }
  bias.insert(bias.begin(), kl);

  std::vector<std::vector<std::string>> stab;
  for (const Field& x : summary.elements()) {
    const std::optional<double> low = x["final_success_ci95"][0].number_or_null();
    const std::optional<double> high = x["final_success_ci95"][1].number_or_null();
    const std::optional<double> acceptance = x["acceptance"].number_or_null();
    stab.push_back({std::to_string(x["lag"].integer()), x["condition"].string(),
                    number(x["final_success"].number(), 3) +
                        (low && high ? " [" + number(*low, 3) + ", " + number(*high, 3) + "]" : ""),
                    steps_text(x["median_steps_to_target"].number_or_null()),
                    number(x["collapse_rate"].number() * static_cast<double>(seeds), 0) + "/" + std::to_string(seeds),
                    acceptance ? number(*acceptance, 3) : "-"});
  }

  s.html = heading(s.id, s.title);
  s.html += "<p>Every off-policy estimator measured against the exact gradient of a small autoregressive policy (" +
            std::to_string(est_options["replicates"].integer()) + " batches of " +
            std::to_string(est_options["batch"].integer()) + " sequences per cell, " +
            std::to_string(est_options["lengths"].elements().size()) + " lengths x " + std::to_string(drifts.size()) +
            " drifts), and GRPO trained with rollouts up to " + std::to_string(lag) +
            " updates stale plus engine noise, with and without SIS (" + std::to_string(seeds) + " seeds x " +
            std::to_string(stab_options["steps"].integer()) +
            " steps). The paper's own figures are LLM benchmark "
            "scores; here each claim is measured where the truth is known.</p>\n";
  if (est_options["replicates"].integer() < kFullSisReplicates || stab_options["steps"].integer() < kFullSisSteps) {
    s.html +=
        "<p class=\"note\"><strong>Quick version</strong> (<code>--quick</code>: fewer drifts, batches, lags "
        "and steps). The full grids, about 5 min on 2 cores: <code>make sis</code> "
        "(<code>experiments/sis/README.md</code>).</p>\n";
  }
  s.html += comparison_table(comparison);
  s.html += "<h3>Bias relative to ||grad J|| at length " + std::to_string(length) + "</h3>\n";
  s.html += table(header, bias);
  s.html += "<h3>GRPO with stale rollouts</h3>\n";
  s.html += table(
      {"lag", "condition", "final success [95% CI]", "steps to " + percent(target, 0), "collapsed", "SIS acceptance"},
      stab);
  s.html += plot(out, "sis", "estimators_bias.png", "bias against sequence length, per drift");
  s.html += plot(out, "sis", "estimators_mse.png", "MSE against sequence length, per drift");
  s.html += plot(out, "sis", "stability_success.png", "mean success rate over training, per lag");
  s.html +=
      "<p class=\"note\">Tables: <a href=\"../sis/estimators.csv\">estimators.csv</a>, "
      "<a href=\"../sis/stability_summary.csv\">stability_summary.csv</a>.</p>\n";
  return s;
}

}  // namespace clustertwin::report
