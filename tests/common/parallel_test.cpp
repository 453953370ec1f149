// parallel_for visits every index once, on up to the threads asked.

#include "common/parallel.h"

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <thread>

namespace clustertwin {
namespace {

TEST(ParallelForTest, EveryIndexOnceOnAtMostTheThreadsAsked) {
  for (int threads : {1, 3, 8}) {
    std::vector<int> visits(100, 0);
    std::set<std::thread::id> seen;
    std::mutex m;
    parallel_for(visits.size(), threads, [&](size_t i) {
      ++visits[i];
      std::lock_guard<std::mutex> lock(m);
      seen.insert(std::this_thread::get_id());
    });
    for (size_t i = 0; i < visits.size(); ++i)
      EXPECT_EQ(visits[i], 1) << "index " << i << " with " << threads << " threads";
    EXPECT_LE(static_cast<int>(seen.size()), threads);
    if (threads == 1) {
      EXPECT_EQ(seen, std::set<std::thread::id>{std::this_thread::get_id()});  // no thread started
    }
  }
}

TEST(ParallelForTest, NothingToDoAndMoreThreadsThanWork) {
  int calls = 0;
  parallel_for(0, 4, [&](size_t) { ++calls; });
  EXPECT_EQ(calls, 0);
  std::vector<int> visits(2, 0);
  parallel_for(2, 16, [&](size_t i) { ++visits[i]; });
  EXPECT_EQ(visits, (std::vector<int>{1, 1}));
  parallel_for(3, 0, [&](size_t i) { ++calls; });  // fewer than one thread: the caller alone
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace clustertwin
