// The rollout pool's hierarchical load balancing: least-loaded dispatch,
// queued requests moving between an agent's instances past the load-gap
// threshold, one idle instance moving from the idlest agent to the busiest,
// and the bad configurations.

#include "models/flexmarl/load_balancer.h"

#include <gtest/gtest.h>

namespace clustertwin::models::flexmarl {
namespace {

// Runs `n` requests to completion on `instance` (they must be queued there).
void drain(LoadBalancer& b, int instance, int n) {
  for (int i = 0; i < n; ++i) {
    b.start(instance);
    b.finish(instance);
  }
}

TEST(LoadBalancerTest, DispatchGoesToTheLeastLoadedInstanceOfTheAgent) {
  auto b = LoadBalancer::create({2, 1}, 5);
  ASSERT_TRUE(b.is_ok());
  // Agent 0 owns instances 0 and 1, agent 1 owns instance 2; ties go to the lower id.
  EXPECT_EQ(b->dispatch(0), 0);
  EXPECT_EQ(b->dispatch(0), 1);
  EXPECT_EQ(b->dispatch(0), 0);
  EXPECT_EQ(b->dispatch(1), 2);
  drain(*b, 0, 2);
  EXPECT_EQ(b->dispatch(0), 0);  // instance 0 is now empty, instance 1 holds one
}

TEST(LoadBalancerTest, QueuedRequestsMoveWithinAnAgentOnlyPastTheThreshold) {
  auto b = LoadBalancer::create({2}, 5);
  for (int i = 0; i < 16; ++i)
    b->dispatch(0);  // 8 and 8
  drain(*b, 1, 5);   // 8 and 3: a gap of 5 does not exceed the threshold
  EXPECT_TRUE(b->balance_within_agents().empty());
  drain(*b, 1, 3);  // 8 and 0: a gap of 8; half of it (4) moves
  const auto moves = b->balance_within_agents();
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_EQ(moves[0].from_instance, 0);
  EXPECT_EQ(moves[0].to_instance, 1);
  EXPECT_EQ(moves[0].requests, 4);
  EXPECT_EQ(b->instances()[0].load(), 4);
  EXPECT_EQ(b->instances()[1].load(), 4);
}

TEST(LoadBalancerTest, AnIdleInstanceMovesFromTheIdlestAgentToTheBusiest) {
  auto b = LoadBalancer::create({2, 2}, 5);
  for (int i = 0; i < 24; ++i)
    b->dispatch(0);  // agent 0: 12 per instance; agent 1: none
  b->dispatch(1);    // agent 1: instance 2 busy, instance 3 idle
  const auto r = b->balance_across_agents();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->instance, 3);
  EXPECT_EQ(r->from, 1);
  EXPECT_EQ(r->to, 0);
  EXPECT_EQ(b->instance_count(0), 3);
  EXPECT_EQ(b->dispatch(0), 3);  // the new instance takes agent 0's next request
  // Agent 1 keeps its last instance, however idle.
  EXPECT_FALSE(b->balance_across_agents().has_value());
  EXPECT_EQ(b->instance_count(1), 1);
}

TEST(LoadBalancerTest, WithoutKeepOneAnIdleAgentLendsItsLastInstanceAndGetsOneBack) {
  // The real executor's pool: one instance per agent. Agent 0 has work, agents 1 and 2 have none yet.
  auto b = LoadBalancer::create({1, 1, 1}, 2, {}, /*keep_one=*/false);
  ASSERT_TRUE(b.is_ok());
  for (int i = 0; i < 9; ++i)
    b->dispatch(0);
  auto r = b->balance_across_agents();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->to, 0);
  r = b->balance_across_agents();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->to, 0);
  EXPECT_EQ(b->instance_count(0), 3);
  EXPECT_EQ(b->instance_count(1) + b->instance_count(2), 0);
  EXPECT_FALSE(b->balance_across_agents().has_value());  // nobody left to give
  b->balance_within_agents();                            // agent 0's queue spreads over its three instances
  for (const Instance& i : b->instances())
    EXPECT_GT(i.load(), 0) << "instance " << i.id;
  // Agent 1's request has no instance: it waits unplaced, an infinite load per instance.
  EXPECT_EQ(b->dispatch(1), -1);
  EXPECT_EQ(b->unplaced(1), 1);
  EXPECT_FALSE(b->balance_across_agents().has_value());  // every instance of agent 0 is busy
  // Once one of agent 0's instances runs dry, agent 1 gets it.
  const int dry = 2;
  drain(*b, dry, b->instances()[dry].load());
  const auto back = b->balance_across_agents();
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->from, 0);
  EXPECT_EQ(back->to, 1);
  EXPECT_EQ(back->instance, dry);
  EXPECT_EQ(b->place_unplaced(1), dry);
  EXPECT_EQ(b->unplaced(1), 0);
}

TEST(LoadBalancerTest, WithKeepOneEveryAgentKeepsAnInstance) {
  auto b = LoadBalancer::create({1, 1}, 2);
  for (int i = 0; i < 9; ++i)
    b->dispatch(0);
  EXPECT_FALSE(b->balance_across_agents().has_value());
  EXPECT_EQ(b->instance_count(1), 1);
}

TEST(LoadBalancerTest, InstancesMoveOnlyBetweenAgentsOfOneSize) {
  // Agent 0 (4-device instances) is busy; agent 1 (1-device) and agent 2 (4-device) are idle.
  auto b = LoadBalancer::create({1, 2, 2}, 5, {4, 1, 4});
  ASSERT_TRUE(b.is_ok());
  for (int i = 0; i < 12; ++i)
    b->dispatch(0);
  const auto r = b->balance_across_agents();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->from, 2);  // not agent 1, whose instances are a different size
  EXPECT_EQ(r->to, 0);
  EXPECT_EQ(b->instance_count(1), 2);
}

TEST(LoadBalancerTest, BadConfigurationsAreOneLine) {
  EXPECT_EQ(LoadBalancer::create({2, 2}, 0).status().message(),
            "load balancer: load-gap threshold 0 must be > 0 (requests)");
  EXPECT_EQ(LoadBalancer::create({2, 0}, 5).status().message(),
            "load balancer: agent 1 has 0 inference instances (needs >= 1)");
  EXPECT_EQ(LoadBalancer::create({}, 5).status().message(), "load balancer: no agents");
  EXPECT_EQ(LoadBalancer::create({1, 1}, 5, {1}).status().message(), "load balancer: 1 instance sizes for 2 agents");
}

}  // namespace
}  // namespace clustertwin::models::flexmarl
