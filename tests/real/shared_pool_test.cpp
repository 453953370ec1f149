// SharedPool (FlowTrain's memory pool) across processes: three producer processes and
// two consumer processes (forked, the pool opened by name) move 400 samples
// of 64 KiB through 4 slots with random delays. Every payload a consumer
// reads is the one its producer wrote for that key (so no slot was read
// before it was complete, nor overwritten before it was consumed), and
// every key is consumed exactly once. Plus the one-process semantics and
// the refused inputs.

#include "real/core/shared_pool.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "common/hash.h"

namespace clustertwin::real {
namespace {

constexpr size_t kBytes = 64 * 1024;

std::string pool_name(const char* what) {
  return "/ct_pool_" + std::string(what) + "_" + std::to_string(getpid());
}

void fill(uint64_t key, std::vector<uint64_t>& buf) {
  for (size_t i = 0; i < buf.size(); ++i)
    buf[i] = mix64(key * 0x9e3779b97f4a7c15ull + i);
}

TEST(SharedPoolTest, ProducersAndConsumersInOtherProcessesNeverSeeAPartialOrStaleSlot) {
  const std::string name = pool_name("stress");
  auto pool = SharedPool::create(name, 4, kBytes);
  ASSERT_TRUE(pool.is_ok()) << pool.status().message();
  constexpr int kProducers = 3, kConsumers = 2, kSteps = 4, kSamples = 100;
  int pipes[kConsumers][2];
  std::vector<pid_t> children;
  for (int c = 0; c < kConsumers; ++c) {
    ASSERT_EQ(pipe(pipes[c]), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {  // consumer c: the samples with sample % kConsumers == c, whichever is ready
      close(pipes[c][0]);
      auto mine = SharedPool::open(name);
      if (!mine.is_ok()) _exit(10);
      std::vector<uint64_t> wanted;
      for (int s = 0; s < kSteps; ++s)
        for (int i = c; i < kSamples; i += kConsumers)
          wanted.push_back(pool_key(s, i));
      std::sort(wanted.begin(), wanted.end());
      std::mt19937_64 rng(100 + c);
      std::vector<uint64_t> got(kBytes / 8), expected(kBytes / 8);
      while (!wanted.empty()) {
        auto taken = (*mine)->take_any(wanted, got.data(), kBytes, 60);
        if (!taken.is_ok() || taken->bytes != kBytes) _exit(11);
        fill(taken->key, expected);
        if (std::memcmp(got.data(), expected.data(), kBytes) != 0) _exit(12);  // a partial or foreign payload
        wanted.erase(std::lower_bound(wanted.begin(), wanted.end(), taken->key));
        if (write(pipes[c][1], &taken->key, sizeof taken->key) != sizeof taken->key) _exit(13);
        if (rng() % 4 == 0) usleep(static_cast<useconds_t>(rng() % 300));
      }
      _exit(0);
    }
    close(pipes[c][1]);
    children.push_back(pid);
  }
  for (int p = 0; p < kProducers; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {  // producer p: the samples with sample % kProducers == p, step by step
      auto mine = SharedPool::open(name);
      if (!mine.is_ok()) _exit(20);
      std::mt19937_64 rng(200 + p);
      std::vector<uint64_t> buf(kBytes / 8);
      for (int s = 0; s < kSteps; ++s) {
        for (int i = p; i < kSamples; i += kProducers) {
          fill(pool_key(s, i), buf);
          if (!(*mine)->put(pool_key(s, i), buf.data(), kBytes, 60).is_ok()) _exit(21);
          if (rng() % 3 == 0) usleep(static_cast<useconds_t>(rng() % 300));
        }
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  std::map<uint64_t, int> consumed;
  for (int c = 0; c < kConsumers; ++c) {
    uint64_t key;
    while (read(pipes[c][0], &key, sizeof key) == sizeof key)
      ++consumed[key];
    close(pipes[c][0]);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child exit " << WEXITSTATUS(status);
  }
  EXPECT_EQ(consumed.size(), static_cast<size_t>(kSteps * kSamples));
  for (const auto& [key, n] : consumed)
    EXPECT_EQ(n, 1) << "key " << key;
  EXPECT_EQ((*pool)->ready(), 0);
}

TEST(SharedPoolTest, BackPressureAndRefusals) {
  auto pool = SharedPool::create(pool_name("small"), 2, 16);
  ASSERT_TRUE(pool.is_ok());
  const char data[16] = "fifteen bytes..";
  ASSERT_TRUE((*pool)->put(pool_key(0, 1), data, 16, 1).is_ok());
  ASSERT_TRUE((*pool)->put(pool_key(0, 2), data, 16, 1).is_ok());
  EXPECT_EQ((*pool)->ready(), 2);
  // Full: the third waits and gives up.
  const Status full = (*pool)->put(pool_key(0, 3), data, 16, 0.05);
  EXPECT_NE(full.message().find("timed out: every slot is full"), std::string::npos) << full.message();
  EXPECT_EQ((*pool)->put(pool_key(0, 1), data, 8, 1).message(),
            "memory pool '" + pool_name("small") + "': key 1 is already in the pool");
  EXPECT_EQ((*pool)->put(pool_key(0, 4), data, 17, 1).message(),
            "memory pool '" + pool_name("small") + "': 17 bytes for a slot of 16");
  char out[16];
  // Nothing is read before it is there.
  EXPECT_NE((*pool)->take(pool_key(1, 1), out, 16, 0.05).message().find("timed out: no producer put one"),
            std::string::npos);
  ASSERT_TRUE((*pool)->take(pool_key(0, 2), out, 16, 1).is_ok());
  EXPECT_EQ(std::string(out, 15), "fifteen bytes..");
  ASSERT_TRUE((*pool)->put(pool_key(0, 3), data, 16, 1).is_ok());  // the freed slot is reused
  EXPECT_EQ(SharedPool::create(pool_name("none"), 0, 16).status().message(),
            "memory pool '" + pool_name("none") + "': 0 slots of 16 bytes (need at least one slot of one byte)");
  EXPECT_EQ(SharedPool::open("/ct_pool_absent").status().code(), Status::Code::kNotFound);
}

// The slot-level forms (a GPU arena's copies go through them): the caller writes and reads slot i's data; a failed
// copy leaves the pool as it was, so a failed fill takes no slot and a failed drain loses no sample.
TEST(SharedPoolTest, SlotLevelCopiesThatFailLeaveThePoolAsItWas) {
  auto pool = SharedPool::create(pool_name("slots"), 1, 8);
  ASSERT_TRUE(pool.is_ok());
  const Status refused = (*pool)->put_slot(pool_key(0, 1), 8, 1, [](int) { return Status::internal("copy failed"); });
  EXPECT_EQ(refused.message(), "copy failed");
  EXPECT_EQ((*pool)->ready(), 0);
  int written = -1;
  ASSERT_TRUE((*pool)
                  ->put_slot(pool_key(0, 1), 8, 1,
                             [&](int slot) {
                               written = slot;
                               std::memcpy((*pool)->slot_data(slot), "seven b", 8);
                               return Status::ok();
                             })
                  .is_ok());
  EXPECT_EQ(written, 0) << "the one slot, free again after the failed fill";
  auto failed = (*pool)->take_slot({pool_key(0, 1)}, 1, [](int, uint64_t, size_t) { return Status::internal("no"); });
  EXPECT_EQ(failed.status().message(), "no");
  EXPECT_EQ((*pool)->ready(), 1) << "still there for the next reader";
  std::string got;
  auto taken = (*pool)->take_slot({pool_key(0, 1)}, 1, [&](int slot, uint64_t key, size_t bytes) {
    EXPECT_EQ(key, pool_key(0, 1));
    got.assign(static_cast<const char*>((*pool)->slot_data(slot)), bytes - 1);
    return Status::ok();
  });
  ASSERT_TRUE(taken.is_ok()) << taken.status().message();
  EXPECT_EQ(taken->bytes, 8u);
  EXPECT_EQ(got, "seven b");
  EXPECT_EQ((*pool)->ready(), 0);
}

}  // namespace
}  // namespace clustertwin::real
