// SIS's section of the demo report (report_sections.h): the estimator and stability studies, real
// kernels on this machine's CPU.

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

// SIS (../shared/papers/sis.md, "What the paper reports").
constexpr double kSisGrpoMath = 49.05, kSisGrpoMathWithSis = 52.59;  // Qwen3-8B / GRPO, math average
constexpr double kSisOverheadPercent = 1.0;                          // "about 1% wall-clock overhead"
// The full grids' defaults (real/sis/estimator_study.h, stability_study.h), to tell a quick run.
constexpr int64_t kFullSisReplicates = 1000, kFullSisSteps = 300;
// The estimator table shows this sequence length when the run has it (the README's table), else the longest.
constexpr int64_t kSisShownLength = 64;

// The elements of an array that must not be empty.
std::vector<Field> nonempty(const Field& array) {
  std::vector<Field> elements = array.elements();
  if (elements.empty()) throw InputError(array.file() + ": field " + array.path() + " is empty");
  return elements;
}

// "N of M" for SIS's first claim: the (length, drift) cells where SIS's bias, and its variance, fall between
// token-level and sequence-level IS.
std::string between_verdicts(const Field& verdicts_field) {
  const std::vector<Field> verdicts = verdicts_field.elements();
  int bias_between = 0, variance_between = 0;
  for (const Field& v : verdicts) {
    bias_between += v["bias"].boolean();
    variance_between += v["variance"].boolean();
  }
  const std::string cells = std::to_string(verdicts.size());
  return "bias between in " + std::to_string(bias_between) + " of " + cells + " (length, drift) cells; variance in " +
         std::to_string(variance_between) + " of " + cells;
}

std::string steps_text(const std::optional<double>& v) {
  return v ? number(*v, 0) : std::string("never");
}

// SIS's second claim: median steps to the target with and without SIS, rollouts `lag` updates stale.
ComparisonRow stale_rollout_row(const Field& summary, int64_t lag, int64_t seeds, double target) {
  auto steps = [&](const char* condition) {
    return summary.find({{"condition", condition}, {"lag", lag}})["median_steps_to_target"].number_or_null();
  };
  const std::optional<double> grpo_steps = steps("grpo"), sis_steps = steps("grpo+sis");
  std::string steps_difference = "-";
  if (grpo_steps && sis_steps) {
    const double change = 100 * (*sis_steps / *grpo_steps - 1);
    steps_difference = number(std::abs(change), 0) + "% " + (change <= 0 ? "fewer" : "more") + " steps with SIS";
  }
  return {"Robustness to off-policy data: steps to " + percent(target, 0) + " success, rollouts " +
              std::to_string(lag) + " updates stale (median of " + std::to_string(seeds) + " seeds)",
          "substantially stronger robustness (Qwen3-8B GRPO math average " + number(kSisGrpoMath, 2) + " -> " +
              number(kSisGrpoMathWithSis, 2) + " with SIS)",
          "GRPO " + steps_text(grpo_steps) + ", GRPO+SIS " + steps_text(sis_steps), steps_difference};
}

// "grpo 2 of 6; grpo+sis 0 of 6": the runs that collapsed over every lag, per condition.
std::string collapses(const Field& conditions, const Field& summary, int64_t seeds) {
  std::string text;
  for (const Field& c : conditions.elements()) {
    const std::string condition = c.string();
    double collapsed = 0;
    int runs = 0;
    for (const Field& x : summary.elements()) {
      if (x["condition"].string() != condition) continue;
      collapsed += x["collapse_rate"].number() * static_cast<double>(seeds);
      runs += static_cast<int>(seeds);
    }
    text +=
        std::string(text.empty() ? "" : "; ") + condition + " " + number(collapsed, 0) + " of " + std::to_string(runs);
  }
  return text;
}

// The rollouts' stalest lag in the stability runs.
int64_t stalest_lag(const Field& stab_options) {
  int64_t lag = 0;
  for (const Field& l : nonempty(stab_options["lags"]))
    lag = std::max(lag, l.integer());
  return lag;
}

// SIS's claims, ours beside each: `between` for the first, the stability runs at `lag` for the next two.
std::vector<ComparisonRow> sis_comparison(const std::string& between, const Field& stab_options, const Field& summary,
                                          int64_t lag, int64_t seeds, double target) {
  const ComparisonRow stale = stale_rollout_row(summary, lag, seeds, target);
  return {
      {"SIS (exact envelope) between token-level and sequence-level IS", "proved: SIS narrows the token/sequence gap",
       between, "-"},
      stale,
      {"Runs that collapsed (final success below half the run's best)", "fewer with SIS (not quantified)",
       collapses(stab_options["conditions"], summary, seeds), "-"},
      {"Wall-clock overhead", "about " + number(kSisOverheadPercent, 0) + "%",
       "not measured by the demo: ct_sis_bench (experiments/sis/README.md, section 3)", "-"},
  };
}

// The bias table: each estimator's bias per drift at one sequence length, the per-token KL of each drift first.
struct BiasTable {
  int64_t length = 0;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

// The length the table shows: kSisShownLength when the run has it (the README's table), else the longest.
int64_t shown_length(const Field& options) {
  std::vector<int64_t> lengths;
  for (const Field& l : nonempty(options["lengths"]))
    lengths.push_back(l.integer());
  return std::find(lengths.begin(), lengths.end(), kSisShownLength) != lengths.end()
             ? kSisShownLength
             : *std::max_element(lengths.begin(), lengths.end());
}

// The estimators with a row at `length`, in the order of their first row.
std::vector<std::string> estimator_names(const JsonFile& estimators, const Field& rows, int64_t length) {
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
  return names;
}

BiasTable bias_table(const JsonFile& estimators, const Field& rows, int64_t length, const std::vector<double>& drifts) {
  BiasTable t;
  t.length = length;
  t.header = {"estimator"};
  for (double d : drifts)
    t.header.push_back("drift " + number(d, 2));
  const std::vector<std::string> names = estimator_names(estimators, rows, t.length);
  std::vector<std::string> kl = {"(per-token KL)"};
  for (const std::string& name : names) {
    std::vector<std::string> line = {name};
    for (double d : drifts) {
      const Field r = rows.find({{"length", t.length}, {"drift", d}, {"estimator", name}});
      const std::optional<double> b = r["bias"].number_or_null();
      line.push_back(b ? number(*b, 3) : "n/a");
      if (name == names.front()) {
        const std::optional<double> k = r["kl"].number_or_null();
        kl.push_back(k ? number(*k, 4) : "n/a");
      }
    }
    t.rows.push_back(line);
  }
  t.rows.insert(t.rows.begin(), kl);
  return t;
}

// One row per (lag, condition) of the stability runs.
std::vector<std::vector<std::string>> stability_rows(const Field& summary, int64_t seeds) {
  std::vector<std::vector<std::string>> rows;
  for (const Field& x : summary.elements()) {
    const std::optional<double> low = x["final_success_ci95"][0].number_or_null();
    const std::optional<double> high = x["final_success_ci95"][1].number_or_null();
    const std::optional<double> acceptance = x["acceptance"].number_or_null();
    rows.push_back({std::to_string(x["lag"].integer()), x["condition"].string(),
                    number(x["final_success"].number(), 3) +
                        (low && high ? " [" + number(*low, 3) + ", " + number(*high, 3) + "]" : ""),
                    steps_text(x["median_steps_to_target"].number_or_null()),
                    number(x["collapse_rate"].number() * static_cast<double>(seeds), 0) + "/" + std::to_string(seeds),
                    acceptance ? number(*acceptance, 3) : "-"});
  }
  return rows;
}

// The opening paragraph: what was measured, over which grid; and a note when it was the quick grid.
std::string sis_intro(const Field& est_options, const Field& stab_options, size_t drifts, int64_t lag, int64_t seeds) {
  std::string html =
      "<p>Every off-policy estimator measured against the exact gradient of a small autoregressive policy (" +
      std::to_string(est_options["replicates"].integer()) + " batches of " +
      std::to_string(est_options["batch"].integer()) + " sequences per cell, " +
      std::to_string(est_options["lengths"].elements().size()) + " lengths x " + std::to_string(drifts) +
      " drifts), and GRPO trained with rollouts up to " + std::to_string(lag) +
      " updates stale plus engine noise, with and without SIS (" + std::to_string(seeds) + " seeds x " +
      std::to_string(stab_options["steps"].integer()) +
      " steps). The paper's own figures are LLM benchmark "
      "scores; here each claim is measured where the truth is known.</p>\n";
  if (est_options["replicates"].integer() < kFullSisReplicates || stab_options["steps"].integer() < kFullSisSteps) {
    html +=
        "<p class=\"note\"><strong>Quick version</strong> (<code>--quick</code>: fewer drifts, batches, lags "
        "and steps). The full grids, about 5 min on 2 cores: <code>make sis</code> "
        "(<code>experiments/sis/README.md</code>).</p>\n";
  }
  return html;
}

}  // namespace

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

  // The paper's claims; the second at the stalest lag of the run.
  const std::string between = between_verdicts(estimators.root()["sis_between_token_and_sequence_is"]);
  const int64_t lag = stalest_lag(stab_options);
  const int64_t seeds = stab_options["seeds"].integer();
  const double target = stab_options["success_target"].number();
  const std::vector<ComparisonRow> comparison = sis_comparison(between, stab_options, summary, lag, seeds, target);

  const int64_t length = shown_length(est_options);
  std::vector<double> drifts;
  for (const Field& d : nonempty(est_options["drifts"]))
    drifts.push_back(d.number());
  const BiasTable bias = bias_table(estimators, rows, length, drifts);
  const std::vector<std::vector<std::string>> stab = stability_rows(summary, seeds);

  s.html = heading(s.id, s.title);
  s.html += sis_intro(est_options, stab_options, drifts.size(), lag, seeds);
  s.html += comparison_table(comparison);
  s.html += "<h3>Bias relative to ||grad J|| at length " + std::to_string(bias.length) + "</h3>\n";
  s.html += table(bias.header, bias.rows);
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
