// sim/flowtrain/flowtrain_model.h: the FlowTrain twin's pieces outside its
// event loop. The peak it prices compute at, the packing of a step's samples
// into micro-batches (fewest bins, a multiple of the replicas), and a row's
// JSON between the child process and the caller, and in the output file.

#include "sim/flowtrain/flowtrain_model.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace clustertwin::sim::flowtrain::detail {
namespace {

TEST(FlowTrainModelTest, ThePeakIsBf16ElseTheFirstRated) {
  cluster::ClusterProfile p;
  p.device.peak_flops = {{"bf16", 9e14}, {"fp32", 6e13}};
  EXPECT_EQ(peak_of(p), 9e14);
  p.device.peak_flops = {{"int8", 4e15}, {"fp8", 2e15}};
  EXPECT_EQ(peak_of(p), 2e15);  // "fp8" sorts first
}

std::vector<models::flowtrain::PackItem> pack_items(const std::vector<int64_t>& tokens) {
  std::vector<models::flowtrain::PackItem> out;
  for (size_t i = 0; i < tokens.size(); ++i)
    out.push_back({static_cast<int64_t>(i), tokens[i], static_cast<double>(tokens[i])});
  return out;
}

TEST(FlowTrainModelTest, PackingStartsFromTheTokenBoundAndKeepsAMultipleOfTheReplicas) {
  // 600 tokens in bins of 256: at least ceil(600 / 256) = 3 bins; 3 of 200 fit.
  auto three = pack(pack_items({200, 200, 200}), 256, false);
  ASSERT_TRUE(three.is_ok()) << three.status().message();
  EXPECT_EQ(three->bins.size(), 3u);
  // Two replicas: 3 rounds up to 4.
  auto four = pack(pack_items({200, 200, 200}), 256, true, 2);
  ASSERT_TRUE(four.is_ok()) << four.status().message();
  EXPECT_EQ(four->bins.size(), 4u);
  // 3 x 150 = 450 tokens: the bound says 2 bins, but no two 150s share one; the packer takes 3.
  auto more = pack(pack_items({150, 150, 150}), 256, false);
  ASSERT_TRUE(more.is_ok()) << more.status().message();
  EXPECT_EQ(more->bins.size(), 3u);
  for (const auto& bin_tokens : more->tokens)
    EXPECT_LE(bin_tokens, 256);
}

TEST(FlowTrainModelTest, ASampleLargerThanABinHasNoPacking) {
  auto none = pack(pack_items({300}), 256, false);
  ASSERT_FALSE(none.is_ok());
  EXPECT_EQ(none.status().code(), Status::Code::kInternal);
}

TEST(FlowTrainModelTest, ARowRoundTripsThroughJson) {
  FlowTrainRow r;
  r.mode = "flowtrain";
  r.model = "tiny";
  r.workers = 8;
  r.encoder_workers = 2;
  r.encoder_tp = 1;
  r.backbone_tp = 2;
  r.backbone_pp = 1;
  r.step_s = 0.125;
  r.samples_per_s = 512;
  r.mfu = 0.4;
  r.speedup = 1.5;
  r.allocator_rate = 600;
  r.micro_batch_imbalance = 1.25;
  r.step_times_s = {0.5, 0.125, 0.125};
  r.last_step = {{0, 2, 0.0, 0.25, "encoder"}, {2, 6, 0.125, 0.5, "backbone"}};
  const FlowTrainRow back = row_from_json(row_to_json(r, true));
  EXPECT_EQ(back.mode, r.mode);
  EXPECT_EQ(back.workers, 8);
  EXPECT_EQ(back.encoder_workers, 2);
  EXPECT_EQ(back.backbone_tp, 2);
  EXPECT_EQ(back.step_s, 0.125);
  EXPECT_EQ(back.samples_per_s, 512);
  EXPECT_EQ(back.step_times_s, r.step_times_s);
  ASSERT_EQ(back.last_step.size(), 2u);
  EXPECT_EQ(back.last_step[1].kind, "backbone");
  EXPECT_EQ(back.last_step[1].first_device, 2);
  EXPECT_EQ(back.last_step[1].devices, 6);
  EXPECT_EQ(back.last_step[1].end_s, 0.5);
  EXPECT_EQ(back.allocator_rate, 600);
  EXPECT_EQ(back.micro_batch_imbalance, 1.25);
  // A row of the output file: the speedup (which the caller works out across modes), no intervals.
  const nlohmann::json out = row_to_json(r, false);
  EXPECT_EQ(out.at("speedup"), 1.5);
  EXPECT_EQ(out.at("allocator_samples_per_s"), 600);
  EXPECT_FALSE(out.contains("last_step"));
}

}  // namespace
}  // namespace clustertwin::sim::flowtrain::detail
