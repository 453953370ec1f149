// Point-to-point and group args of c10d in a Kineto import: a send's or
// recv's peer as a global rank, from "Dst Rank" / "Src Rank" or from "Rank"
// mapped through its group, and a collective's group layout.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/file_io.h"
#include "traces/kineto_import.h"
#include "traces/trace_reader.h"

namespace clustertwin::traces {
namespace {

// Rank 5 of a world of 8 (distributedInfo); the kernels carry no args, so each takes its operator's.
// Launch i (correlation 10 + i) sits inside operator i.
Trace import_ops(const std::vector<std::string>& op_args) {
  std::string events = R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 9, "tid": 9,
                           "ts": 0, "dur": 1000})";
  for (size_t i = 0; i < op_args.size(); ++i) {
    const std::string t = std::to_string(100 * i + 10), c = std::to_string(10 + i);
    events += R"(, {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 9, "tid": 9, "ts": )" + t +
              R"(, "dur": 10, "args": {"In msg nelems": 256, "dtype": "Float", )" + op_args[i] + "}}";
    events += R"(, {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": )" + t +
              R"(, "dur": 2, "args": {"correlation": )" + c + "}}";
    events += R"x(, {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv()", "pid": 0, "tid": 24, "ts": )x" +
              std::to_string(100 * i + 50) + R"(, "dur": 5, "args": {"correlation": )" + c + "}}";
  }
  const std::string dir = ::testing::TempDir();
  const std::string in = dir + "kineto_peer_in.json", out = dir + "kineto_peer_out.json";
  EXPECT_TRUE(
      write_file_atomically(in, R"({"distributedInfo": {"rank": 5, "world_size": 8}, "traceEvents": [)" + events + "]}")
          .is_ok());
  const Status s = import_kineto({in}, out, {}, nullptr);
  EXPECT_TRUE(s.is_ok()) << s.message();
  auto t = read_trace(out);
  EXPECT_TRUE(t.is_ok()) << t.status().message();
  Trace kernels;
  for (const Event& e : t.is_ok() ? t->events : std::vector<Event>{})
    if (e.category == Category::kComm) kernels.events.push_back(e);
  return kernels;
}

TEST(KinetoPeerImportTest, APeerIsAGlobalRank) {
  const Trace t = import_ops({
      // Newer PyTorch: the global rank itself.
      R"("Collective name": "send", "Group size": 2, "Rank": 1, "Dst Rank": 7, "Process Group Ranks": "[5, 7]")",
      R"("Collective name": "recv", "Group size": 2, "Rank": 0, "Src Rank": 3)",
      // "Rank" is a rank of the group: through its list, or its start and stride (ranks 1, 3, 5, 7).
      R"("Collective name": "send", "Group size": 2, "Rank": 0, "Process Group Ranks": "[4, 5]")",
      R"("Collective name": "recv", "Group size": 4, "Rank": 3, "Global rank start": 1, "Global rank stride": 2)",
      // The world's group: its ranks are the global ranks.
      R"("Collective name": "send", "Group size": 8, "Rank": 6)",
      // A group of 4 that does not say its ranks, and a truncated list: no peer.
      R"("Collective name": "recv", "Group size": 4, "Rank": 2)",
      R"("Collective name": "recv", "Group size": 4, "Rank": 2, "Process Group Ranks": "[0, 2, ...]")",
  });
  ASSERT_EQ(t.events.size(), 7u);
  const std::vector<std::string> ops{"send", "recv", "send", "recv", "send", "recv", "recv"};
  const std::vector<std::optional<int64_t>> peers{7, 3, 4, 7, 6, std::nullopt, std::nullopt};
  for (size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(t.events[i].collective, ops[i]) << i;
    EXPECT_EQ(t.events[i].peer, peers[i]) << i;
    EXPECT_EQ(t.events[i].bytes, 256 * 4) << i;              // In msg nelems x Float
    EXPECT_FALSE(t.events[i].group_start.has_value()) << i;  // a send or recv has a peer, not a group
  }
}

TEST(KinetoPeerImportTest, ACollectiveKeepsItsGroupWhereEvenlySpaced) {
  const Trace t = import_ops({
      R"("Collective name": "allreduce", "Group size": 2, "Process Group Ranks": "[4, 5]")",
      R"("Collective name": "allreduce", "Group size": 4, "Global rank start": 1, "Global rank stride": 2)",
      R"("Collective name": "allreduce", "Group size": 3, "Process Group Ranks": "[0, 1, 5]")",
      R"("Collective name": "allreduce", "Group size": 2, "Global rank start": 4, "Global rank stride": -1)",
  });
  ASSERT_EQ(t.events.size(), 4u);
  EXPECT_EQ(t.events[0].group_start, 4);
  EXPECT_EQ(t.events[0].group_stride, 1);
  EXPECT_EQ(t.events[1].group_start, 1);
  EXPECT_EQ(t.events[1].group_stride, 2);
  EXPECT_FALSE(t.events[2].group_start.has_value());  // not evenly spaced
  EXPECT_FALSE(t.events[3].group_start.has_value());  // c10d's stride -1: not strided
}

}  // namespace
}  // namespace clustertwin::traces
