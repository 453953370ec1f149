// The actor pool runs each job in an actor on its host, at the current
// simulated time, returns when the last one does, and reuses parked actors.

#include "sim/core/actor_pool.h"

#include <gtest/gtest.h>

#include <simgrid/s4u.hpp>
#include <sstream>

#include "sim/core/isolated.h"
#include "sim/core/platform.h"
#include "tests/sim/sim_test_util.h"

namespace clustertwin::sim {
namespace {

namespace sg = simgrid::s4u;

// Runs `scenario` as the one actor of a 4-host platform, in a child process; returns what it wrote.
std::string simulate(const std::function<void(Platform&, std::ostringstream&)>& scenario) {
  auto out = run_isolated([&]() -> StatusOr<std::string> {
    TwinEngine twin;
    auto platform = Platform::build(testing::uniform_switch(4, 10e9, 1e-6, 0.5e-6), 4);
    if (!platform.is_ok()) return platform.status();
    std::ostringstream log;
    sg::Actor::create("main", (*platform)->device(0), [&] { scenario(**platform, log); });
    twin.engine().run();
    log << "end " << sg::Engine::get_clock() << "\n";
    return log.str();
  });
  EXPECT_TRUE(out.is_ok()) << out.status().message();
  return out.is_ok() ? *out : "";
}

TEST(ActorPoolTest, RunsEachJobOnItsHostAndWaitsForTheLast) {
  const std::string log = simulate([](Platform& p, std::ostringstream& log) {
    std::vector<ActorPool::Job> jobs;
    for (int k = 0; k < 3; ++k) {
      jobs.push_back({p.device(k + 1), [k, &log] {
                        log << "job " << k << " on " << sg::this_actor::get_host()->get_name() << " at "
                            << sg::Engine::get_clock() << "\n";
                        sg::this_actor::sleep_for(1.0 + k);
                      }});
    }
    sg::this_actor::sleep_for(0.5);
    p.actor_pool().run_all(std::move(jobs));
    log << "returned at " << sg::Engine::get_clock() << "\n";
  });
  // In order, each on its host, at the time of the call; back when the longest (3 s) is done,
  // and the parked actors do not keep the simulation going.
  EXPECT_EQ(log,
            "job 0 on dev1 at 0.5\n"
            "job 1 on dev2 at 0.5\n"
            "job 2 on dev3 at 0.5\n"
            "returned at 3.5\n"
            "end 3.5\n");
}

TEST(ActorPoolTest, ReusesParkedActors) {
  const std::string log = simulate([](Platform& p, std::ostringstream& log) {
    for (int round = 0; round < 5; ++round) {
      std::vector<ActorPool::Job> jobs;
      for (int k = 0; k < 3; ++k)
        jobs.push_back({p.device(1), [] { sg::this_actor::sleep_for(1.0); }});
      jobs.push_back({p.device(2), [] { sg::this_actor::sleep_for(2.0); }});
      p.actor_pool().run_all(std::move(jobs));
    }
    log << "created " << p.actor_pool().actors_created() << " at " << sg::Engine::get_clock() << "\n";
  });
  // 20 jobs in 5 rounds of 2 s; 4 actors: three on dev1, one on dev2.
  EXPECT_EQ(log, "created 4 at 10\nend 10\n");
}

TEST(ActorPoolTest, ConcurrentCallersShareThePool) {
  const std::string log = simulate([](Platform& p, std::ostringstream& log) {
    // A second caller starts while the first one's job is still busy on dev1: it needs an actor of its own.
    sg::ActorPtr other = sg::Actor::create("other", p.device(0), [&p, &log] {
      sg::this_actor::sleep_for(0.5);
      p.actor_pool().run_all({{p.device(1), [] { sg::this_actor::sleep_for(1.0); }}});
      log << "other back at " << sg::Engine::get_clock() << "\n";
    });
    p.actor_pool().run_all({{p.device(1), [] { sg::this_actor::sleep_for(2.0); }}});
    log << "main back at " << sg::Engine::get_clock() << "\n";
    other->join();
    // Both parked now: a later call of two jobs on dev1 creates none.
    p.actor_pool().run_all(
        {{p.device(1), [] { sg::this_actor::sleep_for(1.0); }}, {p.device(1), [] { sg::this_actor::sleep_for(1.0); }}});
    log << "created " << p.actor_pool().actors_created() << "\n";
  });
  EXPECT_EQ(log, "other back at 1.5\nmain back at 2\ncreated 2\nend 3\n");
}

TEST(ActorPoolTest, NoJobsReturnsAtOnce) {
  const std::string log = simulate([](Platform& p, std::ostringstream& log) {
    p.actor_pool().run_all({});
    log << "created " << p.actor_pool().actors_created() << " at " << sg::Engine::get_clock() << "\n";
  });
  EXPECT_EQ(log, "created 0 at 0\nend 0\n");
}

}  // namespace
}  // namespace clustertwin::sim
