// sim/mix/mix_plot.h: the gnuplot script of a mix's figure. The slowdown
// table's rows and columns, its y range from the bars, and the goodput panel
// only for jobs with a checkpoint policy, their intervals sorted and Young's
// interval a point of its own.

#include "sim/mix/mix_plot.h"

#include <gtest/gtest.h>

namespace clustertwin::sim::mix {
namespace {

MixResult placed(const std::string& placement, double rec_slowdown, double dp_slowdown) {
  MixResult r;
  r.profile = "gpu-128";
  r.placement = placement;
  r.jobs.resize(2);
  r.jobs[0].name = "rec_a";
  r.jobs[0].slowdown = rec_slowdown;
  r.jobs[1].name = "dp";
  r.jobs[1].slowdown = dp_slowdown;
  return r;
}

bool plot_has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The bounds of the script's "set yrange [LO:HI]".
std::pair<double, double> yrange(const std::string& script) {
  const size_t at = script.find("set yrange [");
  if (at == std::string::npos) return {-1, -1};
  const size_t colon = script.find(':', at);
  return {std::stod(script.substr(at + 12, colon - at - 12)), std::stod(script.substr(colon + 1))};
}

TEST(MixPlotTest, TheSlowdownTableHasAColumnPerPlacementAndARowPerJob) {
  const std::vector<MixResult> runs = {placed("packed", 1.5, 1), placed("spread", 1.25, 1.1)};
  const std::string s = mix_plot_script(runs, runs[0], "out/mix.png");
  EXPECT_TRUE(plot_has(s, "set terminal pngcairo size 800,500"));  // one panel
  EXPECT_TRUE(plot_has(s, "set output 'out/mix.png'\n"));
  // '_' escaped for gnuplot's enhanced text.
  EXPECT_TRUE(plot_has(s, "$slowdown << EOD\njob packed spread\nrec\\\\_a 1.5 1.25\ndp 1 1.1\nEOD\n")) << s;
  EXPECT_TRUE(plot_has(s, "set title 'Slowdown per placement on gpu-128'"));
  // From min(0.9, lowest - 0.05) to max(1.2, highest x 1.05 + 0.05) = 1.5 x 1.05 + 0.05.
  EXPECT_DOUBLE_EQ(yrange(s).first, 0.9);
  EXPECT_DOUBLE_EQ(yrange(s).second, 1.625);
  EXPECT_TRUE(plot_has(s,
                       "plot $slowdown using 2:xtic(1) title columnheader(2), '' using 3 title columnheader(3), 1 with "
                       "lines dt 2 lc 'black' title 'alone'\n"))
      << s;
  EXPECT_FALSE(plot_has(s, "multiplot"));
}

TEST(MixPlotTest, AJobFasterInTheMixLowersTheRange) {
  const std::vector<MixResult> runs = {placed("packed", 0.8, 1)};
  const auto [low, high] = yrange(mix_plot_script(runs, runs[0], "m.png"));
  EXPECT_DOUBLE_EQ(low, 0.75);  // 0.8 - 0.05
  EXPECT_DOUBLE_EQ(high, 1.2);  // the ceiling's floor: 1 x 1.05 + 0.05 is less
}

TEST(MixPlotTest, JobsWithACheckpointPolicyGetTheGoodputPanel) {
  MixResult timelines = placed("packed", 1.5, 1);
  JobResilience& res = timelines.jobs[0].resilience;
  timelines.jobs[0].has_resilience = true;
  res.rows.resize(3);
  res.rows[0].interval_s = 600;
  res.rows[0].useful_fraction = 0.9;
  res.rows[1].interval_s = 60;
  res.rows[1].useful_fraction = 0.8;
  res.rows[2].interval_s = 240;  // Young's, the last row
  res.rows[2].useful_fraction = 0.95;
  res.young_row = true;
  const std::string s = mix_plot_script({timelines}, timelines, "m.png");
  EXPECT_TRUE(plot_has(s, "set terminal pngcairo size 1400,500"));
  EXPECT_TRUE(plot_has(s, "set multiplot layout 1,2\n"));
  // The intervals sorted, without Young's, which is a point of its own.
  EXPECT_TRUE(plot_has(s, "$g0 << EOD\n60 80\n600 90\nEOD\n$g0y << EOD\n240 95\nEOD\n")) << s;
  EXPECT_TRUE(plot_has(s,
                       "plot $g0 using 1:2 title 'rec\\\\_a' lw 2 lc 1, $g0y using 1:2 with points pt 7 ps 1.5 lc 1 "
                       "title 'rec\\\\_a: Young sqrt(2CM)'\nunset multiplot\n"))
      << s;
  EXPECT_FALSE(plot_has(s, "title 'dp'"));  // no policy, no line
  // Deterministic: the same results, the same script.
  EXPECT_EQ(s, mix_plot_script({timelines}, timelines, "m.png"));
}

}  // namespace
}  // namespace clustertwin::sim::mix
