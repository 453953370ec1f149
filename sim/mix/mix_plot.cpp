#include "sim/mix/mix_plot.h"

#include <algorithm>
#include <map>

#include "common/json_number.h"

namespace clustertwin::sim::mix {
namespace {

// Job names as gnuplot strings: our names are letters, digits, '_' and '-', so only '_' needs escaping.
std::string label(const std::string& name) {
  std::string out;
  for (char c : name)
    out += c == '_' ? std::string("\\\\_") : std::string(1, c);
  return out;
}

// The slowdown histogram: one row per job, one column per placement.
std::string slowdown_plot(const std::vector<MixResult>& by_placement) {
  std::string s = "$slowdown << EOD\njob";
  for (const MixResult& r : by_placement)
    s += " " + r.placement;
  s += "\n";
  const size_t jobs = by_placement.empty() ? 0 : by_placement.front().jobs.size();
  double top = 1, bottom = 1;
  for (size_t j = 0; j < jobs; ++j) {
    s += label(by_placement.front().jobs[j].name);
    for (const MixResult& r : by_placement) {
      s += " " + json_number(r.jobs[j].slowdown);
      top = std::max(top, r.jobs[j].slowdown);
      bottom = std::min(bottom, r.jobs[j].slowdown);
    }
    s += "\n";
  }
  s += "EOD\n";
  s += "set title 'Slowdown per placement on " + by_placement.front().profile + "'\n";
  s += "set ylabel 'slowdown (step time in the mix / alone)'\nset style data histograms\n"
       "set style histogram clustered gap 1\nset style fill solid 0.8 border -1\nset key top left\n"
       "set grid ytics\n";
  // From just below the lowest bar: slowdowns are ratios near 1, and the differences are the point.
  s += "set yrange [" + json_number(std::min(0.9, bottom - 0.05)) + ":" +
       json_number(std::max(1.2, top * 1.05 + 0.05)) + "]\n";
  s += "plot ";
  for (size_t p = 0; p < by_placement.size(); ++p) {
    s += (p > 0 ? ", '' " : "$slowdown ") + std::string("using ") + std::to_string(p + 2) + (p == 0 ? ":xtic(1)" : "") +
         " title columnheader(" + std::to_string(p + 2) + ")";
  }
  s += ", 1 with lines dt 2 lc 'black' title 'alone'\n";
  return s;
}

// Goodput against the checkpoint interval, per job (the intervals sorted; Young's as a point).
std::string goodput_plot(const MixResult& timelines) {
  std::string s = "set style data linespoints\nset logscale x\nset grid xtics ytics\n";
  s += "set title 'Goodput under node failures (placement " + timelines.placement + ")'\n";
  s += "set xlabel 'checkpoint interval (s of work)'\nset ylabel 'useful share of the horizon (%)'\n"
       "set key bottom center\nset yrange [*:*]\n";
  std::string plots;
  int block = 0;
  for (const JobResult& job : timelines.jobs) {
    if (!job.has_resilience) continue;
    const JobResilience& res = job.resilience;
    std::vector<std::pair<double, double>> points;
    for (size_t i = 0; i < res.rows.size(); ++i) {
      if (res.young_row && i + 1 == res.rows.size()) continue;
      points.emplace_back(res.rows[i].interval_s, res.rows[i].useful_fraction * 100);
    }
    std::sort(points.begin(), points.end());
    const std::string name = "$g" + std::to_string(block++);
    s += name + " << EOD\n";
    for (const auto& [x, y] : points)
      s += json_number(x) + " " + json_number(y) + "\n";
    s += "EOD\n";
    const std::string color = " lc " + std::to_string(block);  // the job's line and its Young point alike
    plots += (plots.empty() ? "plot " : ", ") + name + " using 1:2 title '" + label(job.name) + "' lw 2" + color;
    if (res.young_row) {
      const ResilienceResult& y = res.rows.back();
      s += name + "y << EOD\n" + json_number(y.interval_s) + " " + json_number(y.useful_fraction * 100) + "\nEOD\n";
      plots += ", " + name + "y using 1:2 with points pt 7 ps 1.5" + color + " title '" + label(job.name) +
               ": Young sqrt(2CM)'";
    }
  }
  return s + plots + "\nunset multiplot\n";
}

}  // namespace

std::string mix_plot_script(const std::vector<MixResult>& by_placement, const MixResult& timelines,
                            const std::string& output) {
  bool goodput = false;
  for (const JobResult& job : timelines.jobs)
    goodput = goodput || job.has_resilience;
  std::string s = "set terminal pngcairo size " + std::string(goodput ? "1400" : "800") + ",500 font ',10'\n";
  s += "set output '" + output + "'\n";
  if (goodput) s += "set multiplot layout 1,2\n";
  s += slowdown_plot(by_placement);
  if (!goodput) return s;
  return s + goodput_plot(timelines);
}

}  // namespace clustertwin::sim::mix
