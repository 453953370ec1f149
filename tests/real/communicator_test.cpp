// c10d collectives through the Communicator, ranks as threads (Gloo, loopback).

#include "real/core/communicator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "real/core/device.h"
#include "tests/real/rank_threads.h"

namespace clustertwin::real {
namespace {

constexpr int kRanks = 3;

// Unstaged, and staged as GPU tensors are on a Gloo group (copied in, run,
// copied back: the path of several ranks sharing one GPU), on the CPU.
class CommunicatorTest : public ::testing::TestWithParam<bool> {};

TEST_P(CommunicatorTest, CollectivesComputeTheRightValues) {
  const bool staged = GetParam();
  auto results = testing::run_ranks(
      kRanks,
      [staged](Communicator& c) -> Status {
        if (c.staging() != (staged ? "always (testing)" : "none")) return Status::internal("staging " + c.staging());
        auto world = c.world(0);
        if (!world.is_ok()) return world.status();
        Group& g = **world;
        const float r = static_cast<float>(c.rank());
        // All-reduce: 0 + 1 + 2 = 3 in every element.
        at::Tensor t = at::full({5}, r);
        CT_RETURN_IF_ERROR(c.all_reduce(g, t));
        if (!at::equal(t, at::full({5}, 3.0f)))
          return Status::internal("all-reduce gave " + std::to_string(t[0].item<float>()));
        // All-gather: chunk i holds i.
        at::Tensor out = at::zeros({6});
        at::Tensor in = at::full({2}, r);
        CT_RETURN_IF_ERROR(c.all_gather(g, out, in));
        if (!at::equal(out, at::tensor({0.f, 0.f, 1.f, 1.f, 2.f, 2.f}))) return Status::internal("all-gather");
        // Reduce-scatter (Gloo: all-to-all then sum): chunk j of every rank holds (r + 1)(j + 1);
        // rank j ends with (j + 1)(1 + 2 + 3) = 6 (j + 1).
        at::Tensor rs_in = at::tensor({1.f, 1.f, 2.f, 2.f, 3.f, 3.f}) * (r + 1);
        at::Tensor rs_out = at::zeros({2});
        CT_RETURN_IF_ERROR(c.reduce_scatter(g, rs_out, rs_in));
        if (!at::equal(rs_out, at::full({2}, 6 * (r + 1)))) return Status::internal("reduce-scatter");
        // Uneven all-to-all: rank r sends j + 1 elements of value 10 r + j to rank j.
        std::vector<int64_t> send_splits{1, 2, 3}, recv_splits(kRanks, c.rank() + 1);
        std::vector<float> send;
        for (int j = 0; j < kRanks; ++j)
          send.insert(send.end(), j + 1, 10 * r + j);
        at::Tensor a_in = at::tensor(send);
        at::Tensor a_out = at::zeros({kRanks * (c.rank() + 1)});
        CT_RETURN_IF_ERROR(c.all_to_all(g, a_out, a_in, recv_splits, send_splits));
        for (int i = 0; i < kRanks; ++i) {
          if (a_out[i * (c.rank() + 1)].item<float>() != 10.f * i + r) return Status::internal("all-to-all");
        }
        // Broadcast from index 1.
        at::Tensor b = at::full({4}, r);
        CT_RETURN_IF_ERROR(c.broadcast(g, b, 1));
        if (!at::equal(b, at::full({4}, 1.0f))) return Status::internal("broadcast");
        // The inputs of every collective are as they were: staging copies, never writes back into an input.
        if (!at::equal(a_in, at::tensor(send)) || !at::equal(in, at::full({2}, r)))
          return Status::internal("input changed");
        // Send and receive around the ring: rank r receives 100 + (r - 1 mod n).
        at::Tensor to_next = at::full({3}, 100 + r);
        at::Tensor from_prev = at::zeros({3});
        auto sent = c.send_async(g, to_next, (c.rank() + 1) % kRanks, 7);
        if (!sent.is_ok()) return sent.status();
        CT_RETURN_IF_ERROR(c.recv(g, from_prev, (c.rank() + kRanks - 1) % kRanks, 7));
        CT_RETURN_IF_ERROR(c.wait_send(*sent));
        if (from_prev[0].item<float>() != 100.f + static_cast<float>((c.rank() + kRanks - 1) % kRanks))
          return Status::internal("send/recv gave " + std::to_string(from_prev[0].item<float>()));
        return c.barrier(g);
      },
      20, staged);
  for (int r = 0; r < kRanks; ++r)
    EXPECT_TRUE(results[r].is_ok()) << "rank " << r << ": " << results[r].message();
}

// Receives from any source on a control group (always Gloo): rank 0 hears
// from every other rank, in whatever order they come, and knows who sent.
TEST_P(CommunicatorTest, ControlGroupReceivesFromAnySource) {
  const bool staged = GetParam();
  auto results = testing::run_ranks(
      kRanks,
      [](Communicator& c) -> Status {
        auto control = c.control_group(c.all_ranks(), 5);
        if (!control.is_ok()) return control.status();
        if ((*control)->nccl) return Status::internal("a control group on NCCL");
        if (c.rank() != 0) {
          at::Tensor hello = at::full({2}, static_cast<int64_t>(10 * c.rank()), at::kLong);
          return c.send(**control, hello, 0, 3);
        }
        std::vector<int> heard;
        for (int i = 1; i < kRanks; ++i) {
          at::Tensor got = at::zeros({2}, at::kLong);
          auto from = c.recv_any(**control, got, 3);
          if (!from.is_ok()) return from.status();
          if (got[0].item<int64_t>() != 10 * *from) return Status::internal("recv_any: payload of another rank");
          heard.push_back(*from);
        }
        std::sort(heard.begin(), heard.end());
        return heard == std::vector<int>{1, 2} ? Status::ok() : Status::internal("recv_any: not every rank heard");
      },
      20, staged);
  for (int r = 0; r < kRanks; ++r)
    EXPECT_TRUE(results[r].is_ok()) << "rank " << r << ": " << results[r].message();
}

INSTANTIATE_TEST_SUITE_P(Staging, CommunicatorTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Staged" : "Direct"; });

TEST(CommunicatorGroupsTest, SubgroupsOnChannels) {
  auto results = testing::run_ranks(4, [](Communicator& c) -> Status {
    // Pairs {0, 1} and {2, 3} on channel 1: each pair sums its ranks.
    std::vector<int> pair = c.rank() < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3};
    auto g = c.group(pair, 1);
    if (!g.is_ok()) return g.status();
    at::Tensor t = at::full({1}, static_cast<float>(c.rank()));
    CT_RETURN_IF_ERROR(c.all_reduce(**g, t));
    const float expected = c.rank() < 2 ? 1.f : 5.f;  // 0 + 1, 2 + 3
    return t.item<float>() == expected ? Status::ok() : Status::internal("pair sum " + std::to_string(t.item<float>()));
  });
  for (int r = 0; r < 4; ++r)
    EXPECT_TRUE(results[r].is_ok()) << "rank " << r << ": " << results[r].message();
}

TEST(CommunicatorGroupsTest, AMissingPeerIsAnErrorNotAHang) {
  // Rank 1 never joins the all-reduce: rank 0 fails after the 2 s timeout.
  const auto start = std::chrono::steady_clock::now();
  auto results = testing::run_ranks(
      2,
      [](Communicator& c) -> Status {
        auto world = c.world(0);
        if (!world.is_ok()) return world.status();
        if (c.rank() == 1) {
          // Connected, but never joins: stay alive past rank 0's timeout so
          // that rank 0 fails in the all-reduce, not while connecting.
          std::this_thread::sleep_for(std::chrono::seconds(4));
          return Status::ok();
        }
        at::Tensor t = at::ones({4});
        return c.all_reduce(**world, t);
      },
      2.0);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(results[0].is_ok());
  EXPECT_NE(results[0].message().find("rank 0: all-reduce failed"), std::string::npos) << results[0].message();
  EXPECT_LT(elapsed, 15.0);
}

// What --device and --backend may ask for, on a machine of a given kind.
TEST(DeviceChoiceTest, EachFlagAndMachine) {
  const DeviceSupport cpu_build{false, 0}, gpu_less{true, 0}, two_gpus{true, 2};
  EXPECT_EQ(*choose_device("cpu", 0, two_gpus), c10::Device(c10::kCPU));
  EXPECT_EQ(*choose_device("auto", 0, cpu_build), c10::Device(c10::kCPU));
  EXPECT_EQ(*choose_device("auto", 0, gpu_less), c10::Device(c10::kCPU));
  // GPU LOCAL_RANK mod the GPUs visible: local rank 3 of 2 GPUs is cuda:1.
  EXPECT_EQ(*choose_device("auto", 3, two_gpus), c10::Device(c10::kCUDA, 1));
  EXPECT_EQ(*choose_device("cuda", 2, two_gpus), c10::Device(c10::kCUDA, 0));
  auto no_cuda = choose_device("cuda", 0, cpu_build);
  ASSERT_FALSE(no_cuda.is_ok());
  EXPECT_EQ(no_cuda.status().exit_code(), 2);
  // The library names the field (the command line maps it to --device).
  EXPECT_TRUE(no_cuda.status().message().starts_with("device cuda: this build's libtorch has no CUDA"))
      << no_cuda.status().message();
  auto no_gpu = choose_device("cuda", 0, gpu_less);
  ASSERT_FALSE(no_gpu.is_ok());
  EXPECT_TRUE(no_gpu.status().message().starts_with("device cuda: no GPU is visible")) << no_gpu.status().message();
  auto unknown = choose_device("gpu", 0, two_gpus);
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_EQ(unknown.status().message(), "device 'gpu': unknown device (allowed: cpu, cuda, auto)");
}

// NCCL needs tensors on GPUs: on the CPU it is refused before any rendezvous.
TEST(DeviceChoiceTest, NcclOnTheCpuIsRefusedWithOneLine) {
  DistEnv env;
  CommOptions options;
  options.device = "cpu";
  options.backend = "nccl";
  auto comm = Communicator::connect(env, options);
  ASSERT_FALSE(comm.is_ok());
  EXPECT_EQ(comm.status().exit_code(), 2);
  EXPECT_EQ(comm.status().message().find('\n'), std::string::npos);
  EXPECT_TRUE(comm.status().message().starts_with("backend nccl: ")) << comm.status().message();
}

}  // namespace
}  // namespace clustertwin::real
