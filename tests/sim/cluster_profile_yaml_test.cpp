#include "models/cluster/cluster_profile_yaml.h"

#include <gtest/gtest.h>

#include <string>

namespace clustertwin::sim {
namespace {

std::string yaml_of(const cluster::ClusterProfile& p) {
  auto text = cluster::cluster_profile_yaml(p, "a header line\nand a second");
  EXPECT_TRUE(text.is_ok()) << text.status().message();
  return text.is_ok() ? *text : std::string();
}

// Writing what was read and reading it back gives the same profile, and the
// same text when written again, for every shipped profile.
TEST(ClusterProfileYamlTest, ShippedProfilesRoundTrip) {
  for (const std::string& name : cluster::shipped_profile_names()) {
    auto p = cluster::load_cluster_profile(name);
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    const std::string text = yaml_of(*p);
    auto back = cluster::parse_cluster_profile(text, name + " (written)");
    ASSERT_TRUE(back.is_ok()) << back.status().message() << "\n" << text;
    EXPECT_EQ(yaml_of(*back), text) << name;
    EXPECT_EQ(back->devices(), p->devices());
    EXPECT_EQ(back->device.peak_flops, p->device.peak_flops);
    EXPECT_EQ(back->topology.kind, p->topology.kind);
    EXPECT_EQ(back->nics.link.bandwidth, p->nics.link.bandwidth);
    EXPECT_EQ(back->intra_node.link.latency, p->intra_node.link.latency);
  }
}

// Fitted costs and collectives, stragglers and extra device types survive
// exactly (doubles included).
TEST(ClusterProfileYamlTest, FitsAndVariationsRoundTripExactly) {
  auto p = cluster::load_cluster_profile("gpu-128");
  ASSERT_TRUE(p.is_ok());
  p->costs["dense_fwd"] = cluster::CostModel{1.0 / 3.0, 1.7e13, 0, 0, 0, 0};
  p->costs["lookup"] = cluster::CostModel{2.5e-5, 0, 1.048e9 / 7.0, 1.589e-3, 0, 0};
  p->collectives["allreduce"] = cluster::CollectiveFactor{0.75, 12.5, {{0, 3.1e-5, 0.7e9}, {1048576, 1.2e-4, 0.91e9}}};
  p->collectives["alltoall"] = cluster::CollectiveFactor{0.185, 290, {}};
  p->slowdown[3] = 1.25;
  cluster::DeviceType slow = p->device;
  slow.name = "slow \"gpu\"";
  slow.peak_flops["bf16"] /= 3;
  p->extra_device_types.push_back(slow);
  p->node_device_type[2] = slow.name;
  const std::string text = yaml_of(*p);
  auto back = cluster::parse_cluster_profile(text, "written.yaml");
  ASSERT_TRUE(back.is_ok()) << back.status().message() << "\n" << text;
  EXPECT_EQ(yaml_of(*back), text);
  EXPECT_EQ(back->costs.at("dense_fwd").latency, 1.0 / 3.0);
  EXPECT_EQ(back->costs.at("lookup").byte_rate, 1.048e9 / 7.0);
  EXPECT_EQ(back->costs.at("lookup").per_request, 1.589e-3);
  const cluster::CollectiveFactor& ar = back->collectives.at("allreduce");
  ASSERT_EQ(ar.fit.size(), 2u);
  EXPECT_EQ(ar.fit[1].from_bytes, 1048576);
  EXPECT_EQ(ar.fit[1].step_latency, 1.2e-4);
  EXPECT_EQ(ar.fit[1].bus_bandwidth, 0.91e9);
  EXPECT_EQ(back->collectives.at("alltoall").congestion_peers, 290);
  EXPECT_EQ(back->slowdown.at(3), 1.25);
  EXPECT_EQ(back->device_type_of(2 * back->devices_per_node).name, slow.name);
}

// Cost keys from imported traces are kernel names: ':' and '<' need quoting, and a templated kernel's
// name runs past YAML's 1,024-character limit on an implicit key.
TEST(ClusterProfileYamlTest, KernelNamesAsCostKeysRoundTrip) {
  auto p = cluster::load_cluster_profile("h100-1024");
  ASSERT_TRUE(p.is_ok());
  const std::string templated = "void at::native::elementwise_kernel<128, 2, " + std::string(1200, 'x') + ">";
  p->costs["void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>"] =
      cluster::CostModel{2e-6, 0, 0, 0, 0, 0};
  p->costs[templated] = cluster::CostModel{3e-6, 0, 0, 0, 0, 0};
  p->costs["say \"hi\": now"] = cluster::CostModel{4e-6, 0, 0, 0, 0, 0};
  const std::string text = yaml_of(*p);
  auto back = cluster::parse_cluster_profile(text, "kernels.yaml");
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(back->costs.at(templated).latency, 3e-6);
  EXPECT_EQ(back->costs.at("say \"hi\": now").latency, 4e-6);
  EXPECT_EQ(back->costs.size(), p->costs.size());
  EXPECT_EQ(yaml_of(*back), text);
}

TEST(ClusterProfileYamlTest, FittedCollectiveTimeUsesTheSegmentOfTheSize) {
  cluster::CollectiveFactor f{1, 0, {{0, 1e-5, 1e9}, {1 << 20, 2e-5, 2e9}}};
  // all-reduce among 4: 6 latency steps, bus factor 1.5.
  EXPECT_DOUBLE_EQ(f.fitted_seconds(models::CollectiveOp::kAllReduce, 4096, 4), 6e-5 + 4096 * 1.5 / 1e9);
  EXPECT_DOUBLE_EQ(f.fitted_seconds(models::CollectiveOp::kAllReduce, 1 << 20, 4), 12e-5 + (1 << 20) * 1.5 / 2e9);
  // broadcast among 8: 3 steps, factor 1; all-to-all among 2: 1 step, factor 1/2.
  EXPECT_DOUBLE_EQ(f.fitted_seconds(models::CollectiveOp::kBroadcast, 1000, 8), 3e-5 + 1000 / 1e9);
  EXPECT_DOUBLE_EQ(f.fitted_seconds(models::CollectiveOp::kAllToAll, 1000, 2), 1e-5 + 500 / 1e9);
}

// `text` with its first `from` replaced by `to` is refused by the parser with an error containing `message`.
void expect_edit_refused(const std::string& text, const std::string& from, const std::string& to,
                         const std::string& message) {
  std::string bad = text;
  const size_t at = bad.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  bad.replace(at, from.size(), to);
  auto r = cluster::parse_cluster_profile(bad, "bad.yaml");
  ASSERT_FALSE(r.is_ok()) << to;
  EXPECT_NE(r.status().message().find(message), std::string::npos) << r.status().message();
}

// A collective's wait per latency step on shared cores, by ranks on the node: exact through YAML,
// linear between the measured counts, the nearest measured count's outside them.
TEST(ClusterProfileYamlTest, StepWaitsRoundTripAndInterpolate) {
  auto p = cluster::load_cluster_profile("localhost-cpu");
  ASSERT_TRUE(p.is_ok());
  p->collectives["alltoall"].step_wait = {{2, 3.04e-4}, {4, 7.42e-4 / 3.0}, {8, 1e-3}};
  const std::string text = yaml_of(*p);
  auto back = cluster::parse_cluster_profile(text, "written.yaml");
  ASSERT_TRUE(back.is_ok()) << back.status().message() << "\n" << text;
  EXPECT_EQ(yaml_of(*back), text);
  const cluster::CollectiveFactor& f = back->collectives.at("alltoall");
  EXPECT_EQ(f.step_wait, p->collectives.at("alltoall").step_wait);
  EXPECT_DOUBLE_EQ(f.step_wait_at(2), 3.04e-4);
  EXPECT_DOUBLE_EQ(f.step_wait_at(3), (3.04e-4 + 7.42e-4 / 3.0) / 2);
  EXPECT_DOUBLE_EQ(f.step_wait_at(6), (7.42e-4 / 3.0 + 1e-3) / 2);
  EXPECT_DOUBLE_EQ(f.step_wait_at(1), 3.04e-4);
  EXPECT_DOUBLE_EQ(f.step_wait_at(64), 1e-3);
  EXPECT_EQ(cluster::CollectiveFactor{}.step_wait_at(4), 0);
  auto expect_error = [&](const std::string& from, const std::string& to, const std::string& message) {
    expect_edit_refused(text, from, to, message);
  };
  expect_error("- ranks: 4", "- ranks: 2",
               "bad.yaml: field 'collectives.alltoall.step_wait[1].ranks': 2 must be above");
  expect_error("- ranks: 2", "- ranks: 0", "field 'collectives.alltoall.step_wait[0].ranks'");
  expect_error("seconds: 0.001", "seconds: -1", "field 'collectives.alltoall.step_wait[2].seconds'");
  expect_error("seconds: 0.001", "seconds: 1\n        more: 2", "step_wait[2]");
}

// A cost key's own wait per latency step (calibrate's default on shared cores): exact through YAML, and a
// negative or unit-less one refused with its field.
TEST(ClusterProfileYamlTest, KeyStepWaitRoundTripsAndBadOnesAreNamed) {
  auto p = cluster::load_cluster_profile("localhost-cpu");
  ASSERT_TRUE(p.is_ok());
  p->costs["emb_a2a"].bus_rate = 5e7;
  p->costs["emb_a2a"].step_wait = 1.337e-3;
  const std::string text = yaml_of(*p);
  auto back = cluster::parse_cluster_profile(text, "written.yaml");
  ASSERT_TRUE(back.is_ok()) << back.status().message() << "\n" << text;
  EXPECT_EQ(back->costs.at("emb_a2a").step_wait, 1.337e-3);
  EXPECT_EQ(yaml_of(*back), text);
  expect_edit_refused(text, "step_wait: 0.001337", "step_wait: -1", "field 'costs.emb_a2a.step_wait'");
  expect_edit_refused(text, "step_wait: 0.001337", "step_wait: 3 parsecs", "field 'costs.emb_a2a.step_wait'");
}

TEST(ClusterProfileYamlTest, BadFitsAreNamed) {
  auto p = cluster::load_cluster_profile("localhost-cpu");
  ASSERT_TRUE(p.is_ok());
  p->collectives["allreduce"] = cluster::CollectiveFactor{1, 0, {{0, 1e-5, 1e9}}};
  std::string text = yaml_of(*p);
  auto expect_error = [&](const std::string& from, const std::string& to, const std::string& message) {
    expect_edit_refused(text, from, to, message);
  };
  expect_error("- from: 0", "- from: 5", "bad.yaml: field 'collectives.allreduce.fit[0].from': the first segment");
  expect_error("bus_bandwidth: 1e+09", "bus_bandwidth: 0", "field 'collectives.allreduce.fit[0].bus_bandwidth'");
  expect_error("step_latency: 1e-05", "step_latency: -1", "field 'collectives.allreduce.fit[0].step_latency'");
  expect_error("    fit:\n", "    fit: 3\n    more:\n", "field 'collectives.allreduce.fit': expected a list");
  expect_error("    fit:\n", "    fit: []\n    more:\n", "field 'collectives.allreduce.fit': an empty list");
  expect_error("bus_bandwidth: 1e+09",
               "bus_bandwidth: 1e+09\n      - from: 0\n        step_latency: 1\n        bus_bandwidth: 1",
               "fit[1].from': 0 bytes must be above");
}

}  // namespace
}  // namespace clustertwin::sim
