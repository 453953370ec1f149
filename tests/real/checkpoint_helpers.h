#pragma once

// What the checkpoint tests of the real executors share (issue 49): fresh
// folders, a launch of N ranks, byte-for-byte comparison of --dump-state
// folders, a rank 0 of N without a launcher (for refusals, which come before
// any rendezvous), and the environment of the kill hooks.

#include <string>
#include <vector>

#include "tests/cli/run_command.h"

namespace clustertwin::testing {

/// TempDir()/NAME, removed if it was there.
std::string fresh_dir(const std::string& name);

/// `clustertwin launch --nproc N LAUNCH_FLAGS -- ARGS`.
CommandResult launch_ranks(int nproc, const std::vector<std::string>& launch_flags,
                           const std::vector<std::string>& args);

/// Each rank's DIR/rank-R.bin equals REFERENCE's, byte for byte.
void expect_identical_dumps(const std::string& dir, const std::string& reference, int ranks);

/// DIR/step-NNNNNN/manifest.json exists.
bool checkpoint_complete(const std::string& dir, int step);

/// `clustertwin ARGS` as rank 0 of `world` without a launcher: a refusal
/// returns at once, a missed one waits for the other ranks until the
/// timeout, which is set to 5 s when ARGS has --timeout.
CommandResult as_rank0_of(int world, const std::vector<std::string>& args);

/// How often `part` occurs in `text`.
size_t occurrences(const std::string& text, const std::string& part);

/// Sets an environment variable for its lifetime.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

}  // namespace clustertwin::testing
