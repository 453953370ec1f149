// The IGSP study's tables, each built from the runs or their per-set
// summaries: as CSV for the files, as text for the printed report, and as
// the parts of study.json.

#include <cstdio>

#include "common/text.h"
#include "experiments/igsp/igsp_study_internal.h"
#include "models/igsp/corpus.h"

namespace clustertwin::experiments::igsp::detail {
namespace {

using clustertwin::SeedSummary;
using clustertwin::models::igsp::RhoCell;
using real::igsp::StudyRun;

// The abstract's figures (../shared/papers/igsp.md), for the printed comparison only.
constexpr double kPaperRhoGeneral = 0.71, kPaperRhoMath = -0.53, kPaperRhoCode = -0.59;

const size_t kTotal = kDimensions.size() - 1;  // the total's index among the dimensions

const SetSummary* find_set(const std::vector<SetSummary>& summary, const std::string& name) {
  for (const SetSummary& s : summary) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// The printed table's row of one set: mean retention per dimension, the total's interval and two metrics.
std::string retention_line(const SetSummary& s) {
  // One seed has no interval: the column says so rather than print a point as one.
  char interval[40];
  if (s.retention[4].n >= 2)
    std::snprintf(interval, sizeof interval, "[%6.2f, %6.2f]", s.retention[4].low, s.retention[4].high);
  else
    std::snprintf(interval, sizeof interval, "%-16s", "[ one seed ]");
  char line[256];
  std::snprintf(line, sizeof line, "%-34s %7.2f %7.2f %7.2f %8.2f %7.2f  %s %9.2f  %6.4f %8.1f\n", s.name.c_str(),
                s.retention[0].mean, s.retention[1].mean, s.retention[2].mean, s.retention[3].mean, s.retention[4].mean,
                interval, s.perplexity, s.unique, s.word_types);
  return line;
}

// The rho cells over the sources, when there are 3 to 16 of them (the exact test's range).
std::vector<RhoCell> rho_cells(const std::vector<const SetSummary*>& sources) {
  if (sources.size() < 3 || sources.size() > 16) return {};
  std::vector<std::vector<double>> metric_values(kMetrics.size()), retention_values(kDimensions.size());
  for (const SetSummary* s : sources) {
    const double values[] = {s->perplexity, s->repeated, s->unique,     s->byte_coverage,
                             s->word_types, s->volume,   s->mean_length};
    for (size_t m = 0; m < kMetrics.size(); ++m)
      metric_values[m].push_back(values[m]);
    for (size_t d = 0; d < kDimensions.size(); ++d)
      retention_values[d].push_back(s->retention[d].mean);
  }
  auto cells = clustertwin::models::igsp::rho_table(kMetrics, metric_values, kDimensions, retention_values);
  if (!cells.is_ok()) fail(cells.status());
  return *cells;
}

// The printed rho table's heading: how many tests Holm's correction counts, or why there is no table.
std::string rho_heading(const RhoTables& t) {
  int tests = 0;
  for (const RhoCell& c : t.cells)
    tests += c.defined && c.why.empty();
  std::string text = "\nSpearman's rho over the " + std::to_string(t.sources) +
                     " sources: rho (exact two-sided p; Holm over " + std::to_string(tests) + " tests)\n";
  if (t.cells.empty()) {
    // Spearman's rho over fewer than 3 sources is not defined (and the exact test enumerates at most 16).
    return text + "(not computed: it needs 3 to 16 calibration sources of kind 'source', and --sets gave " +
           std::to_string(t.sources) + ")\n";
  }
  return text +
         "metric              general               code                  math                  "
         "commonsense           total\n";
}

// One cell of the rho table in each of its three forms; (d, m) places it in the heat map.
void add_rho_cell(const RhoCell& c, size_t d, size_t m, RhoTables* t) {
  t->csv += c.metric + "," + c.dimension + "," + (c.defined ? "1" : "0") + "," +
            (c.defined ? format_number("%.4f", c.rho) + "," + format_number("%.6g", c.p) + "," +
                             format_number("%.6g", c.p_holm)
                       : std::string(",,")) +
            "," + c.why + "\n";
  t->grid += std::to_string(d) + "," + std::to_string(m) + "," + c.metric + "," +
             (c.defined ? format_number("%.4f", c.rho) : std::string("NaN")) + "," +
             (c.defined ? format_number("%+.2f", c.rho) + (c.p_holm < 0.05 ? "*" : "") : std::string("")) + "\n";
  char cell[40];
  if (c.defined)
    std::snprintf(cell, sizeof cell, "  %+.2f (p %-7.2g/%-7.2g)", c.rho, c.p, c.p_holm);
  else
    std::snprintf(cell, sizeof cell, "  %-24s", "constant");
  t->text += cell;
}

// Total retention of a against b, difference of means with Welch's interval; nothing when a set did not run.
void add_comparison(const std::string& label, const SetSummary* a, const SetSummary* b, Comparisons* out) {
  if (a == nullptr || b == nullptr) return;
  const Difference d = welch(a->retention_by_seed[kTotal], b->retention_by_seed[kTotal]);
  char line[256];
  std::snprintf(line, sizeof line, "  %-44s %6.2f vs %6.2f: %+6.2f points", label.c_str(), a->retention[kTotal].mean,
                b->retention[kTotal].mean, d.mean);
  out->text += line;
  if (d.interval) {
    std::snprintf(line, sizeof line, " [%+.2f, %+.2f]", d.low, d.high);
    out->text += line;
  }
  out->text += "\n";
  out->json.push_back({{"comparison", label},
                       {"a", a->name},
                       {"b", b->name},
                       {"a_total", a->retention[kTotal].mean},
                       {"b_total", b->retention[kTotal].mean},
                       {"difference", d.mean},
                       {"low", d.interval ? nlohmann::ordered_json(d.low) : nlohmann::ordered_json()},
                       {"high", d.interval ? nlohmann::ordered_json(d.high) : nlohmann::ordered_json()}});
}

// The source of one domain, no mixture, with the highest total retention.
const SetSummary* best_single_source(const std::vector<SetSummary>& summary) {
  const SetSummary* best = nullptr;
  for (const SetSummary& s : summary) {
    if (s.kind == "source" && s.name.find('+') == std::string::npos &&
        (best == nullptr || s.retention[kTotal].mean > best->retention[kTotal].mean))
      best = &s;
  }
  return best;
}

const RhoCell* defined_cell(const std::vector<RhoCell>& rho, const std::string& metric, const std::string& dim) {
  for (const RhoCell& c : rho) {
    if (c.metric == metric && c.dimension == dim && c.defined) return &c;
  }
  return nullptr;
}

nlohmann::ordered_json set_json(const SetSummary& s) {
  nlohmann::ordered_json set = {{"set", s.name},
                                {"kind", s.kind},
                                {"calib_perplexity", s.perplexity},
                                {"unique_4gram", s.unique},
                                {"repeated_4gram", s.repeated},
                                {"byte_coverage", s.byte_coverage},
                                {"word_types_per_1000", s.word_types}};
  for (size_t d = 0; d < kDimensions.size(); ++d)
    set["retention"][kDimensions[d]] = {
        {"mean", s.retention[d].mean},
        {"low", s.retention[d].n >= 2 ? nlohmann::ordered_json(s.retention[d].low) : nlohmann::ordered_json()},
        {"high", s.retention[d].n >= 2 ? nlohmann::ordered_json(s.retention[d].high) : nlohmann::ordered_json()},
        {"by_seed", s.retention_by_seed[d]}};
  return set;
}

nlohmann::ordered_json rho_json(const RhoCell& c) {
  nlohmann::ordered_json r = {{"metric", c.metric}, {"dimension", c.dimension}, {"defined", c.defined}};
  if (c.defined) {
    r["rho"] = c.rho;
    r["p_exact"] = c.p;
    r["p_holm"] = c.p_holm;
  }
  if (!c.why.empty()) r["why"] = c.why;
  return r;
}

}  // namespace

std::string runs_csv(const std::vector<StudyRun>& runs) {
  std::string csv =
      "set,kind,seed,general,code,math,commonsense,total,calib_perplexity,unique_4gram,repeated_4gram,byte_coverage,"
      "word_types_per_1000,volume,mean_length,seconds\n";
  for (const StudyRun& r : runs) {
    csv += r.set + "," + r.kind + "," + std::to_string(r.seed);
    for (double v : r.retention)
      csv += "," + format_number("%.4f", v);
    csv += "," + format_number("%.4f", r.dense_perplexity) + "," +
           format_number("%.6f", r.information.unique_4gram_fraction) + "," +
           format_number("%.6f", r.information.repeated_4gram_fraction) + "," +
           format_number("%.6f", r.information.byte_coverage) + "," +
           format_number("%.3f", r.information.word_types_per_1000) + "," + std::to_string(r.information.volume) + "," +
           format_number("%.2f", r.information.mean_length) + "," + format_number("%.2f", r.seconds) + "\n";
  }
  return csv;
}

RetentionTables tabulate_retention(const std::vector<SetSummary>& summary, const std::string& method,
                                   const real::igsp::StudyOptions& options) {
  RetentionTables t;
  t.retention_csv = "set,kind";
  for (const std::string& d : kDimensions)
    t.retention_csv += "," + d + "," + d + "_sd," + d + "_low," + d + "_high";
  t.retention_csv += "\n";
  t.metrics_csv =
      "set,kind,calib_perplexity,unique_4gram,repeated_4gram,byte_coverage,word_types_per_1000,volume,mean_length\n";
  t.text = "\nRetention (%) after " + method + " at " + format_number("%.0f", 100 * options.prune.layer.sparsity) +
           "% sparsity, mean over " + std::to_string(options.seeds) + " seed(s) [95% t-interval of the total]\n";
  t.text +=
      "set                                general    code    math  commons   total"
      "  [interval]       calib-ppl  uniq4g  words/1k\n";
  for (const SetSummary& s : summary) {
    t.retention_csv += s.name + "," + s.kind;
    for (const SeedSummary& r : s.retention)
      t.retention_csv += "," + format_number("%.4f", r.mean) + "," + format_number("%.4f", r.sd) + "," +
                         (r.n >= 2 ? format_number("%.4f", r.low) + "," + format_number("%.4f", r.high) : ",");
    t.retention_csv += "\n";
    t.metrics_csv += s.name + "," + s.kind + "," + format_number("%.4f", s.perplexity) + "," +
                     format_number("%.6f", s.unique) + "," + format_number("%.6f", s.repeated) + "," +
                     format_number("%.6f", s.byte_coverage) + "," + format_number("%.3f", s.word_types) + "," +
                     format_number("%.0f", s.volume) + "," + format_number("%.2f", s.mean_length) + "\n";
    t.text += retention_line(s);
  }
  return t;
}

RhoTables tabulate_rho(const std::vector<SetSummary>& summary) {
  std::vector<const SetSummary*> sources;
  for (const SetSummary& s : summary) {
    if (s.kind == "source") sources.push_back(&s);
  }
  RhoTables t;
  t.sources = sources.size();
  t.cells = rho_cells(sources);
  t.csv = "metric,dimension,defined,rho,p_exact,p_holm,note\n";
  t.grid = "x,y,metric,rho,label\n";  // for the heat map
  t.text = rho_heading(t);
  if (t.cells.empty()) return t;
  for (size_t m = 0; m < kMetrics.size(); ++m) {
    char name[32];
    std::snprintf(name, sizeof name, "%-18s", kMetrics[m].c_str());
    t.text += name;
    for (size_t d = 0; d < kDimensions.size(); ++d)
      add_rho_cell(t.cells[m * kDimensions.size() + d], d, m, &t);
    t.text += "\n";
  }
  t.text +=
      "(p exact / p Holm; the two aggregation signs mirror each other and count once in Holm's family; volume "
      "and mean length are the same for every source: equal token budgets)\n";
  return t;
}

Comparisons compare_sets(const std::vector<SetSummary>& summary, int seeds) {
  Comparisons c;
  c.text = std::string("\nComparisons (total retention, difference of means, ") +
           (seeds >= 2 ? "Welch 95% interval)\n" : "one seed: no interval)\n");
  auto find = [&](const std::string& name) { return find_set(summary, name); };
  const SetSummary* best_single = best_single_source(summary);
  const SetSummary* mix = find("general+code+math+commonsense");
  add_comparison("uniform mix vs best single source (" + (best_single ? best_single->name : std::string("-")) + ")",
                 mix, best_single, &c);
  add_comparison("uniform mix vs general (the C4-like default)", mix, find("general"), &c);
  add_comparison("igsp (min repeated 4-grams) vs selfcal", find("igsp"), find("selfcal"), &c);
  add_comparison("igsp (min repeated 4-grams) vs sgs", find("igsp"), find("sgs"), &c);
  add_comparison("igsp-unique (min unique 4-grams) vs selfcal", find("igsp-unique"), find("selfcal"), &c);
  add_comparison("igsp-unique (min unique 4-grams) vs sgs", find("igsp-unique"), find("sgs"), &c);
  add_comparison("uniform mix vs random bytes (control)", mix, find("random"), &c);
  c.text += "  paper (LLaMA-3.1-8B): mix 58.8 vs best single 50.0 (+8.8); IGSP +2.4 over Self-Cal, +4.8 over SGS\n";
  return c;
}

Tradeoff check_tradeoff(const std::vector<RhoCell>& rho) {
  const RhoCell* pg = defined_cell(rho, "calib_perplexity", "general");
  const RhoCell* pm = defined_cell(rho, "calib_perplexity", "math");
  const RhoCell* pc = defined_cell(rho, "calib_perplexity", "code");
  Tradeoff t;
  t.text = "\nThe paper's trade-off: rho(calibration perplexity, retention)\n";
  if (pg == nullptr || pm == nullptr || pc == nullptr) {
    t.text += "  not defined (a side is constant over the sources)\n";
    return t;
  }
  char line[512];
  std::snprintf(line, sizeof line,
                "  general %+.2f (p %.2g), math %+.2f (p %.2g), code %+.2f (p %.2g); paper %+.2f, %+.2f, %+.2f\n",
                pg->rho, pg->p, pm->rho, pm->p, pc->rho, pc->p, kPaperRhoGeneral, kPaperRhoMath, kPaperRhoCode);
  t.text += line;
  const bool opposite = (pg->rho > 0 && pm->rho < 0 && pc->rho < 0) || (pg->rho < 0 && pm->rho > 0 && pc->rho > 0);
  const bool paper_signs = pg->rho > 0 && pm->rho < 0 && pc->rho < 0;
  const bool significant = pg->p < 0.05 && pm->p < 0.05 && pc->p < 0.05;
  t.text += std::string("  opposite signs (general vs math and code): ") + (opposite ? "yes" : "no") +
            (opposite ? (paper_signs ? ", the paper's direction" : ", the reverse of the paper's direction") : "") +
            "; all three p < 0.05 unadjusted: " + (significant ? "yes" : "no") + "\n";
  t.json = {{"rho_general", pg->rho},        {"p_general", pg->p},
            {"rho_math", pm->rho},           {"p_math", pm->p},
            {"rho_code", pc->rho},           {"p_code", pc->p},
            {"opposite_signs", opposite},    {"paper_direction", paper_signs},
            {"all_p_below_005", significant}};
  return t;
}

nlohmann::ordered_json study_json(const real::igsp::StudyOptions& options, const std::string& method,
                                  const real::igsp::StudyResult& result, const std::vector<SetSummary>& summary,
                                  const RhoTables& rho, const Comparisons& comparisons, const Tradeoff& tradeoff) {
  nlohmann::ordered_json j;
  j["checkpoint"] = options.checkpoint;
  j["method"] = method;
  j["sparsity"] = options.prune.layer.sparsity;
  j["seeds"] = options.seeds;
  j["first_seed"] = options.first_seed;
  j["samples"] = options.calibration.samples;
  j["items"] = options.eval_items;      // held-out arithmetic and commonsense items each
  j["windows"] = options.eval_windows;  // held-out windows per perplexity
  j["dense"] = nlohmann::ordered_json::array();
  for (const auto& s : result.dense)
    j["dense"].push_back(
        {{"dimension", clustertwin::models::igsp::domain_name(s.domain)}, {"metric", s.metric}, {"value", s.value}});
  j["sets"] = nlohmann::ordered_json::array();
  for (const SetSummary& s : summary)
    j["sets"].push_back(set_json(s));
  j["rho"] = nlohmann::ordered_json::array();
  for (const RhoCell& c : rho.cells)
    j["rho"].push_back(rho_json(c));
  j["comparisons"] = comparisons.json;
  j["tradeoff"] = tradeoff.json;
  return j;
}

}  // namespace clustertwin::experiments::igsp::detail
