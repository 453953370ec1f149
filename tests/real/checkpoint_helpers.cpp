// What the checkpoint tests share (checkpoint_helpers.h).

#include "tests/real/checkpoint_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "common/file_io.h"
#include "common/state_dump.h"

namespace clustertwin::testing {

namespace fs = std::filesystem;

std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + name;
  fs::remove_all(dir);
  return dir;
}

CommandResult launch_ranks(int nproc, const std::vector<std::string>& launch_flags,
                           const std::vector<std::string>& args) {
  std::vector<std::string> all = {"launch", "--nproc", std::to_string(nproc)};
  all.insert(all.end(), launch_flags.begin(), launch_flags.end());
  all.push_back("--");
  all.insert(all.end(), args.begin(), args.end());
  return run_clustertwin(all);
}

void expect_identical_dumps(const std::string& dir, const std::string& reference, int ranks) {
  for (int r = 0; r < ranks; ++r) {
    const auto a = read_file(state_dump_path(dir, r));
    const auto b = read_file(state_dump_path(reference, r));
    ASSERT_TRUE(a.is_ok() && b.is_ok()) << dir << " rank " << r;
    EXPECT_TRUE(*a == *b) << dir << " rank " << r << " differs from " << reference;
  }
}

bool checkpoint_complete(const std::string& dir, int step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step-%06d", step);
  return fs::is_regular_file(fs::path(dir) / name / "manifest.json");
}

CommandResult as_rank0_of(int world, const std::vector<std::string>& args) {
  const std::string n = std::to_string(world);
  ::setenv("RANK", "0", 1);
  ::setenv("WORLD_SIZE", n.c_str(), 1);
  ::setenv("LOCAL_RANK", "0", 1);
  ::setenv("LOCAL_WORLD_SIZE", n.c_str(), 1);
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  ::setenv("MASTER_PORT", "29999", 1);
  std::vector<std::string> all = args;
  const auto timeout = std::find(all.begin(), all.end(), "--timeout");
  if (timeout != all.end() && timeout + 1 != all.end()) *(timeout + 1) = "5";
  CommandResult r = run_clustertwin(all);
  for (const char* v : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"})
    ::unsetenv(v);
  return r;
}

size_t occurrences(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++n;
  return n;
}

ScopedEnv::ScopedEnv(const char* name, const std::string& value) : name_(name) {
  ::setenv(name, value.c_str(), 1);
}

ScopedEnv::~ScopedEnv() {
  ::unsetenv(name_);
}

}  // namespace clustertwin::testing
