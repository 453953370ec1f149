// c10d collectives through the Communicator, ranks as threads (Gloo, loopback).

#include "real/core/communicator.h"

#include <gtest/gtest.h>

#include <thread>

#include "tests/real/rank_threads.h"

namespace clustertwin::real {
namespace {

constexpr int kRanks = 3;

TEST(CommunicatorTest, CollectivesComputeTheRightValues) {
  auto results = testing::run_ranks(kRanks, [](Communicator& c) -> Status {
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
    return c.barrier(g);
  });
  for (int r = 0; r < kRanks; ++r)
    EXPECT_TRUE(results[r].is_ok()) << "rank " << r << ": " << results[r].message();
}

TEST(CommunicatorTest, SubgroupsOnChannels) {
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

TEST(CommunicatorTest, AMissingPeerIsAnErrorNotAHang) {
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

}  // namespace
}  // namespace clustertwin::real
