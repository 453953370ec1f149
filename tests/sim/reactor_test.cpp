// sim/core/reactor.h: one actor's loop over activities. Handlers run in the
// order the activities finish (ties: the one added first), a handler may add
// more, and a removed activity's handler never runs.

#include "sim/core/reactor.h"

#include <gtest/gtest.h>

#include <simgrid/s4u.hpp>
#include <sstream>

#include "sim/core/isolated.h"
#include "sim/core/platform.h"
#include "tests/sim/sim_test_util.h"

namespace clustertwin::sim {
namespace {

namespace sg = simgrid::s4u;

// Runs `body(reactor, log)` as an actor on device 0 of a two-device platform;
// each handler writes "name@seconds " to the log.
std::string reactor_log(const std::function<void(Reactor&, std::ostringstream&, sg::Host*, sg::Host*)>& body) {
  auto out = run_isolated([&]() -> StatusOr<std::string> {
    TwinEngine twin;
    auto built = Platform::build(testing::uniform_switch(2, 50e9, 1e-6, 0), 2);
    if (!built.is_ok()) return built.status();
    std::ostringstream log;
    sg::Host* a = (*built)->device(0);
    sg::Host* b = (*built)->device(1);
    sg::Actor::create("loop", a, [&] {
      Reactor reactor;
      body(reactor, log, a, b);
      while (!reactor.empty())
        reactor.run_next();
    });
    twin.engine().run();
    return log.str();
  });
  EXPECT_TRUE(out.is_ok()) << out.status().message();
  return out.is_ok() ? *out : "";
}

// An exec of `seconds` on `host`, started.
sg::ExecPtr exec_for(sg::Host* host, double seconds) {
  sg::ExecPtr e = sg::this_actor::exec_init(seconds * host->get_speed())->set_host(host);
  e->start();
  return e;
}

std::function<void()> note(std::ostringstream& log, const std::string& name) {
  return [&log, name] { log << name << "@" << sg::Engine::get_clock() << " "; };
}

TEST(ReactorTest, HandlersRunInTheOrderTheActivitiesFinish) {
  const std::string log = reactor_log([](Reactor& r, std::ostringstream& log, sg::Host* a, sg::Host* b) {
    r.add(exec_for(a, 3), note(log, "slow"));
    r.add(exec_for(b, 1), note(log, "fast"));
  });
  EXPECT_EQ(log, "fast@1 slow@3 ");
}

TEST(ReactorTest, TiesGoToTheActivityAddedFirst) {
  const std::string log = reactor_log([](Reactor& r, std::ostringstream& log, sg::Host* a, sg::Host* b) {
    r.add(exec_for(b, 2), note(log, "first"));
    r.add(exec_for(a, 2), note(log, "second"));
  });
  EXPECT_EQ(log, "first@2 second@2 ");
}

TEST(ReactorTest, AHandlerMayAddMoreAndARemovedActivityNeverRunsItsHandler) {
  const std::string log = reactor_log([](Reactor& r, std::ostringstream& log, sg::Host* a, sg::Host* b) {
    sg::ExecPtr dropped = exec_for(b, 5);
    r.add(dropped, note(log, "dropped"));
    r.add(exec_for(a, 1), [&r, &log, a, dropped] {
      log << "one@" << sg::Engine::get_clock() << " ";
      log << "removed=" << r.remove(dropped) << " again=" << r.remove(dropped) << " ";  // no longer watched
      dropped->cancel();
      r.add(exec_for(a, 2), note(log, "then"));
      log << "size=" << r.size() << " ";
    });
    log << "size=" << r.size() << " ";
  });
  // The run is a child process (one engine per process): what it saw comes back in the log.
  EXPECT_EQ(log, "size=2 one@1 removed=1 again=0 size=1 then@3 ");
}

}  // namespace
}  // namespace clustertwin::sim
