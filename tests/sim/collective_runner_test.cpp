// sim/core/collective_runner.h: a collective's schedule run from one actor on
// an idle fabric. A ring all-reduce takes its closed form at both fidelities,
// and alone (a phase's later rounds priced as its first) takes what sending
// every round takes.

#include "sim/core/collective_runner.h"

#include <gtest/gtest.h>

#include <simgrid/s4u.hpp>
#include <sstream>

#include "sim/core/isolated.h"
#include "sim/core/platform.h"
#include "tests/sim/sim_test_util.h"

namespace clustertwin::sim {
namespace {

namespace sg = simgrid::s4u;

constexpr int kRunnerN = 4;
constexpr double kRunnerBeta = 10e9;                // 10 GB/s per NIC
constexpr double kRunnerAlpha = 2 * 1e-6 + 0.5e-6;  // NIC up, switch, NIC down: 2.5 us
constexpr int64_t kRunnerBytes = 4000000;           // S

// The seconds a ring all-reduce of S among 4 workers takes, run from one actor.
double ring_allreduce_seconds(Fidelity fidelity, bool alone) {
  auto out = run_isolated([&]() -> StatusOr<std::string> {
    TwinEngine twin;
    auto built = Platform::build(testing::uniform_switch(kRunnerN, kRunnerBeta, 1e-6, 0.5e-6), kRunnerN);
    if (!built.is_ok()) return built.status();
    models::Collective c;
    c.algorithm = models::Algorithm::kRing;
    auto schedule = build_schedule(
        c, kRunnerBytes, {0, 1, 2, 3}, [](int r) { return r; }, "ar");
    if (!schedule.is_ok()) return schedule.status();
    double seconds = -1;
    sg::Actor::create("driver", (*built)->device(0), [&] {
      run_collective(**built, *schedule, fidelity, alone);
      seconds = sg::Engine::get_clock();
    });
    twin.engine().run();
    std::ostringstream text;
    text.precision(17);
    text << seconds;
    return text.str();
  });
  EXPECT_TRUE(out.is_ok()) << out.status().message();
  return out.is_ok() ? std::stod(*out) : -1;
}

TEST(CollectiveRunnerTest, ARingAllReduceTakesItsClosedFormAtBothFidelities) {
  // 2(n-1) rounds of S/n to the next rank: 6 x (2.5 us + 1e6 B / 10 GB/s) = 6 x 102.5 us = 615 us.
  const double expected = 2.0 * (kRunnerN - 1) * (kRunnerAlpha + kRunnerBytes / (kRunnerN * kRunnerBeta));
  for (Fidelity f : {Fidelity::kStep, Fidelity::kFlow})
    EXPECT_NEAR(ring_allreduce_seconds(f, false), expected, 1e-6 * expected) << fidelity_name(f);
}

TEST(CollectiveRunnerTest, AloneOnAnIdleFabricTakesWhatSendingEveryRoundTakes) {
  const double sent = ring_allreduce_seconds(Fidelity::kStep, false);
  EXPECT_NEAR(ring_allreduce_seconds(Fidelity::kStep, true), sent, 1e-9 * sent);
}

TEST(CollectiveRunnerTest, FidelitiesHaveTheirNames) {
  EXPECT_EQ(fidelity_name(Fidelity::kStep), "step");
  EXPECT_EQ(fidelity_name(Fidelity::kFlow), "flow");
}

}  // namespace
}  // namespace clustertwin::sim
