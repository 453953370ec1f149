// The device fit (calibrators/device_fit.h) and the device profile's YAML
// (models/cluster/device_profile.h): efficiency is FLOPs / time / peak on
// every record, the pooling keeps the curve monotone and is exact where no
// pooling was needed, the profile round-trips, and the shipped h200 profile
// is exactly what the fitter makes of the shipped trace.

#include "calibrators/device_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace clustertwin::calibrators {
namespace {

const std::string kTraceName = "h200-torch2.11-eager-2026-12-04.json";
const std::string kTrace = std::string(CT_SOURCE_DIR) + "/traces/data/kernels/" + kTraceName;
const std::string kShippedProfile = std::string(CT_SOURCE_DIR) + "/sim/platforms/devices/h200.yaml";

DeviceFit fit_shipped() {
  auto trace = traces::read_kernel_trace(kTrace);
  EXPECT_TRUE(trace.is_ok()) << trace.status().message();
  DeviceFitOptions o;
  o.name = "h200";
  o.trace_name = kTraceName;
  auto fit = fit_device_profile(*trace, o);
  EXPECT_TRUE(fit.is_ok()) << fit.status().message();
  return *fit;
}

TEST(DeviceFitTest, EfficiencyIsFlopsOverTimeOverPeakOnEveryRecord) {
  const traces::KernelTrace trace = *traces::read_kernel_trace(kTrace);
  const DeviceFit fit = fit_shipped();
  size_t i = 0;
  for (const traces::KernelRecord& r : trace.records) {
    if (r.kind != "gemm" && r.kind != "attention") continue;
    ASSERT_LT(i, fit.points.size());
    EXPECT_EQ(fit.points[i].measured, r.flops / r.time_s / trace.peak_flops) << r.name;
    ++i;
  }
  EXPECT_EQ(i, fit.points.size());
  // The first GEMM: 6 x 16384 x 8192 x 1280 FLOPs in 1.533 ms at 989.5 TFLOP/s: 0.6795 (the measurements: 0.68).
  EXPECT_NEAR(fit.points[0].measured, 0.6795, 5e-5);
}

TEST(DeviceFitTest, AttentionIsExactAtItsMeasuredLengths) {
  // The three lengths measured rising efficiencies: no pooling, each a knot of its own.
  const DeviceFit fit = fit_shipped();
  const auto& knots = fit.profile.attention.knots();
  ASSERT_EQ(knots.size(), 3u);
  EXPECT_EQ(knots[0].size, 1024);
  EXPECT_EQ(knots[1].size, 4096);
  EXPECT_EQ(knots[2].size, 16384);
  for (const DeviceFitPoint& p : fit.points) {
    if (p.curve == "attention") {
      EXPECT_EQ(p.residual(), 0) << p.size;
    }
  }
  EXPECT_TRUE(fit.profile.attention_full.empty());  // the measurements hold causal attention only
}

TEST(DeviceFitTest, GemmCurveIsMonotoneAndTimeWeightedWherePooled) {
  const DeviceFit fit = fit_shipped();
  const auto& knots = fit.profile.gemm.knots();
  ASSERT_GE(knots.size(), 2u);
  for (size_t i = 1; i < knots.size(); ++i) {
    EXPECT_GT(knots[i].size, knots[i - 1].size);
    EXPECT_GE(knots[i].efficiency, knots[i - 1].efficiency);
  }
  // Each knot's efficiency is its pool's FLOPs over its time over the peak, so the fit's total time for all GEMM
  // records is the measured total: sum over records of (fitted time - measured time) weighs out per pool.
  double measured_time = 0, fitted_time = 0;
  for (const DeviceFitPoint& p : fit.points) {
    if (p.curve != "gemm") continue;
    measured_time += p.time_s;
    fitted_time += p.time_s * p.measured / p.fitted;
  }
  // Not equal in general (a knot prices records at other sizes by interpolation), but close on this trace.
  EXPECT_NEAR(fitted_time / measured_time, 1, 0.05);
}

// The 72B layer's four GEMMs are the trace's first four GEMM records: the layer check prices them exactly as
// the fit prices those records (FLOPs over peak over the fitted efficiency), and its attention (4 x 4096,
// causal) as the 4096-token attention record, a knot: its measured time.
TEST(DeviceFitTest, LayerCheckPricesEachGemmAndTheAttentionByTheCurves) {
  const traces::KernelTrace trace = *traces::read_kernel_trace(kTrace);
  const DeviceFit fit = fit_shipped();
  ASSERT_EQ(fit.layers.size(), 2u);
  const DeviceFitLayerCheck& l = fit.layers[0];
  EXPECT_EQ(l.measured_s, 20.17e-3);
  double gemm_s = 0;
  for (int i = 0; i < 4; ++i)
    gemm_s += trace.records[i].flops / (trace.peak_flops * fit.points[i].fitted);
  EXPECT_NEAR(l.gemm_s, gemm_s, 1e-12 * gemm_s);
  EXPECT_NEAR(l.attention_s, 1.195e-3, 1e-12);
  EXPECT_GT(l.unpriced_share(), 0);  // norms, activations and rotary take the rest
}

TEST(DeviceFitTest, PoolAdjacentViolatorsByTime) {
  // (size, efficiency, weight): 4 measured below 2, so they pool: efficiency (0.7 x 1 + 0.6 x 3) / 4 = 0.625 at
  // size exp((ln 2 + 3 ln 4) / 4) = 2^(7/4); 1 and 8 stay as measured.
  const auto knots = monotone_knots({{8, 0.9, 1}, {2, 0.7, 1}, {1, 0.5, 1}, {4, 0.6, 3}});
  ASSERT_EQ(knots.size(), 3u);
  EXPECT_EQ(knots[0].size, 1);
  EXPECT_EQ(knots[0].efficiency, 0.5);
  EXPECT_NEAR(knots[1].size, std::pow(2.0, 1.75), 1e-12);
  EXPECT_NEAR(knots[1].efficiency, 0.625, 1e-15);
  EXPECT_EQ(knots[2].size, 8);
  EXPECT_EQ(knots[2].efficiency, 0.9);
  // Equal sizes are one knot: the time-weighted mean, (0.6 x 1 + 0.8 x 3) / 4 = 0.75.
  const auto same = monotone_knots({{5, 0.6, 1}, {5, 0.8, 3}});
  ASSERT_EQ(same.size(), 1u);
  EXPECT_EQ(same[0].size, 5);
  EXPECT_NEAR(same[0].efficiency, 0.75, 1e-15);
}

TEST(DeviceFitTest, DecodeShareIsTheBestBytesOverTimeOverBandwidth) {
  // Decode records: bytes / time / memory bandwidth each; the profile keeps the best, where bandwidth binds.
  const traces::KernelTrace trace = *traces::read_kernel_trace(kTrace);
  const DeviceFit fit = fit_shipped();
  double best = 0;
  size_t decodes = 0;
  for (const traces::KernelRecord& r : trace.records) {
    if (r.kind != "decode") continue;
    ASSERT_LT(decodes, fit.decode_shares.size());
    EXPECT_EQ(fit.decode_shares[decodes].first, r.dim("batch"));
    EXPECT_EQ(fit.decode_shares[decodes].second, r.bytes / r.time_s / trace.memory_bandwidth);
    best = std::max(best, fit.decode_shares[decodes].second);
    ++decodes;
  }
  EXPECT_EQ(decodes, 4u);
  EXPECT_EQ(fit.profile.decode_bandwidth_share, best);
  // Batch 16: 26.4 GB in 7.49 ms at 4.8 TB/s (the measurements: 0.73).
  EXPECT_NEAR(best, 26424115200 / 7.49e-3 / 4.8e12, 1e-12);
  // A record moving more than the bandwidth is the trace's fault, named.
  traces::KernelTrace fast = trace;
  for (traces::KernelRecord& r : fast.records) {
    if (r.kind == "decode") r.time_s /= 2;
  }
  DeviceFitOptions o;
  o.name = "x";
  auto bad = fit_device_profile(fast, o);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(),
            kTrace + ": a decode record at batch 1 moves 1.464 of memory_bandwidth: above the device's bandwidth");
}

TEST(DeviceFitTest, ProfileRoundTripsThroughYaml) {
  const DeviceFit fit = fit_shipped();
  const std::string yaml = device_fit_yaml(fit);
  auto back = cluster::parse_device_profile(yaml, "h200.yaml");
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_TRUE(*back == fit.profile);
  EXPECT_EQ(cluster::device_profile_yaml(*back), cluster::device_profile_yaml(fit.profile));
  EXPECT_EQ(device_fit_yaml(fit_shipped()), yaml);  // deterministic
}

TEST(DeviceFitTest, TheShippedH200ProfileIsTheFitOfTheShippedTrace) {
  std::ifstream in(kShippedProfile);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), device_fit_yaml(fit_shipped()))
      << "refit: clustertwin calibrate device traces/data/kernels/" << kTraceName
      << " --name h200 -o sim/platforms/devices/h200.yaml";
  auto loaded = cluster::load_device_profile("h200");  // the embedded copy
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
  EXPECT_TRUE(*loaded == fit_shipped().profile);
  EXPECT_EQ(loaded->provenance_of("torch"), "2.11.0+cu130");
  EXPECT_NE(loaded->software_stack.find("no Transformer Engine, no torch.compile"), std::string::npos);
}

TEST(DeviceFitTest, ATraceWithoutAttentionCannotMakeAProfile) {
  traces::KernelTrace t = *traces::read_kernel_trace(kTrace);
  std::erase_if(t.records, [](const traces::KernelRecord& r) { return r.kind == "attention"; });
  DeviceFitOptions o;
  o.name = "x";
  auto fit = fit_device_profile(t, o);
  ASSERT_FALSE(fit.is_ok());
  EXPECT_EQ(fit.status().message(),
            kTrace + ": no attention record with causal true of dtype bf16: a device profile needs at least one");
}

TEST(DeviceProfileTest, BadProfileFieldsAreNamed) {
  const std::string good =
      "name: d\ndescription: x\nsoftware_stack: s\nprovenance: {date: today}\npeak_flops: 1e15\n"
      "gemm: [{size: 1e9, efficiency: 0.6}]\nattention: [{size: 1024, efficiency: 0.2}]\n";
  ASSERT_TRUE(cluster::parse_device_profile(good, "d.yaml").is_ok());
  struct Case {
    std::string from, to, message;
  };
  const std::vector<Case> cases = {
      {"efficiency: 0.6", "efficiency: 1.6", "d.yaml: field 'gemm[0].efficiency'"},
      {"attention: [{size: 1024, efficiency: 0.2}]",
       "attention: [{size: 1024, efficiency: 0.2}, {size: 512, "
       "efficiency: 0.3}]",
       "d.yaml: field 'attention' knot 1 (size 512, efficiency 0.3): sizes must increase (the one before is 1024)"},
      {"peak_flops: 1e15", "peak_flops: fast", "d.yaml: field 'peak_flops'"},
      {"gemm: [{size: 1e9, efficiency: 0.6}]\n", "", "d.yaml: field 'gemm': missing"},
      {"peak_flops: 1e15\n", "peak_flops: 1e15\ndecode_bandwidth_share: 1.5\n",
       "d.yaml: field 'decode_bandwidth_share'"},
  };
  for (const Case& c : cases) {
    std::string text = good;
    text.replace(text.find(c.from), c.from.size(), c.to);
    auto p = cluster::parse_device_profile(text, "d.yaml");
    ASSERT_FALSE(p.is_ok()) << c.to;
    EXPECT_EQ(p.status().message().rfind(c.message, 0), 0u) << p.status().message();
  }
}

}  // namespace
}  // namespace clustertwin::calibrators
