#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace clustertwin {

/// Calls body(i) for every i in [0, n), on up to `threads` threads (the
/// calling one included), each taking the next index as it finishes one;
/// returns when all are done. Bodies write to their own slots of shared
/// results; anything else they share is theirs to guard.
template <typename Body>
void parallel_for(size_t n, int threads, Body&& body) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++)
      body(i);
  };
  const int count =
      static_cast<int>(std::min<size_t>(static_cast<size_t>(std::max(1, threads)), std::max<size_t>(n, 1)));
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(count - 1));
  for (int t = 1; t < count; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread& t : pool)
    t.join();
}

}  // namespace clustertwin
