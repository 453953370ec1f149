// real/core/tracer.h: one rank's task events. Each recorded event takes the
// tracer's rank, concurrent recorders lose none, clear keeps the origin, and
// the thread's CPU clock counts work, not waiting.

#include "real/core/tracer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace clustertwin::real {
namespace {

TEST(TracerTest, EventsTakeTheTracersRankInRecordingOrder) {
  Tracer tracer(3);
  traces::Event a;
  a.name = "a";
  a.rank = 99;  // overwritten: a tracer records its own rank's events
  traces::Event b;
  b.name = "b";
  tracer.record(a);
  tracer.record(b);
  const std::vector<traces::Event> events = tracer.events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].name, "a");
  EXPECT_EQ(events[0].rank, 3);
  EXPECT_EQ(events[1].rank, 3);
}

TEST(TracerTest, ConcurrentRecordersLoseNoEvent) {
  Tracer tracer(0, 16);  // a small reserve: the vector grows while threads append
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&tracer, t] {
      for (int i = 0; i < 1000; ++i) {
        traces::Event e;
        e.stream = t;
        tracer.record(e);
      }
    });
  }
  for (std::thread& t : threads)
    t.join();
  EXPECT_EQ(tracer.size(), 4000u);
  tracer.clear();
  EXPECT_EQ(tracer.size(), 0u);
}

TEST(TracerTest, StartSetsTimeZeroAndClearKeepsIt) {
  Tracer tracer(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GE(tracer.now_us(), 20000);  // from construction
  tracer.start();
  const double after_start = tracer.now_us();
  EXPECT_LT(after_start, 20000);
  tracer.clear();
  EXPECT_GE(tracer.now_us(), after_start);  // the origin stays
}

TEST(TracerTest, TheThreadCpuClockCountsWorkNotWaiting) {
  const double before_sleep = Tracer::thread_cpu_us();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_LT(Tracer::thread_cpu_us() - before_sleep, 20000);  // 100 ms asleep: next to no CPU
  // Spin until the clock has counted 20 ms of work (bounded by 20 s of wall time on a loaded machine).
  const double before_work = Tracer::thread_cpu_us();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  volatile double sink = 0;
  while (Tracer::thread_cpu_us() - before_work < 20000 && std::chrono::steady_clock::now() < give_up)
    sink = sink + 1;
  EXPECT_GE(Tracer::thread_cpu_us() - before_work, 20000);
}

}  // namespace
}  // namespace clustertwin::real
