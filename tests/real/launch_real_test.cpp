// The real executor as a user starts it: `clustertwin launch --nproc N -- run ...`.

#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/file_io.h"
#include "tests/cli/run_command.h"
#include "traces/validator.h"

namespace clustertwin {
namespace {

using testing::run_clustertwin;

TEST(LaunchRealTest, CollectivesAreCorrectAndTraced) {
  const std::string trace = ::testing::TempDir() + "ct_launch_collectives.json";
  const auto r = run_clustertwin({"launch", "--nproc", "4", "--", "run", "collectives", "--sizes", "1K:1M", "--iters",
                                  "2", "--warmup", "1", "--json", "--trace", trace});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Rank 0 prints one JSON line; every row must have 0 wrong elements.
  const size_t json = r.out.find("[rank 0] {");
  ASSERT_NE(json, std::string::npos) << r.out;
  size_t pos = 0, rows = 0;
  while ((pos = r.out.find("\"wrong\":", pos)) != std::string::npos) {
    EXPECT_EQ(r.out.compare(pos, 9, "\"wrong\":0"), 0) << r.out.substr(pos, 20);
    ++rows;
    ++pos;
  }
  EXPECT_EQ(rows, 5u * 11);  // 5 operations x 11 sizes (1K..1M)
  traces::ValidationStats stats;
  ASSERT_TRUE(traces::validate_trace(trace, &stats).is_ok());
  EXPECT_EQ(stats.events, 4 * 5 * 11 * 2);  // 4 ranks x 55 (op, size) x 2 timed iterations
  EXPECT_EQ(stats.metadata.world_size, 4);
}

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  DIR* proc = opendir("/proc");
  while (dirent* d = readdir(proc)) {
    const pid_t pid = std::atoi(d->d_name);
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state;
    pid_t ppid;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back(pid);
  }
  closedir(proc);
  return out;
}

std::string rank_of(pid_t pid) {
  std::ifstream env("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(env)), std::istreambuf_iterator<char>());
  for (size_t start = 0; start < all.size();) {
    const size_t end = all.find('\0', start);
    const std::string var = all.substr(start, end - start);
    if (var.rfind("RANK=", 0) == 0) return var.substr(5);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

TEST(LaunchRealTest, KillingOneRankStopsTheRunAndNamesIt) {
  const std::string err_path = ::testing::TempDir() + "ct_launch_kill.err";
  const pid_t launcher = fork();
  if (launcher == 0) {
    freopen(err_path.c_str(), "w", stderr);
    freopen("/dev/null", "w", stdout);
    execl(CT_CLI_PATH, CT_CLI_PATH, "launch", "--nproc", "4", "--", "run", "collectives", "--ops", "allreduce",
          "--sizes", "16M", "--iters", "100000", "--warmup", "0", "--timeout", "20", static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait for the four ranks to be running collectives, then kill rank 2.
  std::vector<pid_t> ranks;
  for (int i = 0; i < 100 && ranks.size() < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ranks = children_of(launcher);
  }
  ASSERT_EQ(ranks.size(), 4u);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  pid_t victim = -1;
  for (pid_t p : ranks) {
    if (rank_of(p) == "2") victim = p;
  }
  ASSERT_GT(victim, 0);
  const auto killed_at = std::chrono::steady_clock::now();
  kill(victim, SIGKILL);
  int status = 0;
  for (int i = 0; i < 600 && waitpid(launcher, &status, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  ASSERT_TRUE(WIFEXITED(status)) << "the launcher did not exit within 60 s";
  EXPECT_NE(WEXITSTATUS(status), 0);
  EXPECT_LT(seconds, 60.0);
  std::printf("launcher exited %.2f s after rank 2 was killed\n", seconds);
  const std::string err = *read_file(err_path);
  EXPECT_NE(err.find("clustertwin launch: rank 2 was killed by signal 9"), std::string::npos) << err;
  for (pid_t p : ranks)
    EXPECT_EQ(kill(p, 0), -1) << "rank process " << p << " is still alive";
}

}  // namespace
}  // namespace clustertwin
