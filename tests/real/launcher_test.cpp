// `clustertwin launch` as a user runs it: children scripted with /bin/sh, the
// rank variables they see, the prefixed output, and the stop sequence, after
// which no child or grandchild may be left.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/cli/run_command.h"

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace clustertwin {
namespace {

using testing::CommandResult;
using testing::run_clustertwin;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

// The lines of `text` that rank `rank` wrote, without the prefix, in order.
std::vector<std::string> lines_of_rank(const std::string& text, int rank) {
  const std::string prefix = "[rank " + std::to_string(rank) + "] ";
  std::vector<std::string> out;
  for (const std::string& line : lines_of(text)) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line.substr(prefix.size()));
  }
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class LauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
#ifdef __linux__
    // Orphaned grandchildren come to this process, which reaps them below; where
    // PID 1 does not reap (some containers) a dead orphan would stay a zombie
    // and still answer kill(pid, 0).
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '_');  // parameterised: "IsForwarded.../term"
    dir_ = ::testing::TempDir() + "ct_launch_" + std::to_string(::getpid()) + "_" + name;
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fs::remove_all(dir_);
  }

  // clustertwin launch --nproc N FLAGS... --program /bin/sh -- -c SCRIPT
  CommandResult launch_sh(int nproc, const std::string& script, const std::vector<std::string>& flags = {}) {
    std::vector<std::string> args = {"launch", "--nproc", std::to_string(nproc)};
    args.insert(args.end(), flags.begin(), flags.end());
    for (const char* a : {"--program", "/bin/sh", "--", "-c"})
      args.push_back(a);
    args.push_back(script);
    return run_clustertwin(args);
  }

  // Shell text that writes the shell's pid to DIR/pid.RANK (renamed into
  // place, so that a file that exists holds its pid: a test may signal the
  // ranks as soon as it sees it).
  std::string record_pid() const {
    return "echo $$ > " + dir_ + "/pid.$RANK.tmp && mv " + dir_ + "/pid.$RANK.tmp " + dir_ + "/pid.$RANK; ";
  }

  // record_pid, then a grandchild `sleep 30` whose pid goes to DIR/gpid.RANK the same way.
  std::string record_pids() const {
    return record_pid() + "sleep 30 & echo $! > " + dir_ + "/gpid.$RANK.tmp && mv " + dir_ + "/gpid.$RANK.tmp " + dir_ +
           "/gpid.$RANK; ";
  }

  // Every pid written by record_pids.
  std::vector<pid_t> recorded_pids() const {
    std::vector<pid_t> pids;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      const std::string name = entry.path().filename().string();
      // A .tmp left by a shell killed before its rename holds no pid to check.
      const bool tmp = name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0;
      if (!tmp && (name.rfind("pid.", 0) == 0 || name.rfind("gpid.", 0) == 0)) {
        pids.push_back(static_cast<pid_t>(std::stol(slurp(entry.path().string()))));
      }
    }
    return pids;
  }

  // Waits (up to `seconds`) for DIR/NAME to exist.
  bool wait_for_file(const std::string& name, double seconds = 2.0) const {
    const auto start = Clock::now();
    while (!fs::exists(dir_ + "/" + name)) {
      if (seconds_since(start) > seconds) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }

  // Expects every recorded process to be gone (reaping the orphans adopted here).
  void expect_all_gone(size_t expected_count) const {
    const std::vector<pid_t> pids = recorded_pids();
    EXPECT_EQ(pids.size(), expected_count);
    for (const pid_t pid : pids) {
      const auto start = Clock::now();
      bool gone = false;
      while (!gone && seconds_since(start) < 1.0) {
        ::waitpid(pid, nullptr, WNOHANG);
        gone = ::kill(pid, 0) == -1 && errno == ESRCH;
        if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      EXPECT_TRUE(gone) << "pid " << pid << " survived the launcher";
      if (!gone) ::kill(pid, SIGKILL);
    }
  }

  std::string dir_;
};

TEST_F(LauncherTest, EveryRankGetsItsVariablesAndTheLaunchersEnvironment) {
  // A RANK of the launcher's own must not leak into the children.
  ::setenv("RANK", "99", 1);
  ::setenv("CT_LAUNCH_TEST_INHERITED", "inherited", 1);
  const CommandResult r = launch_sh(3,
                                    "echo \"$RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $MASTER_ADDR $MASTER_PORT "
                                    "$CT_LAUNCH_TEST_INHERITED\"",
                                    {"--master-addr", "10.1.2.3", "--master-port", "29555"});
  ::unsetenv("RANK");
  ::unsetenv("CT_LAUNCH_TEST_INHERITED");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  std::vector<std::string> lines = lines_of(r.out);
  std::sort(lines.begin(), lines.end());  // ranks run concurrently: any order
  EXPECT_EQ(lines, (std::vector<std::string>{"[rank 0] 0 3 0 3 10.1.2.3 29555 inherited",
                                             "[rank 1] 1 3 1 3 10.1.2.3 29555 inherited",
                                             "[rank 2] 2 3 2 3 10.1.2.3 29555 inherited"}));
}

TEST_F(LauncherTest, DefaultsToLoopbackAndOneFreePortForAll) {
  const CommandResult r = launch_sh(2, "echo $MASTER_ADDR $MASTER_PORT");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> rank0 = lines_of_rank(r.out, 0), rank1 = lines_of_rank(r.out, 1);
  ASSERT_EQ(rank0.size(), 1u) << r.out;
  EXPECT_EQ(rank0, rank1);
  EXPECT_EQ(rank0[0].rfind("127.0.0.1 ", 0), 0u) << rank0[0];
  const int port = std::stoi(rank0[0].substr(10));
  EXPECT_GE(port, 1);
  EXPECT_LE(port, 65535);
}

TEST_F(LauncherTest, DefaultProgramIsThisBinary) {
  const CommandResult r = run_clustertwin({"launch", "--nproc", "2", "--", "--version"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int rank : {0, 1}) {
    const std::vector<std::string> lines = lines_of_rank(r.out, rank);
    ASSERT_EQ(lines.size(), 1u) << r.out;
    EXPECT_EQ(lines[0].rfind("clustertwin ", 0), 0u) << lines[0];
  }
}

TEST_F(LauncherTest, PrefixesEveryLineAndKeepsEachStreamInOrder) {
  // A line written in two pieces, 1,000 lines on each stream, and a last line without newline.
  const CommandResult r = launch_sh(2,
                                    "printf par; sleep 0.1; printf 'tial\\n'; i=0; while [ $i -lt 1000 ]; do "
                                    "echo \"out $i\"; echo \"err $i\" >&2; i=$((i+1)); done; printf 'no newline'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> want_out = {"partial"}, want_err;
  for (int i = 0; i < 1000; ++i) {
    want_out.push_back("out " + std::to_string(i));
    want_err.push_back("err " + std::to_string(i));
  }
  want_out.push_back("no newline");
  for (int rank : {0, 1}) {
    EXPECT_EQ(lines_of_rank(r.out, rank), want_out) << "rank " << rank;
    EXPECT_EQ(lines_of_rank(r.err, rank), want_err) << "rank " << rank;
  }
  // Nothing but whole prefixed lines: 2 ranks x 1,002 lines on stdout, 2 x 1,000 on stderr.
  EXPECT_EQ(lines_of(r.out).size(), 2004u);
  EXPECT_EQ(lines_of(r.err).size(), 2000u);
  EXPECT_EQ(r.out.back(), '\n');
}

TEST_F(LauncherTest, FailingRankStopsTheOthersAndGivesItsStatus) {
  // Rank 2 waits until the others run their grandchildren, then fails.
  const std::string script = record_pids() + "if [ $RANK = 2 ]; then until [ -e " + dir_ + "/gpid.0 ] && [ -e " + dir_ +
                             "/gpid.1 ] && [ -e " + dir_ +
                             "/gpid.3 ]; do sleep 0.01; done; echo 'rank two fails' >&2; exit 3; fi; wait";
  const auto start = Clock::now();
  const CommandResult r = launch_sh(4, script);
  const double elapsed = seconds_since(start);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  // Its own last words first, then the launcher's one line; the sleeping ranks say nothing.
  EXPECT_EQ(r.err, "[rank 2] rank two fails\nclustertwin launch: rank 2 exited with status 3\n");
  // The sleepers die on SIGTERM at once: far below the default grace of 5 s.
  EXPECT_LT(elapsed, 2.5);
  expect_all_gone(8);  // 4 shells and 4 grandchildren
}

// clustertwin launch --nproc 2 --max-restarts R --program /bin/sh -- -c SCRIPT sh --checkpoint-dir d
CommandResult launch_restarting(int restarts, const std::string& script) {
  return run_clustertwin({"launch", "--nproc", "2", "--max-restarts", std::to_string(restarts), "--program", "/bin/sh",
                          "--", "-c", script, "sh", "--checkpoint-dir", "d"});
}

TEST_F(LauncherTest, ARestartRelaunchesEveryRankWithResume) {
  // Rank 1 of the first attempt says what it got, then dies by SIGKILL.
  const std::string script =
      "echo \"attempt $CT_LAUNCH_ATTEMPT args $*\"; "
      "if [ $CT_LAUNCH_ATTEMPT = 0 ] && [ $RANK = 1 ]; then kill -9 $$; fi; "
      "if [ $CT_LAUNCH_ATTEMPT = 0 ]; then sleep 30; fi";
  const CommandResult r = launch_restarting(2, script);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // One line for the restart, with its cause; no other launcher line.
  EXPECT_EQ(r.err,
            "clustertwin launch: restart 1 of 2: rank 1 was killed by signal 9 (Killed); relaunching 2 ranks with "
            "--resume\n");
  const std::vector<std::string> rank1 = lines_of_rank(r.out, 1);
  ASSERT_EQ(rank1.size(), 2u) << r.out;
  EXPECT_EQ(rank1[0], "attempt 0 args --checkpoint-dir d");
  EXPECT_EQ(rank1[1], "attempt 1 args --checkpoint-dir d --resume");
  const std::vector<std::string> rank0 = lines_of_rank(r.out, 0);
  ASSERT_FALSE(rank0.empty()) << r.out;
  EXPECT_EQ(rank0.back(), "attempt 1 args --checkpoint-dir d --resume");
}

TEST_F(LauncherTest, GivesUpAfterMaxRestartsWithTheLastCause) {
  const CommandResult r = launch_restarting(2, "if [ $RANK = 1 ]; then exit 3; fi; sleep 30");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.err,
            "clustertwin launch: restart 1 of 2: rank 1 exited with status 3; relaunching 2 ranks with --resume\n"
            "clustertwin launch: restart 2 of 2: rank 1 exited with status 3; relaunching 2 ranks with --resume\n"
            "clustertwin launch: giving up after 2 restarts; the last: rank 1 exited with status 3\n");
}

TEST_F(LauncherTest, RankThatIgnoresSigtermIsKilledAfterTheGrace) {
  const std::string script = "if [ $RANK = 0 ]; then trap '' TERM; echo $$ > " + dir_ +
                             "/pid.0; exec sleep 30; fi; until [ -e " + dir_ + "/pid.0 ]; do sleep 0.01; done; exit 1";
  const auto start = Clock::now();
  const CommandResult r = launch_sh(2, script, {"--grace", "0.5"});
  const double elapsed = seconds_since(start);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "clustertwin launch: rank 1 exited with status 1\n");
  EXPECT_GE(elapsed, 0.5);  // SIGTERM was ignored: SIGKILL only after the grace
  EXPECT_LT(elapsed, 2.5);
  expect_all_gone(1);
}

TEST_F(LauncherTest, RankKilledBySignalIsNamed) {
  const CommandResult r = launch_sh(2, record_pids() + "if [ $RANK = 1 ]; then until [ -e " + dir_ +
                                           "/gpid.0 ]; do sleep 0.01; done; kill -9 $$; fi; wait");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "clustertwin launch: rank 1 was killed by signal 9 (Killed)\n");
  expect_all_gone(4);
}

// Starts the launcher without waiting for it; its output goes to files in the test's folder.
pid_t start_clustertwin(const std::vector<std::string>& args, const std::string& out, const std::string& err) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    // A test run from a background job would otherwise pass on an ignored SIGINT, which the launcher keeps.
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::dup2(::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600), 1);
    ::dup2(::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600), 2);
    std::vector<std::string> argv = {CT_CLI_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> pointers;
    for (std::string& a : argv)
      pointers.push_back(a.data());
    pointers.push_back(nullptr);
    ::execv(pointers[0], pointers.data());
    std::_Exit(127);
  }
  return pid;
}

struct SignalCase {
  int signo;
  const char* line;
};
void PrintTo(const SignalCase& c, std::ostream* os) {
  *os << "signal " << c.signo;
}

class LauncherSignalTest : public LauncherTest, public ::testing::WithParamInterface<SignalCase> {};

TEST_P(LauncherSignalTest, IsForwardedAndNoChildSurvives) {
  // `exec sleep`: a background job of a non-interactive shell ignores SIGINT,
  // so SIGINT is tested on the ranks themselves, SIGTERM on whole trees.
  const bool trees = GetParam().signo == SIGTERM;
  const std::string script = trees ? record_pids() + "wait" : record_pid() + "exec sleep 30";
  const pid_t launcher = start_clustertwin({"launch", "--nproc", "2", "--program", "/bin/sh", "--", "-c", script},
                                           dir_ + "/launcher.out", dir_ + "/launcher.err");
  ASSERT_GT(launcher, 0);
  ASSERT_TRUE(wait_for_file(trees ? "gpid.1" : "pid.1") && wait_for_file(trees ? "gpid.0" : "pid.0"));
  const auto start = Clock::now();
  ::kill(launcher, GetParam().signo);
  int status = 0;
  ASSERT_EQ(::waitpid(launcher, &status, 0), launcher);
  EXPECT_LT(seconds_since(start), 2.0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + GetParam().signo);
  EXPECT_EQ(slurp(dir_ + "/launcher.err"), GetParam().line);
  expect_all_gone(trees ? 4 : 2);
}

INSTANTIATE_TEST_SUITE_P(
    Signals, LauncherSignalTest,
    ::testing::Values(SignalCase{SIGTERM, "clustertwin launch: got signal 15 (Terminated); stopping all ranks\n"},
                      SignalCase{SIGINT, "clustertwin launch: got signal 2 (Interrupt); stopping all ranks\n"}),
    [](const ::testing::TestParamInfo<SignalCase>& info) { return info.param.signo == SIGTERM ? "term" : "int"; });

TEST_F(LauncherTest, ProgramThatCannotBeExecutedIsBadInput) {
  const std::string path = dir_ + "/no_shebang";
  std::ofstream(path) << "echo hello\n";
  fs::permissions(path, fs::perms::owner_all);
  const CommandResult r = run_clustertwin({"launch", "--nproc", "2", "--program", path});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "clustertwin: --program " + path + ": cannot execute: Exec format error\n");
}

struct BadFlagCase {
  std::vector<std::string> args;  // after "launch"
  std::string line;               // the whole of stderr
};
void PrintTo(const BadFlagCase& c, std::ostream* os) {
  for (size_t i = 0; i < c.args.size(); ++i)
    *os << (i > 0 ? " " : "") << c.args[i];
}

class LaunchBadFlagTest : public ::testing::TestWithParam<BadFlagCase> {};

TEST_P(LaunchBadFlagTest, ExitsTwoWithOneLine) {
  std::vector<std::string> args = {"launch"};
  args.insert(args.end(), GetParam().args.begin(), GetParam().args.end());
  const CommandResult r = run_clustertwin(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, GetParam().line);
  EXPECT_EQ(r.out, "");
}

const std::string kNotExecutable = std::string(CT_SOURCE_DIR) + "/CMakeLists.txt";

INSTANTIATE_TEST_SUITE_P(
    Flags, LaunchBadFlagTest,
    ::testing::Values(
        BadFlagCase{{"--nproc", "0", "--", "x"}, "clustertwin: --nproc 0: must be in 1..1024\n"},
        BadFlagCase{{"--nproc", "1025", "--", "x"}, "clustertwin: --nproc 1025: must be in 1..1024\n"},
        BadFlagCase{{"--nproc", "2", "--master-port", "0", "--", "x"},
                    "clustertwin: --master-port 0: not a port number (1..65535)\n"},
        BadFlagCase{{"--nproc", "2", "--master-port", "70000", "--", "x"},
                    "clustertwin: --master-port 70000: not a port number (1..65535)\n"},
        BadFlagCase{{"--nproc", "2", "--grace", "-1", "--", "x"},
                    "clustertwin: --grace -1: must be in 0..86400 seconds\n"},
        BadFlagCase{{"--nproc", "2"},
                    "clustertwin: launch: nothing to run: give the command after '--' (e.g. 'clustertwin launch "
                    "--nproc 2 -- run nestpipe') or --program\n"},
        BadFlagCase{{"--nproc", "2", "--program", "/no/such/program"},
                    "clustertwin: --program /no/such/program: no such file\n"},
        BadFlagCase{{"--nproc", "2", "--program", "ct-no-such-program"},
                    "clustertwin: --program ct-no-such-program: not found in PATH\n"},
        BadFlagCase{{"--nproc", "2", "--program", kNotExecutable},
                    "clustertwin: --program " + kNotExecutable + ": not executable\n"},
        BadFlagCase{{"--nproc", "2", "--program", "/"}, "clustertwin: --program /: not a regular file\n"},
        BadFlagCase{{"--nproc", "2", "--max-restarts", "-1", "--", "x", "--checkpoint-dir", "d"},
                    "clustertwin: --max-restarts -1: must be in 0..1000\n"},
        BadFlagCase{{"--nproc", "2", "--max-restarts", "2", "--", "run", "nestpipe"},
                    "clustertwin: --max-restarts 2: the command has no --checkpoint-dir, so a restart could not "
                    "resume (add --checkpoint-dir DIR --checkpoint-every N)\n"}));

TEST(LaunchCliTest, UnparsableFlagsExitTwoWithOneLine) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"launch", "--nproc", "two", "--", "x"}, {"launch", "--", "x"}, {"launch", "--nproc", "2", "--bogus"}}) {
    const CommandResult r = run_clustertwin(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("clustertwin: ", 0), 0u) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
  }
}

TEST(LaunchCliTest, HelpExplainsVariablesPrefixAndFailures) {
  const CommandResult r = run_clustertwin({"launch", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* text : {"RANK, LOCAL_RANK", "WORLD_SIZE, LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                           "\"[rank R] line\"", "SIGKILL after --grace", "128 + the"}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << text << " not in:\n" << r.out;
  }
}

}  // namespace
}  // namespace clustertwin
