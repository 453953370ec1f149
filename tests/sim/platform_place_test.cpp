// Platform::place (sim/core/platform_place.cpp): a job's view of a shared
// platform. Its ranks fill the given nodes in order, a node's devices in
// order; node indices stay the platform's; each bad placement is one line
// naming the job and the node.

#include <gtest/gtest.h>

#include <simgrid/s4u.hpp>
#include <sstream>

#include "sim/core/isolated.h"
#include "sim/core/platform.h"
#include "tests/sim/sim_test_util.h"

namespace clustertwin::sim {
namespace {

// On 4 nodes of 2 devices, each placement's ranks as "rank:node:device-of-the-platform", or its error.
std::string placements(const std::vector<std::pair<int, std::vector<int>>>& jobs) {
  auto out = run_isolated([&]() -> StatusOr<std::string> {
    TwinEngine twin;
    cluster::ClusterProfile profile = testing::uniform_switch(4, 50e9, 1e-6, 0);
    profile.devices_per_node = 2;
    auto built = Platform::build(profile, 8);
    if (!built.is_ok()) return built.status();
    const Platform& p = **built;
    std::ostringstream text;
    for (const auto& [workers, nodes] : jobs) {
      auto view = p.place(profile, nodes, workers, "j");
      if (!view.is_ok()) {
        text << view.status().message() << "\n";
        continue;
      }
      text << "per node " << (*view)->devices_per_node() << ":";
      for (int r = 0; r < (*view)->workers(); ++r) {
        int device = -1;
        for (int d = 0; d < p.workers(); ++d) {
          if (p.device(d) == (*view)->device(r) && p.cpu(d) == (*view)->cpu(r)) device = d;
        }
        text << " " << r << ":" << (*view)->node_of(r) << ":" << device;
      }
      text << "\n";
    }
    return text.str();
  });
  EXPECT_TRUE(out.is_ok()) << out.status().message();
  return out.is_ok() ? *out : "";
}

TEST(PlatformPlaceTest, RanksFillTheGivenNodesInOrder) {
  // 3 workers on nodes 3 then 1: ranks 0 and 1 on node 3's devices 6 and 7, rank 2 on node 1's first, device 2.
  // One worker takes one device of its node.
  EXPECT_EQ(placements({{3, {3, 1}}, {1, {2}}}), "per node 2: 0:3:6 1:3:7 2:1:2\nper node 1: 0:2:4\n");
}

TEST(PlatformPlaceTest, EachBadPlacementIsOneLineNamingTheJob) {
  EXPECT_EQ(placements({{3, {3, 1, 0}}, {2, {9}}, {4, {1, 1}}, {0, {}}}),
            "job 'j': 3 workers need 2 nodes of 2 devices, 3 given\n"
            "job 'j': node 9 is not in the platform's 4 nodes\n"
            "job 'j': node 1 is given twice\n"
            "job 'j': 0 workers: at least 1\n");  // once a division by zero (SIGFPE)
}

}  // namespace
}  // namespace clustertwin::sim
