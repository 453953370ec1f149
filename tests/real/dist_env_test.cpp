// read_dist_env: where a rank sits, from torchrun's, Slurm's or no variables;
// every bad value named with its variable.

#include "real/core/dist_env.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

namespace clustertwin::real {
namespace {

using Env = std::map<std::string, std::string>;

StatusOr<DistEnv> read(const Env& env) {
  return read_dist_env([&env](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

struct GoodCase {
  const char* name;
  Env env;
  DistEnv expected;
};
void PrintTo(const GoodCase& c, std::ostream* os) {
  *os << c.name;
}

class DistEnvGoodTest : public ::testing::TestWithParam<GoodCase> {};

TEST_P(DistEnvGoodTest, ReadsEveryField) {
  const StatusOr<DistEnv> got = read(GetParam().env);
  ASSERT_TRUE(got.is_ok()) << got.status().message();
  const DistEnv& want = GetParam().expected;
  EXPECT_EQ(got->rank, want.rank);
  EXPECT_EQ(got->world_size, want.world_size);
  EXPECT_EQ(got->local_rank, want.local_rank);
  EXPECT_EQ(got->local_world_size, want.local_world_size);
  EXPECT_EQ(got->master_addr, want.master_addr);
  EXPECT_EQ(got->master_port, want.master_port);
  EXPECT_EQ(got->source, want.source);
}

INSTANTIATE_TEST_SUITE_P(
    Launchers, DistEnvGoodTest,
    ::testing::Values(
        GoodCase{"nothing_is_a_single_process", {}, {0, 1, 0, 1, "127.0.0.1", 29500, "single"}},
        GoodCase{"single_keeps_master", {{"MASTER_PORT", "1234"}}, {0, 1, 0, 1, "127.0.0.1", 1234, "single"}},
        GoodCase{"torchrun",
                 {{"RANK", "5"},
                  {"WORLD_SIZE", "8"},
                  {"LOCAL_RANK", "1"},
                  {"LOCAL_WORLD_SIZE", "4"},
                  {"MASTER_ADDR", "node0"},
                  {"MASTER_PORT", "29400"}},
                 {5, 8, 1, 4, "node0", 29400, "torchrun"}},
        // By hand on one node: local = global, and the usual rendezvous defaults.
        GoodCase{
            "torchrun_by_hand", {{"RANK", "1"}, {"WORLD_SIZE", "2"}}, {1, 2, 1, 2, "127.0.0.1", 29500, "torchrun"}},
        // RANK wins over Slurm's variables: torchrun started under srun.
        GoodCase{"torchrun_under_slurm",
                 {{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"SLURM_PROCID", "7"}, {"SLURM_NTASKS", "8"}},
                 {0, 1, 0, 1, "127.0.0.1", 29500, "torchrun"}},
        GoodCase{"slurm",
                 {{"SLURM_PROCID", "6"},
                  {"SLURM_NTASKS", "8"},
                  {"SLURM_LOCALID", "2"},
                  {"SLURM_NTASKS_PER_NODE", "4"},
                  {"MASTER_ADDR", "gpu01"}},
                 {6, 8, 2, 4, "gpu01", 29500, "slurm"}},
        // "4(x2)": 4 tasks on each of 2 nodes; "4,4": node by node. The first number either way.
        GoodCase{"slurm_repeated_count",
                 {{"SLURM_PROCID", "0"},
                  {"SLURM_NTASKS", "8"},
                  {"SLURM_LOCALID", "0"},
                  {"SLURM_NTASKS_PER_NODE", "4(x2)"},
                  {"MASTER_ADDR", "gpu01"},
                  {"MASTER_PORT", "6000"}},
                 {0, 8, 0, 4, "gpu01", 6000, "slurm"}},
        GoodCase{"slurm_list_count",
                 {{"SLURM_PROCID", "5"},
                  {"SLURM_NTASKS", "8"},
                  {"SLURM_LOCALID", "1"},
                  {"SLURM_NTASKS_PER_NODE", "4,4"},
                  {"MASTER_ADDR", "10.0.0.1"}},
                 {5, 8, 1, 4, "10.0.0.1", 29500, "slurm"}}),
    [](const ::testing::TestParamInfo<GoodCase>& info) { return std::string(info.param.name); });

struct BadCase {
  const char* name;
  Env env;
  const char* message;
};
void PrintTo(const BadCase& c, std::ostream* os) {
  *os << c.name;
}

class DistEnvBadTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(DistEnvBadTest, NamesTheVariableAndValue) {
  const StatusOr<DistEnv> got = read(GetParam().env);
  ASSERT_FALSE(got.is_ok());
  EXPECT_EQ(got.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(got.status().message(), GetParam().message);
}

const Env kSlurm = {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "0"}};

Env with(Env env, const Env& more) {
  for (const auto& [key, value] : more)
    env[key] = value;
  return env;
}

INSTANTIATE_TEST_SUITE_P(
    Values, DistEnvBadTest,
    ::testing::Values(
        BadCase{"rank_not_below_world", {{"RANK", "5"}, {"WORLD_SIZE", "4"}}, "RANK=5: not below WORLD_SIZE=4"},
        BadCase{"rank_not_a_number", {{"RANK", "one"}, {"WORLD_SIZE", "4"}}, "RANK=one: not a non-negative integer"},
        BadCase{"rank_negative", {{"RANK", "-1"}, {"WORLD_SIZE", "4"}}, "RANK=-1: not a non-negative integer"},
        BadCase{"rank_trailing_text", {{"RANK", "1x"}, {"WORLD_SIZE", "4"}}, "RANK=1x: not a non-negative integer"},
        BadCase{"rank_too_large", {{"RANK", "99999999999"}, {"WORLD_SIZE", "4"}}, "RANK=99999999999: too large"},
        BadCase{"world_zero", {{"RANK", "0"}, {"WORLD_SIZE", "0"}}, "WORLD_SIZE=0: must be at least 1"},
        BadCase{"world_missing", {{"RANK", "3"}}, "RANK=3 is set but WORLD_SIZE is not"},
        BadCase{"local_world_missing",
                {{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}},
                "LOCAL_RANK=0 is set but LOCAL_WORLD_SIZE is not"},
        BadCase{"local_rank_missing",
                {{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "2"}},
                "LOCAL_WORLD_SIZE=2 is set but LOCAL_RANK is not"},
        BadCase{"local_rank_not_below",
                {{"RANK", "0"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "4"}, {"LOCAL_WORLD_SIZE", "4"}},
                "LOCAL_RANK=4: not below LOCAL_WORLD_SIZE=4"},
        BadCase{"local_world_above_world",
                {{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "8"}},
                "LOCAL_WORLD_SIZE=8: above WORLD_SIZE=4"},
        BadCase{"port_text",
                {{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_PORT", "abc"}},
                "MASTER_PORT=abc: not a port number (1..65535)"},
        BadCase{"port_zero", {{"MASTER_PORT", "0"}}, "MASTER_PORT=0: not a port number (1..65535)"},
        BadCase{"port_too_high", {{"MASTER_PORT", "65536"}}, "MASTER_PORT=65536: not a port number (1..65535)"},
        BadCase{"addr_empty", {{"MASTER_ADDR", ""}}, "MASTER_ADDR is empty (give a host name or an IP address)"},
        BadCase{"stray_world_size",
                {{"WORLD_SIZE", "4"}},
                "WORLD_SIZE=4 is set but RANK is not (set both, or neither for a single process)"},
        BadCase{"slurm_without_master_addr", with(kSlurm, {{"SLURM_NTASKS_PER_NODE", "4"}}),
                "MASTER_ADDR is not set: under Slurm (SLURM_PROCID=0) it must name the first host of "
                "SLURM_JOB_NODELIST, which clustertwin does not parse; set it, e.g. export "
                "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)"},
        BadCase{"slurm_procid_not_below",
                {{"SLURM_PROCID", "8"},
                 {"SLURM_NTASKS", "8"},
                 {"SLURM_LOCALID", "0"},
                 {"SLURM_NTASKS_PER_NODE", "4"},
                 {"MASTER_ADDR", "gpu01"}},
                "SLURM_PROCID=8: not below SLURM_NTASKS=8"},
        BadCase{"slurm_localid_missing",
                {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"}},
                "SLURM_PROCID=0 is set but SLURM_LOCALID is not"},
        BadCase{"slurm_tasks_per_node_missing", kSlurm, "SLURM_PROCID=0 is set but SLURM_NTASKS_PER_NODE is not"},
        BadCase{"slurm_tasks_per_node_garbage",
                with(kSlurm, {{"SLURM_NTASKS_PER_NODE", "x4"}, {"MASTER_ADDR", "gpu01"}}),
                "SLURM_NTASKS_PER_NODE=x4: not a task count (like 4, 4(x2) or 4,4)"},
        BadCase{"slurm_tasks_per_node_zero",
                with(kSlurm, {{"SLURM_NTASKS_PER_NODE", "0(x2)"}, {"MASTER_ADDR", "gpu01"}}),
                "SLURM_NTASKS_PER_NODE=0(x2): not a task count (like 4, 4(x2) or 4,4)"},
        BadCase{"slurm_localid_not_below",
                with(kSlurm, {{"SLURM_LOCALID", "4"}, {"SLURM_NTASKS_PER_NODE", "4(x2)"}, {"MASTER_ADDR", "gpu01"}}),
                "SLURM_LOCALID=4: not below SLURM_NTASKS_PER_NODE=4(x2)"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

TEST(DistEnvTest, ReadsTheProcessEnvironmentByDefault) {
  // Whatever this test runs under, the default reads what std::getenv sees.
  const StatusOr<DistEnv> by_default = read_dist_env();
  const StatusOr<DistEnv> explicit_getenv = read_dist_env([](const char* name) { return std::getenv(name); });
  ASSERT_EQ(by_default.is_ok(), explicit_getenv.is_ok());
  if (by_default.is_ok()) {
    EXPECT_EQ(by_default->rank, explicit_getenv->rank);
    EXPECT_EQ(by_default->source, explicit_getenv->source);
  } else {
    EXPECT_EQ(by_default.status().message(), explicit_getenv.status().message());
  }
}

}  // namespace
}  // namespace clustertwin::real
