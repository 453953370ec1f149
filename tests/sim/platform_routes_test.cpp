// The platform computes its routes on demand (Platform::Routes::kComputed)
// instead of storing one per node pair (kStored, the layout of a full zone
// per node under a full root zone). Both must give every route the same
// links in the same order with the same latency, and so the same simulation,
// on every kind of topology and node.

#include <gtest/gtest.h>

#include <cstdio>
#include <ostream>
#include <simgrid/s4u.hpp>
#include <sstream>

#include "sim/core/isolated.h"
#include "sim/core/platform.h"
#include "sim/core/simulator.h"
#include "tests/sim/sim_test_util.h"

namespace clustertwin::cluster {
// Test names print a profile by its name.
void PrintTo(const ClusterProfile& profile, std::ostream* os) {
  *os << profile.name;
}
}  // namespace clustertwin::cluster

namespace clustertwin::sim {
namespace {

namespace sg = simgrid::s4u;
using models::Algorithm;
using models::CollectiveOp;

// 6 nodes of 4 devices on a full mesh, a NIC per device, a rail leaf-spine
// of 4 nodes per leaf (the second group half full), a straggler.
cluster::ClusterProfile rail_mesh() {
  cluster::ClusterProfile p = testing::uniform_switch(6, 50e9, 2e-6, 0);
  p.name = "rail-mesh";
  p.devices_per_node = 4;
  p.intra_node.kind = cluster::IntraNode::Kind::kFullMesh;
  p.intra_node.link = {150e9, 0.7e-6};
  p.nics.per_node = 4;
  p.nics.rail_optimized = true;
  p.topology.kind = cluster::Topology::Kind::kRailLeafSpine;
  p.topology.levels = 2;
  p.topology.nodes_per_leaf = 4;
  p.topology.radix = 2;
  p.topology.switch_link.latency = 0.5e-6;
  p.slowdown[5] = 1.5;
  return p;
}

// 12 nodes of 2 devices in a dragonfly of 2 nodes per router and 3 routers
// per group, whose global links are slower than what the group sends.
cluster::ClusterProfile dragonfly() {
  cluster::ClusterProfile p = testing::uniform_switch(12, 25e9, 1e-6, 0);
  p.name = "dragonfly";
  p.devices_per_node = 2;
  p.topology.kind = cluster::Topology::Kind::kDragonfly;
  p.topology.nodes_per_leaf = 2;
  p.topology.routers_per_group = 3;
  p.topology.global_links_per_router = 1;
  p.topology.switch_link = {20e9, 0.4e-6};
  return p;
}

// 3 nodes of 2 devices sharing 2 cores each (as localhost-cpu's processes).
cluster::ClusterProfile shared_cores() {
  cluster::ClusterProfile p = testing::uniform_switch(3, 10e9, 5e-6, 1e-6);
  p.name = "shared-cores";
  p.devices_per_node = 2;
  p.node_cores = 2;
  return p;
}

// Every route the twin can ask for on `profile` at `workers`, one line each:
// the hosts, the links in order and the latency to the last bit.
std::string route_table(const cluster::ClusterProfile& profile, int workers, Platform::Routes routes) {
  auto out = run_isolated([&]() -> StatusOr<std::string> {
    TwinEngine twin;
    auto built = Platform::build(profile, workers, routes);
    if (!built.is_ok()) return built.status();
    Platform& p = **built;
    std::ostringstream table;
    auto line = [&](sg::Host* from, sg::Host* to) {
      std::vector<sg::Link*> links;
      double latency = 0;
      from->route_to(to, links, &latency);
      char exact[32];
      std::snprintf(exact, sizeof exact, "%a", latency);
      table << from->get_name() << " -> " << to->get_name() << ":";
      for (sg::Link* link : links)
        table << " " << link->get_name();
      table << " (" << exact << " s)\n";
    };
    for (int r = 0; r < p.workers(); ++r) {
      line(p.cpu(r), p.device(r));
      line(p.device(r), p.cpu(r));
      line(p.device(r), p.node_switch(p.node_of(r)));
      line(p.node_switch(p.node_of(r)), p.device(r));
      for (int s = 0; s < p.workers(); ++s) {
        if (s != r) line(p.device(r), p.device(s));
      }
      for (int b = 0; b < p.nodes(); ++b) {
        line(p.device(r), p.node_endpoint(b));
        if (b == p.node_of(r)) line(p.node_endpoint(b), p.device(r));
      }
      for (int g = 0; g < p.group_count(); ++g)
        line(p.device(r), p.group_endpoint(g));
    }
    for (int a = 0; a < p.nodes(); ++a) {
      line(p.node_endpoint(a), p.node_switch(a));
      for (int b = 0; b < p.nodes(); ++b) {
        if (b != a) line(p.node_endpoint(a), p.node_endpoint(b));
      }
      for (int g = 0; g < p.group_count(); ++g)
        line(p.node_endpoint(a), p.group_endpoint(g));
    }
    return table.str();
  });
  EXPECT_TRUE(out.is_ok()) << out.status().message();
  return out.is_ok() ? *out : "";
}

class PlatformRoutesTest : public ::testing::TestWithParam<std::tuple<cluster::ClusterProfile, int>> {};

TEST_P(PlatformRoutesTest, ComputedRoutesAreTheStoredOnes) {
  const auto& [profile, workers] = GetParam();
  const std::string stored = route_table(profile, workers, Platform::Routes::kStored);
  const std::string computed = route_table(profile, workers, Platform::Routes::kComputed);
  ASSERT_FALSE(stored.empty());
  EXPECT_EQ(computed, stored) << profile.name;
}

INSTANTIATE_TEST_SUITE_P(Topologies, PlatformRoutesTest,
                         ::testing::Values(std::tuple{testing::uniform_switch(5, 10e9, 1e-6, 0.5e-6), 5},
                                           std::tuple{testing::oversubscribed_fat_tree(), 32},
                                           std::tuple{testing::oversubscribed_fat_tree(), 20},
                                           std::tuple{rail_mesh(), 24}, std::tuple{dragonfly(), 24},
                                           std::tuple{shared_cores(), 6},
                                           std::tuple{testing::oversubscribed_fat_tree(), 3}),
                         [](const auto& info) {
                           std::string name =
                               std::get<0>(info.param).name + "_" + std::to_string(std::get<1>(info.param));
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

// The route itself, derived by hand, so that the two ways cannot agree on a
// wrong one: on the oversubscribed fat tree, device 1 (node 0, NIC 1 * 2 / 4 = 0) to device 30
// (node 7, NIC 2 * 2 / 4 = 1). Nodes 0 and 7 share no group below the top:
// node 0 is in leaf 0 and level-2 group 0, node 7 in leaf 3 and group 1, so
// the route climbs both levels (link ids: level * 100000 + group).
TEST(PlatformRoutesTest, FatTreeRouteClimbsToTheCommonAncestor) {
  const std::string table = route_table(testing::oversubscribed_fat_tree(), 32, Platform::Routes::kComputed);
  // Latency: NIC 1 us + node uplink 0.3 us + 4 level links x 0.3 us + node downlink 0 + NIC 1 us = 3.5 us.
  char latency[32];
  std::snprintf(latency, sizeof latency, "%a", 1e-6 + 0.3e-6 + 4 * 0.3e-6 + 1e-6);
  const std::string expected =
      "dev1 -> dev30: nic_up0.0 node_up0 up100000 up200000 down200001 down100003 node_down7 "
      "nic_down7.1 (";
  const size_t at = table.find("dev1 -> dev30:");
  ASSERT_NE(at, std::string::npos);
  const std::string line = table.substr(at, table.find('\n', at) - at);
  EXPECT_EQ(line.substr(0, expected.size()), expected);
  // The sum in SimGrid's order may differ from this one in the last bit.
  EXPECT_NEAR(std::strtod(line.substr(expected.size()).c_str(), nullptr), std::strtod(latency, nullptr), 1e-18);
}

// Every collective and algorithm, a send/recv pair and overlapping compute,
// simulated on both kinds of route: the results must be the same numbers.
models::Plan mixed_plan() {
  models::Plan plan;
  plan.system = "collectives";
  plan.variant = "routes";
  plan.streams = {"compute", "comm"};
  auto add = [&](models::TaskKind kind, int stream, const std::string& name, int64_t bytes,
                 std::optional<models::Collective> c, std::vector<models::RankRange> ranks) {
    models::Task t;
    t.id = static_cast<int>(plan.tasks.size());
    t.name = name;
    t.kind = kind;
    t.stream = stream;
    t.bytes = bytes;
    t.flops = kind == models::TaskKind::kCompute ? 2e9 : 0;
    t.collective = c;
    t.ranks = std::move(ranks);
    plan.tasks.push_back(t);
  };
  add(models::TaskKind::kCompute, 0, "compute", 0, std::nullopt, {});
  add(models::TaskKind::kCopy, 0, "h2d", 8 << 20, std::nullopt, {});
  for (auto [op, algo] :
       {std::pair{CollectiveOp::kAllReduce, Algorithm::kRing}, std::pair{CollectiveOp::kAllReduce, Algorithm::kTree},
        std::pair{CollectiveOp::kAllReduce, Algorithm::kHierarchical},
        std::pair{CollectiveOp::kAllToAll, Algorithm::kDirect},
        std::pair{CollectiveOp::kAllToAll, Algorithm::kHierarchical},
        std::pair{CollectiveOp::kAllGather, Algorithm::kRing}, std::pair{CollectiveOp::kBroadcast, Algorithm::kTree}}) {
    models::Collective c;
    c.op = op;
    c.algorithm = algo;
    add(models::TaskKind::kCollective, 1,
        std::string(models::collective_op_name(op)) + "/" + std::string(models::algorithm_name(algo)), 16 << 20, c, {});
  }
  models::Collective send;
  send.op = CollectiveOp::kSend;
  send.peer_offset = 3;
  add(models::TaskKind::kCollective, 1, "send", 4 << 20, send, {{0, 1}});
  models::Collective recv = send;
  recv.op = CollectiveOp::kRecv;
  recv.peer_offset = -3;
  add(models::TaskKind::kCollective, 1, "recv", 4 << 20, recv, {{3, 4}});
  return plan;
}

class RoutesSimulationTest : public ::testing::TestWithParam<std::tuple<cluster::ClusterProfile, int, Fidelity>> {};

TEST_P(RoutesSimulationTest, SameResultsOnComputedAndStoredRoutes) {
  const auto& [profile, workers, fidelity] = GetParam();
  const models::Plan plan = mixed_plan();
  SimOptions o;
  o.workers = workers;
  o.steps = 2;
  o.warmup_steps = 0;
  o.drain_steps = 0;
  o.auto_fidelity = false;
  o.fidelity = fidelity;
  o.symmetric = false;
  auto computed = simulate_plan(plan, profile, o);
  o.stored_routes = true;
  auto stored = simulate_plan(plan, profile, o);
  ASSERT_TRUE(computed.is_ok()) << computed.status().message();
  ASSERT_TRUE(stored.is_ok()) << stored.status().message();
  EXPECT_GT(computed->step_time_s, 0);
  EXPECT_EQ(computed->step_end_s, stored->step_end_s);
  ASSERT_EQ(computed->tasks.size(), stored->tasks.size());
  for (size_t t = 0; t < plan.tasks.size(); ++t) {
    EXPECT_EQ(computed->tasks[t].mean_s, stored->tasks[t].mean_s) << plan.tasks[t].name;
    EXPECT_EQ(computed->tasks[t].max_s, stored->tasks[t].max_s) << plan.tasks[t].name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Topologies, RoutesSimulationTest,
    ::testing::Values(std::tuple{testing::uniform_switch(48, 25e9, 1e-6, 0.5e-6), 48, Fidelity::kFlow},
                      std::tuple{testing::uniform_switch(16, 25e9, 1e-6, 0.5e-6), 16, Fidelity::kStep},
                      std::tuple{testing::oversubscribed_fat_tree(), 32, Fidelity::kFlow},
                      std::tuple{testing::oversubscribed_fat_tree(), 32, Fidelity::kStep},
                      std::tuple{rail_mesh(), 24, Fidelity::kFlow}, std::tuple{rail_mesh(), 24, Fidelity::kStep},
                      std::tuple{dragonfly(), 24, Fidelity::kFlow}, std::tuple{shared_cores(), 6, Fidelity::kFlow}),
    [](const auto& info) {
      std::string name = std::get<0>(info.param).name + "_" + std::to_string(std::get<1>(info.param)) + "_" +
                         std::string(fidelity_name(std::get<2>(info.param)));
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return name;
    });

}  // namespace
}  // namespace clustertwin::sim
