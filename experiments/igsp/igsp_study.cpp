// The IGSP calibration study (experiments/igsp/README.md): one command, from
// the shipped checkpoint, every figure of the paper's abstract at this
// machine's scale.
//
//   1. prune with each of the 15 sources, the random-bytes control, Self-Cal,
//      SGS and IGSP (both aggregation signs), for every seed
//   2. the retention table (per dimension and total, mean and 95% t-interval
//      over seeds) and the information metrics of every calibration set
//   3. Spearman's rho of every metric against every dimension's retention
//      over the 15 sources, exact permutation p-values, Holm-corrected
//   4. the comparisons: uniform mix vs best single source, IGSP vs Self-Cal
//      and SGS, and the paper's opposite-sign trade-off
//   5. CSV, JSON and (with gnuplot) PNG plots, all written atomically
//
// Prints the tables and its own wall time.

#include <malloc.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/file_io.h"
#include "common/gnuplot.h"
#include "common/text.h"
#include "experiments/igsp/igsp_study_internal.h"
#include "models/igsp/analysis.h"
#include "models/igsp/corpus.h"
#include "real/igsp/study.h"

namespace {

using namespace clustertwin;
using namespace clustertwin::experiments::igsp::detail;
using clustertwin::igsp::SeedSummary;
using real::igsp::StudyRun;

// The abstract's figures (../shared/papers/igsp.md), for the printed comparison only.
constexpr double kPaperRhoGeneral = 0.71, kPaperRhoMath = -0.53, kPaperRhoCode = -0.59;

[[noreturn]] void fail(const Status& status) {
  std::fprintf(stderr, "igsp_study: %s\n", status.message().c_str());
  std::exit(status.exit_code());
}

void write(const std::string& path, const std::string& text) {
  Status s = write_file_atomically(path, text);
  if (!s.is_ok()) fail(s);
}

}  // namespace

int main(int argc, char** argv) {
  real::igsp::StudyOptions o;
  o.checkpoint = std::string(CT_SOURCE_DIR) + "/models/igsp/data/byte_lm.pt";
  o.prune.layer.sparsity = 0.6;
  o.seeds = 5;
  o.eval_items = 600;  // the dense model gets ~5% of held-out arithmetic right: 200 items would be ~11
  std::string out = "out/igsp", method = "sparsegpt", sets;
  CLI::App app{
      "The IGSP calibration study: prune the shipped byte-level model at 60% with each of the 15 calibration "
      "sources (the four domains and their mixtures), the random-bytes control, Self-Cal, SGS and IGSP (both "
      "4-gram aggregation signs), over several seeds; write the retention table, the information metrics, "
      "Spearman's rho of each metric against each dimension's retention (exact permutation p-values, Holm), the "
      "comparisons and plots.",
      "ct_igsp_study"};
  app.add_option("--model", o.checkpoint, "Dense checkpoint (clustertwin igsp train)")->capture_default_str();
  app.add_option("-o,--out", out, "Output folder")->capture_default_str();
  app.add_option("--seeds", o.seeds, "Seeds per calibration set (calibration draws and generation)")
      ->capture_default_str();
  app.add_option("--first-seed", o.first_seed, "First seed")->capture_default_str();
  app.add_option("--jobs", o.jobs, "Runs in parallel, one thread each")->capture_default_str();
  app.add_option("--method", method, "sparsegpt, wanda or magnitude")->capture_default_str();
  app.add_option("--sparsity", o.prune.layer.sparsity, "Unstructured sparsity, in [0, 1)")->capture_default_str();
  app.add_option("--samples", o.calibration.samples, "Calibration samples per set (each the model's context long)")
      ->capture_default_str();
  app.add_option("--items", o.eval_items, "Held-out arithmetic and commonsense items each")->capture_default_str();
  app.add_option("--windows", o.eval_windows, "Held-out windows per perplexity")->capture_default_str();
  app.add_option("--sets", sets, "Comma-separated calibration sets instead of all (as clustertwin prune --calib)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "igsp_study: %s\n", e.what());
    return 2;
  }
  auto m = real::igsp::prune_method_from_name(method);
  if (!m.is_ok()) fail(m.status());
  o.prune.method = *m;
  if (!sets.empty()) o.sets = split_commas(sets);
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) fail(Status::invalid_argument("--out " + out + ": " + ec.message()));

  // Each run allocates and frees activations of a few MiB thousands of times. By default glibc gives such
  // memory back to the kernel (unmapping or trimming it) and takes it again, a zeroed page fault per 4 KiB:
  // about 4% of the study's CPU time. Keeping it costs some resident memory, nothing else.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest: blocks up to 32 MiB come from the heap
  mallopt(M_TRIM_THRESHOLD, 1 << 30);

  const auto start = std::chrono::steady_clock::now();
  // The header comes with the first finished run, so that bad input stays one line.
  auto result = real::igsp::run_study(o, [&o](const StudyRun& r, int done, int total) {
    if (done == 1)
      std::fprintf(stderr, "igsp_study: %s, %d runs (%d seed(s) each), %d job(s)\n", o.checkpoint.c_str(), total,
                   o.seeds, o.jobs);
    std::fprintf(stderr, "  [%2d/%d] %-34s seed %llu: total retention %6.2f%%  (%.1f s)\n", done, total, r.set.c_str(),
                 static_cast<unsigned long long>(r.seed), r.retention.back(), r.seconds);
  });
  if (!result.is_ok()) fail(result.status());
  const std::vector<SetSummary> summary = summarise_sets(result->runs);

  // Every run.
  std::string runs_csv =
      "set,kind,seed,general,code,math,commonsense,total,calib_perplexity,unique_4gram,repeated_4gram,byte_coverage,"
      "word_types_per_1000,volume,mean_length,seconds\n";
  for (const StudyRun& r : result->runs) {
    runs_csv += r.set + "," + r.kind + "," + std::to_string(r.seed);
    for (double v : r.retention)
      runs_csv += "," + format_number("%.4f", v);
    runs_csv += "," + format_number("%.4f", r.dense_perplexity) + "," +
                format_number("%.6f", r.information.unique_4gram_fraction) + "," +
                format_number("%.6f", r.information.repeated_4gram_fraction) + "," +
                format_number("%.6f", r.information.byte_coverage) + "," +
                format_number("%.3f", r.information.word_types_per_1000) + "," + std::to_string(r.information.volume) +
                "," + format_number("%.2f", r.information.mean_length) + "," + format_number("%.2f", r.seconds) + "\n";
  }
  write(out + "/runs.csv", runs_csv);

  // The retention table and the metrics.
  std::string retention_csv = "set,kind";
  for (const std::string& d : kDimensions)
    retention_csv += "," + d + "," + d + "_sd," + d + "_low," + d + "_high";
  retention_csv += "\n";
  std::string metrics_csv =
      "set,kind,calib_perplexity,unique_4gram,repeated_4gram,byte_coverage,word_types_per_1000,volume,mean_length\n";
  std::string table = "\nRetention (%) after " + method + " at " + format_number("%.0f", 100 * o.prune.layer.sparsity) +
                      "% sparsity, mean over " + std::to_string(o.seeds) + " seed(s) [95% t-interval of the total]\n";
  table +=
      "set                                general    code    math  commons   total"
      "  [interval]       calib-ppl  uniq4g  words/1k\n";
  for (const SetSummary& s : summary) {
    retention_csv += s.name + "," + s.kind;
    for (const SeedSummary& r : s.retention)
      retention_csv += "," + format_number("%.4f", r.mean) + "," + format_number("%.4f", r.sd) + "," +
                       (r.n >= 2 ? format_number("%.4f", r.low) + "," + format_number("%.4f", r.high) : ",");
    retention_csv += "\n";
    metrics_csv += s.name + "," + s.kind + "," + format_number("%.4f", s.perplexity) + "," +
                   format_number("%.6f", s.unique) + "," + format_number("%.6f", s.repeated) + "," +
                   format_number("%.6f", s.byte_coverage) + "," + format_number("%.3f", s.word_types) + "," +
                   format_number("%.0f", s.volume) + "," + format_number("%.2f", s.mean_length) + "\n";
    // One seed has no interval: the column says so rather than print a point as one.
    char interval[40];
    if (s.retention[4].n >= 2)
      std::snprintf(interval, sizeof interval, "[%6.2f, %6.2f]", s.retention[4].low, s.retention[4].high);
    else
      std::snprintf(interval, sizeof interval, "%-16s", "[ one seed ]");
    char line[256];
    std::snprintf(line, sizeof line, "%-34s %7.2f %7.2f %7.2f %8.2f %7.2f  %s %9.2f  %6.4f %8.1f\n", s.name.c_str(),
                  s.retention[0].mean, s.retention[1].mean, s.retention[2].mean, s.retention[3].mean,
                  s.retention[4].mean, interval, s.perplexity, s.unique, s.word_types);
    table += line;
  }
  write(out + "/retention.csv", retention_csv);
  write(out + "/metrics.csv", metrics_csv);

  // The rho table over the 15 sources.
  std::vector<const SetSummary*> sources;
  for (const SetSummary& s : summary) {
    if (s.kind == "source") sources.push_back(&s);
  }
  const std::vector<std::string> metric_names = {"calib_perplexity", "repeated_4gram", "unique_4gram", "byte_coverage",
                                                 "word_types",       "volume",         "mean_length"};
  std::vector<std::vector<double>> metric_values(metric_names.size()), retention_values(kDimensions.size());
  for (const SetSummary* s : sources) {
    const double values[] = {s->perplexity, s->repeated, s->unique,     s->byte_coverage,
                             s->word_types, s->volume,   s->mean_length};
    for (size_t m = 0; m < metric_names.size(); ++m)
      metric_values[m].push_back(values[m]);
    for (size_t d = 0; d < kDimensions.size(); ++d)
      retention_values[d].push_back(s->retention[d].mean);
  }
  std::vector<clustertwin::igsp::RhoCell> rho;
  if (sources.size() >= 3 && sources.size() <= 16) {
    auto table_or = clustertwin::igsp::rho_table(metric_names, metric_values, kDimensions, retention_values);
    if (!table_or.is_ok()) fail(table_or.status());
    rho = *table_or;
  }
  std::string rho_csv = "metric,dimension,defined,rho,p_exact,p_holm,note\n";
  std::string rho_grid = "x,y,metric,rho,label\n";  // for the heat map
  std::string rho_text = "\nSpearman's rho over the " + std::to_string(sources.size()) +
                         " sources: rho (exact two-sided p; Holm over " + std::to_string([&] {
                           int n = 0;
                           for (const auto& c : rho)
                             n += c.defined && c.why.empty();
                           return n;
                         }()) +
                         " tests)\n";
  if (rho.empty()) {
    // Spearman's rho over fewer than 3 sources is not defined (and the exact test enumerates at most 16).
    rho_text += "(not computed: it needs 3 to 16 calibration sources of kind 'source', and --sets gave " +
                std::to_string(sources.size()) + ")\n";
  } else {
    rho_text +=
        "metric              general               code                  math                  "
        "commonsense           total\n";
  }
  for (size_t m = 0; m < metric_names.size() && !rho.empty(); ++m) {
    char name[32];
    std::snprintf(name, sizeof name, "%-18s", metric_names[m].c_str());
    rho_text += name;
    for (size_t d = 0; d < kDimensions.size(); ++d) {
      const auto& c = rho[m * kDimensions.size() + d];
      rho_csv += c.metric + "," + c.dimension + "," + (c.defined ? "1" : "0") + "," +
                 (c.defined ? format_number("%.4f", c.rho) + "," + format_number("%.6g", c.p) + "," +
                                  format_number("%.6g", c.p_holm)
                            : std::string(",,")) +
                 "," + c.why + "\n";
      rho_grid += std::to_string(d) + "," + std::to_string(m) + "," + c.metric + "," +
                  (c.defined ? format_number("%.4f", c.rho) : std::string("NaN")) + "," +
                  (c.defined ? format_number("%+.2f", c.rho) + (c.p_holm < 0.05 ? "*" : "") : std::string("")) + "\n";
      char cell[40];
      if (c.defined)
        std::snprintf(cell, sizeof cell, "  %+.2f (p %-7.2g/%-7.2g)", c.rho, c.p, c.p_holm);
      else
        std::snprintf(cell, sizeof cell, "  %-24s", "constant");
      rho_text += cell;
    }
    rho_text += "\n";
  }
  if (!rho.empty()) {
    rho_text +=
        "(p exact / p Holm; the two aggregation signs mirror each other and count once in Holm's family; volume "
        "and mean length are the same for every source: equal token budgets)\n";
  }
  write(out + "/rho.csv", rho_csv);
  write(out + "/rho_grid.csv", rho_grid);

  // The comparisons.
  auto find = [&](const std::string& name) -> const SetSummary* {
    for (const SetSummary& s : summary) {
      if (s.name == name) return &s;
    }
    return nullptr;
  };
  const size_t total = kDimensions.size() - 1;
  nlohmann::ordered_json comparisons = nlohmann::ordered_json::array();
  std::string comparison_text = std::string("\nComparisons (total retention, difference of means, ") +
                                (o.seeds >= 2 ? "Welch 95% interval)\n" : "one seed: no interval)\n");
  auto compare = [&](const std::string& label, const SetSummary* a, const SetSummary* b) {
    if (a == nullptr || b == nullptr) return;
    const Difference d = welch(a->retention_by_seed[total], b->retention_by_seed[total]);
    char line[256];
    std::snprintf(line, sizeof line, "  %-44s %6.2f vs %6.2f: %+6.2f points", label.c_str(), a->retention[total].mean,
                  b->retention[total].mean, d.mean);
    comparison_text += line;
    if (d.interval) {
      std::snprintf(line, sizeof line, " [%+.2f, %+.2f]", d.low, d.high);
      comparison_text += line;
    }
    comparison_text += "\n";
    comparisons.push_back({{"comparison", label},
                           {"a", a->name},
                           {"b", b->name},
                           {"a_total", a->retention[total].mean},
                           {"b_total", b->retention[total].mean},
                           {"difference", d.mean},
                           {"low", d.interval ? nlohmann::ordered_json(d.low) : nlohmann::ordered_json()},
                           {"high", d.interval ? nlohmann::ordered_json(d.high) : nlohmann::ordered_json()}});
  };
  const SetSummary* best_single = nullptr;
  for (const SetSummary* s : sources) {
    if (s->name.find('+') == std::string::npos &&
        (best_single == nullptr || s->retention[total].mean > best_single->retention[total].mean))
      best_single = s;
  }
  const SetSummary* mix = find("general+code+math+commonsense");
  compare("uniform mix vs best single source (" + (best_single ? best_single->name : std::string("-")) + ")", mix,
          best_single);
  compare("uniform mix vs general (the C4-like default)", mix, find("general"));
  compare("igsp (min repeated 4-grams) vs selfcal", find("igsp"), find("selfcal"));
  compare("igsp (min repeated 4-grams) vs sgs", find("igsp"), find("sgs"));
  compare("igsp-unique (min unique 4-grams) vs selfcal", find("igsp-unique"), find("selfcal"));
  compare("igsp-unique (min unique 4-grams) vs sgs", find("igsp-unique"), find("sgs"));
  compare("uniform mix vs random bytes (control)", mix, find("random"));
  comparison_text +=
      "  paper (LLaMA-3.1-8B): mix 58.8 vs best single 50.0 (+8.8); IGSP +2.4 over Self-Cal, +4.8 over SGS\n";

  // The paper's trade-off: perplexity's rho with General against Math and Code.
  auto cell = [&](const std::string& metric, const std::string& dim) -> const clustertwin::igsp::RhoCell* {
    for (const auto& c : rho) {
      if (c.metric == metric && c.dimension == dim && c.defined) return &c;
    }
    return nullptr;
  };
  const auto* pg = cell("calib_perplexity", "general");
  const auto* pm = cell("calib_perplexity", "math");
  const auto* pc = cell("calib_perplexity", "code");
  std::string tradeoff = "\nThe paper's trade-off: rho(calibration perplexity, retention)\n";
  nlohmann::ordered_json tradeoff_json;
  if (pg != nullptr && pm != nullptr && pc != nullptr) {
    char line[512];
    std::snprintf(line, sizeof line,
                  "  general %+.2f (p %.2g), math %+.2f (p %.2g), code %+.2f (p %.2g); paper %+.2f, %+.2f, %+.2f\n",
                  pg->rho, pg->p, pm->rho, pm->p, pc->rho, pc->p, kPaperRhoGeneral, kPaperRhoMath, kPaperRhoCode);
    tradeoff += line;
    const bool opposite = (pg->rho > 0 && pm->rho < 0 && pc->rho < 0) || (pg->rho < 0 && pm->rho > 0 && pc->rho > 0);
    const bool paper_signs = pg->rho > 0 && pm->rho < 0 && pc->rho < 0;
    const bool significant = pg->p < 0.05 && pm->p < 0.05 && pc->p < 0.05;
    tradeoff += std::string("  opposite signs (general vs math and code): ") + (opposite ? "yes" : "no") +
                (opposite ? (paper_signs ? ", the paper's direction" : ", the reverse of the paper's direction") : "") +
                "; all three p < 0.05 unadjusted: " + (significant ? "yes" : "no") + "\n";
    tradeoff_json = {{"rho_general", pg->rho},        {"p_general", pg->p},
                     {"rho_math", pm->rho},           {"p_math", pm->p},
                     {"rho_code", pc->rho},           {"p_code", pc->p},
                     {"opposite_signs", opposite},    {"paper_direction", paper_signs},
                     {"all_p_below_005", significant}};
  } else {
    tradeoff += "  not defined (a side is constant over the sources)\n";
  }

  // JSON with everything.
  nlohmann::ordered_json j;
  j["checkpoint"] = o.checkpoint;
  j["method"] = method;
  j["sparsity"] = o.prune.layer.sparsity;
  j["seeds"] = o.seeds;
  j["first_seed"] = o.first_seed;
  j["samples"] = o.calibration.samples;
  j["items"] = o.eval_items;      // held-out arithmetic and commonsense items each
  j["windows"] = o.eval_windows;  // held-out windows per perplexity
  j["dense"] = nlohmann::ordered_json::array();
  for (const auto& s : result->dense)
    j["dense"].push_back(
        {{"dimension", clustertwin::igsp::domain_name(s.domain)}, {"metric", s.metric}, {"value", s.value}});
  j["sets"] = nlohmann::ordered_json::array();
  for (const SetSummary& s : summary) {
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
    j["sets"].push_back(set);
  }
  j["rho"] = nlohmann::ordered_json::array();
  for (const auto& c : rho) {
    nlohmann::ordered_json r = {{"metric", c.metric}, {"dimension", c.dimension}, {"defined", c.defined}};
    if (c.defined) {
      r["rho"] = c.rho;
      r["p_exact"] = c.p;
      r["p_holm"] = c.p_holm;
    }
    if (!c.why.empty()) r["why"] = c.why;
    j["rho"].push_back(r);
  }
  j["comparisons"] = comparisons;
  j["tradeoff"] = tradeoff_json;
  write(out + "/study.json", j.dump(2) + "\n");

  // Plots.
  write(out + "/plots.gp", gnuplot_script(out, metric_names, [&] {
          double top = 105;  // the dense line at 100 stays in view
          for (const SetSummary& s : summary)
            for (const SeedSummary& r : s.retention)
              top = std::max(top, r.mean + 5);
          return top;
        }()));
  const bool plotted = run_gnuplot_file(out + "/plots.gp");

  std::string dense_line = "\nDense model:";
  for (const auto& s : result->dense)
    dense_line += std::string(" ") + clustertwin::igsp::domain_name(s.domain) + " " + s.metric + " " +
                  format_number("%.4f", s.value) + ";";
  std::printf("%s\n%s%s%s%s", dense_line.c_str(), table.c_str(), rho_text.c_str(), comparison_text.c_str(),
              tradeoff.c_str());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("\noutputs: %s/{runs,retention,metrics,rho}.csv, study.json%s\n", out.c_str(),
              plotted ? ", retention.png, rho_heatmap.png" : " (no gnuplot: no PNGs)");
  std::printf("study wall time: %.1f s\n", wall);
  return 0;
}
