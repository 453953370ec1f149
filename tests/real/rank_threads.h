#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "real/core/communicator.h"

namespace clustertwin::real::testing {

/// A free TCP port on the loopback (bind to port 0 and read it back).
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

/// Runs `body(comm)` for `n` ranks, each a thread of this process with its
/// own Communicator (Gloo over the loopback), and returns each rank's Status.
/// `stage_always`: every collective copies its tensors in and out as it does
/// between a GPU and Gloo (CommOptions::stage_always).
inline std::vector<Status> run_ranks(int n, const std::function<Status(Communicator&)>& body, double timeout_s = 20,
                                     bool stage_always = false) {
  const int port = free_port();
  std::vector<Status> results(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      DistEnv env;
      env.rank = r;
      env.world_size = n;
      env.local_rank = r;
      env.local_world_size = n;
      env.master_port = port;
      CommOptions options;
      options.backend = "gloo";
      options.stage_always = stage_always;
      options.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
      auto comm = Communicator::connect(env, options);
      results[r] = comm.is_ok() ? body(**comm) : comm.status();
    });
  }
  for (std::thread& t : threads)
    t.join();
  return results;
}

}  // namespace clustertwin::real::testing
