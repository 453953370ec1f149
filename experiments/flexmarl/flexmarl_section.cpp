// FlexMARL's section of the demo report (report_sections.h; its entry in common/systems.def).

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "experiments/report/report_html.h"
#include "experiments/report/report_input.h"
#include "experiments/report/report_sections.h"

namespace clustertwin::report {
namespace {

namespace fs = std::filesystem;

// FlexMARL (../shared/papers/flexmarl.md, "Setup and numbers you may use").
constexpr double kFlexMarlSpeedup = 7.3;      // "up to 7.3x" against MAS-RL
constexpr double kFlexMarlUtilization = 5.6;  // "up to 5.6x" hardware utilisation
constexpr double kFlexMarlSyncStepS = 914.4;  // MAS-RL's end-to-end step on MA

}  // namespace

Section flexmarl_section(const fs::path& out) {
  const JsonFile frameworks(out / "flexmarl" / "frameworks.json");
  const Field root = frameworks.root();
  const Field rows = root["rows"];
  const Field fit = root["calibration"];

  Section s;
  s.id = "flexmarl";
  s.title = "FlexMARL: rollout-training co-design for multi-agent LLM RL";
  s.platforms = {root["platform"].string()};
  s.basis = "twin; one parameter (decode efficiency " + number(fit["decode_efficiency"].number(), 3) +
            ") fitted so that the synchronous baseline takes the paper's step on MA";

  // "Up to": the largest over the workloads, each figure on its own.
  const Field* best_speedup = nullptr;
  const Field* best_utilization = nullptr;
  const std::vector<Field> all = rows.elements();
  for (const Field& r : all) {
    if (r["framework"].string() != "flexmarl") continue;
    if (best_speedup == nullptr || r["speedup"].number() > (*best_speedup)["speedup"].number()) best_speedup = &r;
    if (best_utilization == nullptr ||
        r["utilization_gain"].number() > (*best_utilization)["utilization_gain"].number()) {
      best_utilization = &r;
    }
  }
  if (best_speedup == nullptr)
    throw InputError(frameworks.file() + ": no element of rows has framework = \"flexmarl\"");
  const double speedup = (*best_speedup)["speedup"].number();
  const double utilization = (*best_utilization)["utilization_gain"].number();
  const double sync_step = fit["sync_step_s"].number();
  const std::vector<std::string> workloads = distinct(rows, "workload");
  const std::vector<ComparisonRow> comparison = {
      {"Largest FlexMARL speedup over the synchronous baseline, over " + std::to_string(workloads.size()) +
           " workloads",
       "up to " + times(kFlexMarlSpeedup, 1), times(speedup) + " (" + (*best_speedup)["workload"].string() + ")",
       relative_difference(speedup, kFlexMarlSpeedup)},
      {"Largest hardware-utilisation gain over the synchronous baseline", "up to " + times(kFlexMarlUtilization, 1),
       times(utilization) + " (" + (*best_utilization)["workload"].string() + ")",
       relative_difference(utilization, kFlexMarlUtilization)},
      {"Synchronous (MAS-RL-like) step on MA (calibration target)", number(kFlexMarlSyncStepS, 1) + " s",
       number(sync_step, 1) + " s", relative_difference(sync_step, kFlexMarlSyncStepS)},
  };

  // Step time per framework and workload; the ablation order the paper's design implies.
  const std::vector<std::string> columns = {"sync", "marti", "flexmarl", "flexmarl-nobalance", "flexmarl-noasync"};
  std::vector<std::vector<std::string>> steps;
  int ordered = 0;
  for (const std::string& w : workloads) {
    const Field flex = rows.find({{"workload", w}, {"framework", "flexmarl"}});
    std::vector<std::string> line = {w, std::to_string(flex["devices"].integer())};
    for (const std::string& f : columns)
      line.push_back(number(rows.find({{"workload", w}, {"framework", f}})["step_s"].number(), 1));
    line.push_back(times(flex["speedup"].number()));
    line.push_back(times(flex["utilization_gain"].number()));
    steps.push_back(line);
    const double flexmarl = flex["step_s"].number();
    const double nobalance = rows.find({{"workload", w}, {"framework", "flexmarl-nobalance"}})["step_s"].number();
    const double noasync = rows.find({{"workload", w}, {"framework", "flexmarl-noasync"}})["step_s"].number();
    ordered += noasync > nobalance && nobalance > flexmarl;
  }

  s.html = heading(s.id, s.title);
  s.html +=
      "<p>The twin runs the synchronous baseline, a MARTI-like framework, FlexMARL and its two ablations on <code>" +
      escape(s.platforms[0]) +
      "</code>, on the paper's MA workload and its three scale tests. Only the decode "
      "efficiency is fitted (" +
      std::to_string(fit["runs"].integer()) + " runs), to the synchronous step; everything else is the model.</p>\n";
  s.html += comparison_table(comparison);
  s.html += "<h3>Seconds per step (the twin)</h3>\n";
  s.html += table({"workload", "devices", "sync", "MARTI", "FlexMARL", "no balance", "no async", "FlexMARL speedup",
                   "utilisation gain"},
                  steps);
  s.html += paragraph("Ablations in the expected order (no async slower than no balance, slower than FlexMARL) on " +
                      std::to_string(ordered) + " of " + std::to_string(workloads.size()) + " workloads.");
  s.html += plot(out, "flexmarl", "speedup.png", "speedup against sync per framework and workload");
  s.html += plot(out, "flexmarl", "utilization.png", "device utilisation per framework and workload");
  s.html += plot(out, "flexmarl", "step_time.png", "step time per framework and workload");
  // The study draws a timeline only for some workloads: those it wrote the CSV of.
  for (const std::string& w : workloads) {
    std::string slug = w;
    std::replace(slug.begin(), slug.end(), '+', '_');
    for (const char* f : {"sync", "flexmarl"}) {
      const std::string tag = "timeline_" + slug + "_" + f;
      std::error_code ec;
      if (!fs::exists(out / "flexmarl" / (tag + ".csv"), ec)) continue;
      s.html += plot(out, "flexmarl", tag + ".png", std::string("per-device utilisation, last step: ") + w + ", " + f);
    }
  }
  s.html +=
      "<p class=\"note\">Table: <a href=\"../flexmarl/frameworks.csv\">frameworks.csv</a>; Perfetto traces "
      "per framework in <code>flexmarl/traces/</code>.</p>\n";
  return s;
}

}  // namespace clustertwin::report
