// calibrators/task_fit.h: a cost key's fit from its samples, on samples that
// lie on a known line, and the profile that prices each key by its fit.

#include "calibrators/task_fit.h"

#include <gtest/gtest.h>

namespace clustertwin::calibrators {
namespace {

TaskSample fit_sample(const std::string& key, double seconds, double size, double steps = 0) {
  TaskSample s;
  s.cost_key = key;
  s.seconds = seconds;
  s.size = size;
  s.steps = steps;
  return s;
}

const KeyFit& fit_of(const std::vector<KeyFit>& fits, const std::string& key) {
  for (const KeyFit& f : fits) {
    if (f.cost_key == key) return f;
  }
  ADD_FAILURE() << "no fit for " << key;
  return fits.front();
}

TEST(TaskFitTest, SizesThatDifferGiveTheLineThroughTheSamples) {
  // On the line 1 ms + 1 us per unit: sizes 1000, 2000, 3000 take 2, 3 and 4 ms.
  std::vector<TaskSample> s = {fit_sample("fwd", 2e-3, 1000), fit_sample("fwd", 4e-3, 3000),
                               fit_sample("fwd", 3e-3, 2000)};
  s[0].size_is_flops = true;
  const std::vector<KeyFit> fits = fit_keys(s);
  ASSERT_EQ(fits.size(), 1u);
  const KeyFit& f = fits[0];
  EXPECT_EQ(f.samples, 3);
  EXPECT_DOUBLE_EQ(f.mean_s, 3e-3);
  EXPECT_DOUBLE_EQ(f.median_s, 3e-3);
  EXPECT_DOUBLE_EQ(f.mean_size, 2000);
  EXPECT_TRUE(f.size_is_flops);  // as the key's first sample says
  EXPECT_FALSE(f.collective);
  EXPECT_NEAR(f.seconds_per_unit, 1e-6, 1e-15);
  EXPECT_NEAR(f.latency_s, 1e-3, 1e-12);  // through the mean: 3 ms - 2000 x 1 us
  EXPECT_NEAR(f.max_abs_residual, 0, 1e-9);
}

TEST(TaskFitTest, OneSizeGivesAllTheTimePerUnitAndNoSizeAFixedTime) {
  const std::vector<KeyFit> fits = fit_keys({fit_sample("copy", 1e-3, 4e6), fit_sample("copy", 3e-3, 4e6),
                                             fit_sample("host", 5e-3, 0), fit_sample("host", 7e-3, 0)});
  ASSERT_EQ(fits.size(), 2u);
  const KeyFit& copy = fit_of(fits, "copy");
  EXPECT_DOUBLE_EQ(copy.latency_s, 0);
  EXPECT_DOUBLE_EQ(copy.seconds_per_unit, 2e-3 / 4e6);  // the mean 2 ms over 4e6 bytes
  EXPECT_DOUBLE_EQ(copy.spread_s, 1e-3);                // quartiles 1.5 and 2.5 ms
  const KeyFit& host = fit_of(fits, "host");
  EXPECT_DOUBLE_EQ(host.latency_s, 6e-3);
  EXPECT_DOUBLE_EQ(host.seconds_per_unit, 0);
}

TEST(TaskFitTest, ACollectivesLatencyIsPerLatencyStep) {
  // On steps x 10 us + bus bytes x 1 ns: (2 steps, 1e6) 1.02 ms, (4, 3e6) 3.04 ms, (2, 2e6) 2.02 ms.
  const std::vector<KeyFit> fits = fit_keys(
      {fit_sample("ar", 1.02e-3, 1e6, 2), fit_sample("ar", 3.04e-3, 3e6, 4), fit_sample("ar", 2.02e-3, 2e6, 2)});
  ASSERT_EQ(fits.size(), 1u);
  const KeyFit& f = fits[0];
  EXPECT_TRUE(f.collective);
  EXPECT_NEAR(f.seconds_per_unit, 1e-9, 1e-18);
  // mean_s = mean_steps x latency + mean_size x slope: (6.08 ms - 6e6 x 1 ns) / 3 / (8 / 3) = 10 us.
  EXPECT_NEAR(f.latency_s, 1e-5, 1e-13);
  EXPECT_NEAR(f.max_abs_residual, 0, 1e-9);
}

TEST(TaskFitTest, SamplesOffTheLineShowInTheResidual) {
  // Sizes 1000 and 2000 at 2 and 3 ms, then 3000 at 8 ms: the robust line keeps the first two's
  // slope or the mean's; either way, some size's mean is off its line.
  const std::vector<KeyFit> fits =
      fit_keys({fit_sample("k", 2e-3, 1000), fit_sample("k", 3e-3, 2000), fit_sample("k", 8e-3, 3000)});
  EXPECT_GT(fits[0].max_abs_residual, 0.1);
}

TEST(TaskFitTest, TheProfilePricesEachKeyByItsFitAndKeepsItsStepWait) {
  cluster::ClusterProfile base;
  base.costs["ar"].step_wait = 7e-6;
  base.costs["ar"].latency = 99;  // replaced by the fit
  KeyFit fwd;
  fwd.cost_key = "fwd";
  fwd.size_is_flops = true;
  fwd.latency_s = 1e-3;
  fwd.seconds_per_unit = 1e-12;
  KeyFit copy;
  copy.cost_key = "copy";
  copy.seconds_per_unit = 1e-9;
  KeyFit ar;
  ar.cost_key = "ar";
  ar.collective = true;
  ar.latency_s = 1e-5;
  ar.seconds_per_unit = 2e-9;
  const cluster::ClusterProfile p = profile_with_fits(base, {fwd, copy, ar});
  EXPECT_EQ(p.costs.at("fwd").latency, 1e-3);
  EXPECT_DOUBLE_EQ(p.costs.at("fwd").flop_rate, 1e12);
  EXPECT_EQ(p.costs.at("fwd").byte_rate, 0);
  EXPECT_DOUBLE_EQ(p.costs.at("copy").byte_rate, 1e9);
  EXPECT_EQ(p.costs.at("copy").flop_rate, 0);
  EXPECT_EQ(p.costs.at("ar").latency, 0);
  EXPECT_EQ(p.costs.at("ar").step_latency, 1e-5);
  EXPECT_DOUBLE_EQ(p.costs.at("ar").bus_rate, 5e8);
  EXPECT_EQ(p.costs.at("ar").step_wait, 7e-6);
}

}  // namespace
}  // namespace clustertwin::calibrators
