// The fits recover the parameters synthetic traces were generated from: a
// robust line through outliers, the network's segments per collective (one
// and two group sizes), the compute keys' latency and rate, and the twin's
// benchmark run on the fitted profile gives the generating times back.

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "calibrators/network_fit.h"
#include "calibrators/replay.h"
#include "common/statistics.h"
#include "sim/core/collective_bench.h"

namespace clustertwin::calibrators {
namespace {

using models::CollectiveOp;

TEST(RobustLineTest, IgnoresAFewWildPoints) {
  std::vector<double> x, y;
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> noise(-0.005, 0.005);
  for (int i = 0; i < 200; ++i) {
    const double xi = 1 + i % 10;
    x.push_back(xi);
    double yi = (2.0 + 0.5 * xi) * (1 + noise(rng));
    if (i % 20 == 0) yi *= 4;  // 5% descheduled samples
    y.push_back(yi);
  }
  const Line line = robust_line(x, y);
  EXPECT_NEAR(line.slope, 0.5, 0.005);
  EXPECT_NEAR(line.intercept, 2.0, 0.02);
}

TEST(RobustLineTest, OneDistinctXGivesTheMean) {
  const Line line = robust_line({3, 3, 3}, {1, 2, 6});
  EXPECT_DOUBLE_EQ(line.slope, 0);
  EXPECT_DOUBLE_EQ(line.intercept, 3);
}

// Samples of `op` among `n` at 4 KiB..64 MiB from two known segments, with +-1% noise.
std::vector<CollectiveSample> synthetic(CollectiveOp op, int n, const std::vector<cluster::CollectiveSegment>& truth,
                                        uint32_t seed) {
  cluster::CollectiveFactor f;
  f.fit = truth;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> noise(-0.01, 0.01);
  std::vector<CollectiveSample> out;
  for (int64_t bytes = 4096; bytes <= (int64_t{64} << 20); bytes *= 2) {
    for (int i = 0; i < 41; ++i)
      out.push_back({op, n, bytes, f.fitted_seconds(op, static_cast<double>(bytes), n) * (1 + noise(rng))});
  }
  return out;
}

const std::vector<cluster::CollectiveSegment> kTruth = {{0, 40e-6, 0.8e9}, {1 << 20, 250e-6, 0.45e9}};

void expect_recovered(const NetworkFit& fit) {
  ASSERT_EQ(fit.segments.size(), kTruth.size());
  for (size_t i = 0; i < kTruth.size(); ++i) {
    EXPECT_EQ(fit.segments[i].from_bytes, kTruth[i].from_bytes);
    EXPECT_NEAR(fit.segments[i].step_latency / kTruth[i].step_latency, 1, 0.01) << i;
    EXPECT_NEAR(fit.segments[i].bus_bandwidth / kTruth[i].bus_bandwidth, 1, 0.01) << i;
  }
  EXPECT_LT(fit.max_abs_residual, 0.01);
}

TEST(NetworkFitTest, RecoversTwoSegmentsOfEveryCollective) {
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllToAll, CollectiveOp::kAllGather,
                          CollectiveOp::kReduceScatter, CollectiveOp::kBroadcast}) {
    const auto fits = fit_network(synthetic(op, 4, kTruth, 11), NetworkFitOptions{});
    ASSERT_EQ(fits.size(), 1u);
    EXPECT_EQ(fits[0].op, op);
    EXPECT_EQ(fits[0].points.size(), 15u);
    EXPECT_EQ(fits[0].points.front().samples, 41);
    expect_recovered(fits[0]);
  }
}

// Two group sizes pooled: latency steps and bus factor carry the size of the group.
TEST(NetworkFitTest, PoolsGroupSizes) {
  auto samples = synthetic(CollectiveOp::kAllReduce, 2, kTruth, 5);
  const auto four = synthetic(CollectiveOp::kAllReduce, 4, kTruth, 6);
  samples.insert(samples.end(), four.begin(), four.end());
  const auto fits = fit_network(samples, NetworkFitOptions{});
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_EQ(fits[0].points.size(), 30u);
  expect_recovered(fits[0]);
}

// One straight line is one segment, fitted exactly.
TEST(NetworkFitTest, OneLineIsOneSegment) {
  const std::vector<cluster::CollectiveSegment> line = {{0, 30e-6, 1.1e9}};
  cluster::CollectiveFactor f;
  f.fit = line;
  std::vector<CollectiveSample> samples;
  for (int64_t bytes = 4096; bytes <= (int64_t{1} << 26); bytes *= 4)
    samples.push_back({CollectiveOp::kAllGather, 8, bytes, f.fitted_seconds(CollectiveOp::kAllGather, bytes, 8)});
  const auto fits = fit_network(samples, NetworkFitOptions{});
  ASSERT_EQ(fits[0].segments.size(), 1u);
  EXPECT_NEAR(fits[0].segments[0].step_latency, 30e-6, 1e-15);
  EXPECT_NEAR(fits[0].segments[0].bus_bandwidth / 1.1e9, 1, 1e-9);
  EXPECT_LT(fits[0].max_abs_residual, 1e-9);
}

// The benchmark trace's iterations: from the last member's start to the last member's end.
TEST(NetworkFitTest, SamplesSpanLastStartToLastEnd) {
  traces::Trace trace;
  for (int step = 0; step < 2; ++step) {
    for (int rank = 0; rank < 4; ++rank) {
      traces::Event e;
      e.name = "allreduce 4096 B";
      e.category = traces::Category::kComm;
      e.rank = rank;
      e.ts_us = 1000.0 * step + 10 * rank;
      e.dur_us = 100 - 10 * rank + (rank == 2 ? 7 : 0);
      e.step = step;
      e.bytes = 4096;
      e.collective = "allreduce";
      e.group_size = 4;
      trace.events.push_back(e);
    }
  }
  auto samples = collective_samples(trace, "bench.json");
  ASSERT_TRUE(samples.is_ok()) << samples.status().message();
  ASSERT_EQ(samples->size(), 2u);
  EXPECT_NEAR((*samples)[0].seconds, (107 - 30) * 1e-6, 1e-12);  // ends at 107, last start at 30
  trace.events[5].group_size.reset();
  auto bad = collective_samples(trace, "bench.json");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(),
            "bench.json: event 5 ('allreduce 4096 B'): field 'args.group_size': missing or below 2");
}

// The twin's own benchmark on the fitted profile gives the generating times back.
TEST(NetworkFitTest, TheTwinPredictsTheFittedBenchmark) {
  const auto fits = fit_network(synthetic(CollectiveOp::kAllToAll, 4, kTruth, 2), NetworkFitOptions{});
  auto profile = cluster::load_cluster_profile("localhost-cpu");
  ASSERT_TRUE(profile.is_ok());
  add_network_fits(fits, &*profile);
  sim::CollectiveBenchOptions o;
  o.op = CollectiveOp::kAllToAll;
  o.workers = 4;
  o.sizes = {4096, 65536, 1 << 20, 16 << 20};
  auto rows = sim::bench_collective(o, *profile);
  ASSERT_TRUE(rows.is_ok()) << rows.status().message();
  cluster::CollectiveFactor truth;
  truth.fit = kTruth;
  for (const auto& row : *rows) {
    EXPECT_NEAR(row.time_s / truth.fitted_seconds(CollectiveOp::kAllToAll, row.bytes, 4), 1, 0.01) << row.bytes;
  }
}

// Compute keys: four sizes at 0.4 ms + 2 ns/FLOP with +-1% noise. (The level is the mean's by design, so
// wild samples would move it: they are real time a step spends.)
TEST(ComputeFitTest, RecoversLatencyAndRate) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> noise(-0.01, 0.01);
  std::vector<TaskSample> samples;
  for (int i = 0; i < 1200; ++i) {
    const double flops = 0.5e6 * (1 << (i % 4));
    samples.push_back({"dense_fwd", (0.4e-3 + 2e-9 * flops) * (1 + noise(rng)), flops, true});
  }
  const auto fits = fit_keys(samples);
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_NEAR(fits[0].latency_s / 0.4e-3, 1, 0.01);
  EXPECT_NEAR(fits[0].seconds_per_unit / 2e-9, 1, 0.01);
  EXPECT_EQ(fits[0].samples, 1200);
}

}  // namespace
}  // namespace clustertwin::calibrators
