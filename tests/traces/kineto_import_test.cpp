// Imports the hand-written two-rank Kineto fixture (traces/data/examples, whose
// README tabulates every event's time) and checks the mapping event by event,
// then one test per class of bad input, asserting the message text.

#include "traces/kineto_import.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/file_io.h"
#include "traces/kineto_names.h"
#include "traces/trace_reader.h"
#include "traces/validator.h"

namespace clustertwin::traces {
namespace {

// The shipped example (traces/data/examples) doubles as the test fixture.
const std::string kDir = std::string(CT_SOURCE_DIR) + "/traces/data/examples/kineto_";
const std::string kRank0 = kDir + "two_rank_rank0.json";
const std::string kRank1 = kDir + "two_rank_rank1.json";

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "kineto_import_test_" + name;
}

// Writes `text` to a temporary file and returns its path.
std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  EXPECT_TRUE(write_file_atomically(path, text).is_ok()) << path;
  return path;
}

// Imports `inputs` and reads the result back; fails the test on any error.
Trace import_and_read(const std::vector<std::string>& inputs, const std::string& out_name,
                      const KinetoImportOptions& options = {}, KinetoImportStats* stats = nullptr) {
  const std::string out = temp_path(out_name);
  const Status s = import_kineto(inputs, out, options, stats);
  EXPECT_TRUE(s.is_ok()) << s.message();
  ValidationStats validation;
  const Status valid = validate_trace(out, &validation);
  EXPECT_TRUE(valid.is_ok()) << valid.message();
  auto trace = read_trace(out);
  EXPECT_TRUE(trace.is_ok()) << trace.status().message();
  return trace.is_ok() ? *trace : Trace();
}

// The message of a failed import, checked to be one line.
std::string import_error(const std::vector<std::string>& inputs, const KinetoImportOptions& options = {}) {
  const Status s = import_kineto(inputs, temp_path("error_out.json"), options, nullptr);
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << "not one line: " << s.message();
  return s.message();
}

// Fixture events in output order: rank 0's imported events in file order, then rank 1's.
enum Out {
  kR0Step,
  kR0Mm,
  kR0Gemm,
  kR0Add,
  kR0ParamComms,
  kR0AllReduce,
  kR0Elementwise,
  kR0Memcpy,
  kR0Gemm2,
  kR1Step,
  kR1Mm,
  kR1Gemm,
  kR1ParamComms,
  kR1AllReduce,
  kR1Elementwise,
  kR1Memcpy,
  kR1Memset,
  kOutCount
};

TEST(KinetoImportTest, TwoRanks) {
  KinetoImportStats stats;
  const Trace t = import_and_read({kRank0, kRank1}, "two_rank.json", {}, &stats);
  // Rank 0 has 17 trace events: 4 "M", 10 "X", flows "s" and "f", one "i".
  // Of its 10 "X", cudaLaunchKernel is dropped by default: 9 written.
  // Rank 1 has 13: 2 "M", 9 "X", one "f", one "i"; 9 - cudaLaunchKernel = 8.
  ASSERT_EQ(t.events.size(), 17u);  // 9 + 8
  static_assert(kOutCount == 17);
  EXPECT_EQ(stats.events_read, 30);     // 17 + 13
  EXPECT_EQ(stats.events_written, 17);  // 9 + 8
  EXPECT_EQ(stats.dropped, 7);          // rank 0: launch, s, f, i; rank 1: launch, f, i
  EXPECT_EQ(stats.collectives, 2);      // one all-reduce kernel per rank; record_param_comms is host
  EXPECT_EQ(stats.world_size, 2);

  const Metadata& m = t.metadata;
  EXPECT_EQ(m.source, Source::kImported);
  EXPECT_EQ(m.system, "imported");
  EXPECT_EQ(m.world_size, 2);
  EXPECT_EQ(m.hardware, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(m.config_json, "{\"inputs\":[\"" + kRank0 + "\",\"" + kRank1 + "\"],\"keep_runtime_calls\":false}");
  // GPU streams sorted by (device, stream), then CPU threads by (pid, tid).
  // Both ranks name stream 7 "stream 7 " (trimmed), so they share it; stream
  // 20 has no thread_name on either rank; rank 1's CPU thread has none either.
  const std::vector<std::string> streams = {"stream 7", "gpu0 stream 20", "gpu1 stream 20", "thread 1000 (python3)",
                                            "cpu thread 2000"};
  EXPECT_EQ(m.streams, streams);

  // Rank 0's ProfilerStep#5 is the earliest event of both files: time 0.
  const Event& step = t.events[kR0Step];
  EXPECT_EQ(step.name, "ProfilerStep#5");
  EXPECT_EQ(step.ts_us, 0);
  EXPECT_EQ(step.dur_us, 100);
  EXPECT_EQ(step.category, Category::kHost);
  EXPECT_EQ(step.stream, 3);

  const Event& gemm = t.events[kR0Gemm];
  EXPECT_EQ(gemm.name, "ampere_sgemm_128x64_tn");
  EXPECT_EQ(gemm.category, Category::kCompute);
  EXPECT_EQ(gemm.stream, 0);
  // ts 1700000000010.123 - 1700000000000.000; a plain double subtraction would be off by ~1e-4.
  EXPECT_DOUBLE_EQ(gemm.ts_us, 10.123);
  EXPECT_EQ(gemm.cost_key, "ampere_sgemm_128x64_tn");
  EXPECT_EQ(t.events[kR0Gemm2].cost_key, gemm.cost_key);

  const Event& ar = t.events[kR0AllReduce];
  EXPECT_EQ(ar.category, Category::kComm);
  EXPECT_EQ(ar.collective, "allreduce");
  EXPECT_EQ(ar.bytes, 4194304);  // In msg nelems 1048576 x 4 B (Float)
  EXPECT_EQ(ar.group_size, 2);
  EXPECT_EQ(ar.stream, 1);  // gpu0 stream 20
  EXPECT_EQ(ar.ts_us, 30);
  EXPECT_EQ(ar.dur_us, 50);
  EXPECT_EQ(ar.cost_key, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  // It overlaps the GEMM [10.123, 40.123] by 40.123 - 30 us.
  EXPECT_LT(ar.ts_us, gemm.end_us());
  EXPECT_GT(ar.end_us(), gemm.end_us());

  // The CPU launch of the collective stays host and keeps the collective's args.
  const Event& launch = t.events[kR0ParamComms];
  EXPECT_EQ(launch.name, "record_param_comms");
  EXPECT_EQ(launch.category, Category::kHost);
  EXPECT_EQ(launch.collective, "allreduce");
  EXPECT_EQ(launch.bytes, 4194304);
  EXPECT_EQ(launch.stream, 3);

  const Event& elementwise = t.events[kR0Elementwise];
  EXPECT_EQ(elementwise.category, Category::kCompute);
  EXPECT_EQ(elementwise.cost_key,
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
            "at::detail::Array<char*, 3> >");

  const Event& memcpy = t.events[kR0Memcpy];
  EXPECT_EQ(memcpy.category, Category::kCopy);
  EXPECT_EQ(memcpy.bytes, 4194304);  // args.bytes
  EXPECT_EQ(memcpy.cost_key, "Memcpy DtoD");
  EXPECT_EQ(t.events[kR1Memset].category, Category::kCopy);
  EXPECT_EQ(t.events[kR0Mm].category, Category::kHost);
  EXPECT_EQ(t.events[kR0Add].category, Category::kHost);

  // Rank 1: its base is 1,000 us later and its ts 1,000 us smaller, so its
  // times line up with rank 0's (README: all-reduce at 31 us for 49 us).
  for (int i = kR1Step; i < kOutCount; ++i)
    EXPECT_EQ(t.events[i].rank, 1) << i;
  for (int i = kR0Step; i < kR1Step; ++i)
    EXPECT_EQ(t.events[i].rank, 0) << i;
  EXPECT_EQ(t.events[kR1Step].ts_us, 1);
  EXPECT_EQ(t.events[kR1Step].stream, 4);  // cpu thread 2000
  const Event& ar1 = t.events[kR1AllReduce];
  EXPECT_EQ(ar1.category, Category::kComm);
  EXPECT_EQ(ar1.ts_us, 31);
  EXPECT_EQ(ar1.dur_us, 49);
  EXPECT_EQ(ar1.stream, 2);                // gpu1 stream 20
  EXPECT_EQ(t.events[kR1Gemm].stream, 0);  // "stream 7", shared with rank 0
  EXPECT_EQ(t.events[kR1ParamComms].rank, 1);

  for (const Event& e : t.events)
    EXPECT_NE(e.name, "cudaLaunchKernel");
}

// torch.profiler(with_flops=True) puts "flops" on the operators it counts; the import keeps it.
TEST(KinetoImportTest, FlopsOfOperatorsAreKept) {
  const Trace t = import_and_read({kDir + "ddp_rank0.json", kDir + "ddp_rank1.json"}, "ddp.json");
  int with_flops = 0;
  for (const Event& e : t.events) {
    if (e.name == "aten::mm") {
      ASSERT_TRUE(e.flops.has_value());
      EXPECT_EQ(*e.flops, 2.0 * 4096 * 4096 * 8192);
      ++with_flops;
    } else {
      EXPECT_FALSE(e.flops.has_value()) << e.name;
    }
  }
  EXPECT_EQ(with_flops, 12);  // two per step, three steps, two ranks
  const std::string bad = write_temp(
      "bad_flops.json",
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 1,)"
      R"( "args": {"flops": "many"}}]})");
  EXPECT_EQ(import_error({bad}), bad + ": event 0: field 'args.flops': expected a number >= 0, got a string ('many')");
}

TEST(KinetoImportTest, KeepRuntimeCalls) {
  KinetoImportOptions options;
  options.keep_runtime_calls = true;
  KinetoImportStats stats;
  const Trace t = import_and_read({kRank0, kRank1}, "keep_runtime.json", options, &stats);
  ASSERT_EQ(t.events.size(), 19u);                  // 17 + one cudaLaunchKernel per rank
  EXPECT_EQ(stats.dropped, 5);                      // 7 - 2
  EXPECT_EQ(t.events[2].name, "cudaLaunchKernel");  // rank 0's third X event in file order
  EXPECT_EQ(t.events[2].category, Category::kHost);
  EXPECT_EQ(t.events[2].ts_us, 5);
  EXPECT_EQ(t.events[2].stream, 3);
}

TEST(KinetoImportTest, GzipInputGivesTheSameTrace) {
  const Trace plain = import_and_read({kRank0, kRank1}, "plain.json");
  const Trace gz = import_and_read({kDir + "two_rank_rank0.json.gz", kRank1}, "gz.json");
  EXPECT_EQ(gz.events, plain.events);
  EXPECT_EQ(gz.metadata.streams, plain.metadata.streams);
  EXPECT_EQ(gz.metadata.world_size, plain.metadata.world_size);
}

TEST(KinetoImportTest, GzipOutput) {
  const Trace plain = import_and_read({kRank0}, "rank0_only.json");
  const Trace gz = import_and_read({kRank0}, "rank0_only.json.gz");
  EXPECT_EQ(gz.events, plain.events);
}

TEST(KinetoImportTest, SingleInputTakesRankFromOption) {
  KinetoImportOptions options;
  options.rank = 3;
  KinetoImportStats stats;
  const Trace t = import_and_read({kRank1}, "rank_option.json", options, &stats);
  ASSERT_EQ(t.events.size(), 8u);  // rank 1's imported events
  for (const Event& e : t.events)
    EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(t.metadata.world_size, 4);  // max(distributedInfo.world_size 2, rank 3 + 1)
  EXPECT_EQ(stats.world_size, 4);
  // Alone, rank 1's ProfilerStep#5 is the earliest event.
  EXPECT_EQ(t.events[0].ts_us, 0);
}

TEST(KinetoImportTest, RankFromPositionWithoutDistributedInfo) {
  const std::string a = write_temp(
      "pos_a.json",
      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 1}]})");
  const std::string b = write_temp(
      "pos_b.json",
      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 12, "dur": 1}]})");
  const Trace t = import_and_read({a, b}, "pos_out.json");
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].rank, 0);
  EXPECT_EQ(t.events[1].rank, 1);
  EXPECT_EQ(t.events[1].ts_us, 2);  // 12 - 10
  EXPECT_EQ(t.metadata.streams, std::vector<std::string>{"gpu0 stream 7"});
}

TEST(KinetoImportTest, StringIdsOfOlderKinetoAndProfilerSpans) {
  // Older Kineto writes "tid": "stream 7"; its own span uses "pid": "Spans",
  // which names no device or thread and is dropped.
  const std::string in = write_temp("string_ids.json", R"json({"traceEvents": [
    {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 0, "dur": 99},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": "stream 7", "ts": 5, "dur": 1},
    {"ph": "X", "cat": "some_future_cat", "name": "h", "pid": 9, "tid": 9, "ts": 6, "dur": 1}]})json");
  KinetoImportStats stats;
  const Trace t = import_and_read({in}, "string_ids_out.json", {}, &stats);
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(stats.dropped, 1);
  EXPECT_EQ(t.events[0].ts_us, 0);                   // the span does not set the origin
  EXPECT_EQ(t.events[1].category, Category::kHost);  // unknown categories are host time
  EXPECT_EQ(t.metadata.streams, (std::vector<std::string>{"gpu0 stream 7", "cpu thread 9"}));
}

// Older PyTorch names neither the collective nor its size on an NCCL kernel (and NCCL runs all-to-all as
// SendRecv kernels): the kernel's launch, linked by its correlation id, and the c10d operator around that
// launch on its thread say both. The launch's time becomes the kernel's host_ts_us.
TEST(KinetoImportTest, AKernelGetsItsLaunchAndTheCollectiveAroundIt) {
  const std::string in = write_temp("launch_link.json", R"json({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 9, "tid": 9, "ts": 100, "dur": 50},
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 9, "tid": 9, "ts": 110, "dur": 20,
     "args": {"Input Dims": [[8, 1024], [], []], "Input type": ["float", "Scalar", ""]}},
    {"ph": "X", "cat": "cpu_op", "name": "nccl:all_to_all", "pid": 9, "tid": 9, "ts": 111, "dur": 10,
     "args": {"Input Dims": [[8, 1024]], "Input type": ["float"]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 112, "dur": 3,
     "args": {"correlation": 77, "External id": 5}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 140, "dur": 2,
     "args": {"correlation": 78}},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)", "pid": 0,
     "tid": 7, "ts": 160, "dur": 30, "args": {"correlation": 77, "External id": 77}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 195, "dur": 4,
     "args": {"correlation": 78}},
    {"ph": "X", "cat": "kernel", "name": "unlinked", "pid": 0, "tid": 7, "ts": 200, "dur": 1,
     "args": {"correlation": 79}}]})json");
  KinetoImportStats stats;
  const Trace t = import_and_read({in}, "launch_link_out.json", {}, &stats);
  ASSERT_EQ(t.events.size(), 6u);  // the step, two operators, three kernels (the launches are dropped)
  const Event& a2a = t.events[3];
  EXPECT_EQ(a2a.category, Category::kComm);
  EXPECT_EQ(a2a.collective, "alltoall");  // the innermost operator with a size: nccl:all_to_all
  EXPECT_EQ(a2a.bytes, 8 * 1024 * 4);
  EXPECT_EQ(a2a.ts_us, 60);
  EXPECT_EQ(a2a.host_ts_us, 12);  // the launch, on the same time origin (the step at 100)
  EXPECT_EQ(a2a.host_dur_us, 3);
  EXPECT_EQ(stats.collectives, 1);
  const Event& gemm = t.events[4];
  EXPECT_EQ(gemm.category, Category::kCompute);
  EXPECT_EQ(gemm.host_ts_us, 40);  // launched outside any collective: its own kind stays
  EXPECT_EQ(gemm.collective, "");
  EXPECT_FALSE(t.events[5].host_ts_us.has_value());  // no launch with its correlation
}

// A parameter's gradient is complete when the kernel that computed it is: the last GPU work the autograd
// thread launched before the parameter's AccumulateGrad (which, with set_to_none, launches nothing).
TEST(KinetoImportTest, GradientsAreCreditedToTheKernelLaunchedBeforeAccumulateGrad) {
  const std::string in = write_temp("grads.json", R"json({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 5, "ts": 10, "dur": 1,
     "args": {"correlation": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "torch::autograd::AccumulateGrad", "pid": 9, "tid": 5, "ts": 12, "dur": 1,
     "args": {"Input Dims": [[256, 64]], "Input type": ["float"]}},
    {"ph": "X", "cat": "cpu_op", "name": "torch::autograd::AccumulateGrad", "pid": 9, "tid": 5, "ts": 13, "dur": 1,
     "args": {"Input Dims": [[64]], "Input type": ["c10::BFloat16"]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 5, "ts": 20, "dur": 1,
     "args": {"correlation": 2}},
    {"ph": "X", "cat": "cpu_op", "name": "torch::autograd::AccumulateGrad", "pid": 9, "tid": 6, "ts": 21, "dur": 1,
     "args": {"Input Dims": [[8]], "Input type": ["float"]}},
    {"ph": "X", "cat": "kernel", "name": "dgrad", "pid": 0, "tid": 7, "ts": 30, "dur": 4, "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "wgrad", "pid": 0, "tid": 7, "ts": 35, "dur": 4, "args": {"correlation": 2}}
    ]})json");
  const Trace t = import_and_read({in}, "grads_out.json");
  ASSERT_EQ(t.events.size(), 5u);
  EXPECT_EQ(t.events[3].name, "dgrad");
  EXPECT_EQ(t.events[3].grad_bytes, 256 * 64 * 4 + 64 * 2);  // both AccumulateGrads follow its launch
  EXPECT_EQ(t.events[4].name, "wgrad");
  EXPECT_FALSE(t.events[4].grad_bytes.has_value());  // the third runs on another thread, which launched nothing
}

TEST(KinetoImportTest, ThreadNamesThatCollideFallBackToIds) {
  // Two threads of one rank both named "python3" would merge into one stream;
  // the second in (pid, tid) order takes its generated name instead.
  const std::string in = write_temp("collide.json", R"({"traceEvents": [
    {"ph": "M", "name": "thread_name", "pid": 5, "tid": 5, "args": {"name": "python3"}},
    {"ph": "M", "name": "thread_name", "pid": 5, "tid": 6, "args": {"name": "python3"}},
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 5, "tid": 6, "ts": 0, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 5, "tid": 5, "ts": 0, "dur": 1}]})");
  const Trace t = import_and_read({in}, "collide_out.json");
  EXPECT_EQ(t.metadata.streams, (std::vector<std::string>{"python3", "cpu thread 6"}));
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].stream, 1);  // "a" ran on tid 6
  EXPECT_EQ(t.events[1].stream, 0);
}

TEST(KinetoImportTest, NegativeDuration) {
  const std::string in = write_temp("negative_dur.json", R"({"traceEvents": [
    {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7"}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": -2.5}]})");
  EXPECT_EQ(import_error({in}), in + ": event 1: field 'dur': -2.5 is negative (must be >= 0)");
}

TEST(KinetoImportTest, BadFieldsOfImportedEvents) {
  const std::string missing = write_temp("missing_ts.json", R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "dur": 1}]})");
  EXPECT_EQ(import_error({missing}), missing + ": event 0: missing field 'ts'");
  const std::string nelems = write_temp("bad_nelems.json", R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "nccl", "pid": 0, "tid": 7, "ts": 0, "dur": 1, "args": {"In msg nelems": "many"}}]})");
  EXPECT_EQ(import_error({nelems}),
            nelems + ": event 0: field 'args.In msg nelems': expected an integer, got a string ('many')");
  // A malformed event we do not import (a counter) is dropped, not reported.
  const std::string counter = write_temp("bad_counter.json", R"({"traceEvents": [
    {"ph": "C", "name": "mem", "pid": 0, "tid": 0, "ts": "soon", "args": {"In msg nelems": "many"}}]})");
  EXPECT_TRUE(import_kineto({counter}, temp_path("bad_counter_out.json"), {}, nullptr).is_ok());
}

TEST(KinetoImportTest, NotJson) {
  const std::string in = write_temp("not_json.json", "this is not JSON\n");
  EXPECT_EQ(import_error({in}), in + ": not JSON: unexpected 't' at byte 0");
  const std::string no_events = write_temp("no_events.json", R"({"schemaVersion": 1})");
  EXPECT_EQ(import_error({no_events}), no_events + ": top level: missing field 'traceEvents'");
}

TEST(KinetoImportTest, AnExecutionTraceSaysWhatItIs) {
  const std::string in = write_temp("et.json", R"json({"schema": "1.0.1", "pid": 7, "nodes": [
    {"name": "aten::empty", "id": 5, "inputs": [], "outputs": []}], "finish_ts": 9})json");
  EXPECT_EQ(import_error({in}),
            in + ": top level: a PyTorch execution trace (top-level 'schema' and 'nodes', from "
                 "ExecutionTraceObserver), not a Kineto trace: it has no kernel times; import the profiler (Kineto) "
                 "trace of the same steps (torch.profiler's on_trace_ready or export_chrome_trace)");
}

TEST(KinetoImportTest, MissingFile) {
  const std::string in = temp_path("does_not_exist.json");
  const Status s = import_kineto({in}, temp_path("missing_out.json"), {}, nullptr);
  EXPECT_EQ(s.code(), Status::Code::kNotFound);
  EXPECT_EQ(s.message(), in + ": no such file");
}

TEST(KinetoImportTest, RankOptionWithTwoInputs) {
  KinetoImportOptions options;
  options.rank = 0;
  EXPECT_EQ(import_error({kRank0, kRank1}, options),
            "option 'rank': 0 names the rank of a single input, but 2 inputs were given (" + kRank0 + ", " + kRank1 +
                "); their ranks come from distributedInfo");
}

TEST(KinetoImportTest, TwoInputsWithTheSameRank) {
  EXPECT_EQ(import_error({kRank0, kDir + "two_rank_rank0.json.gz"}),
            kDir + "two_rank_rank0.json.gz: rank 0 is also claimed by " + kRank0 +
                " (a rank comes from --rank, else distributedInfo.rank, else the input's position); give one file "
                "per rank");
}

TEST(KinetoImportTest, NoInputs) {
  EXPECT_EQ(import_error({}), "import-kineto: no input files");
}

TEST(KinetoNamesTest, Collectives) {
  const struct {
    const char* in;
    const char* out;
  } cases[] = {
      {"allreduce", "allreduce"},
      {"all_reduce", "allreduce"},
      {"allreduce_coalesced", "allreduce"},
      {"all_to_all", "alltoall"},
      {"alltoall_base", "alltoall"},
      {"all_to_allv", "alltoall"},
      {"allgather", "allgather"},
      {"_allgather_base", "allgather"},
      {"all_gather_into_tensor", "allgather"},
      {"reduce_scatter", "reducescatter"},
      {"_reduce_scatter_base", "reducescatter"},
      {"broadcast", "broadcast"},
      {"send", "send"},
      {"recv", "recv"},
      {"reduce", "reduce"},
      {"barrier", "barrier"},
      {"gather", "gather"},
  };
  for (const auto& c : cases)
    EXPECT_EQ(kineto::normalise_collective(c.in), c.out) << c.in;
}

TEST(KinetoNamesTest, CollectiveFromKernelName) {
  EXPECT_EQ(kineto::collective_from_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, "
                                           "ncclWork*)"),
            "allreduce");
  EXPECT_EQ(kineto::collective_from_kernel("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)"), "allgather");
  EXPECT_EQ(kineto::collective_from_kernel("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"), "reducescatter");
  EXPECT_EQ(kineto::collective_from_kernel("ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)"),
            "sendrecv");
  EXPECT_EQ(kineto::collective_from_kernel("ncclDevKernel"), "");
}

TEST(KinetoNamesTest, DtypeSizes) {
  EXPECT_EQ(kineto::dtype_bytes("Float"), 4);
  EXPECT_EQ(kineto::dtype_bytes("BFloat16"), 2);
  EXPECT_EQ(kineto::dtype_bytes("Half"), 2);
  EXPECT_EQ(kineto::dtype_bytes("Double"), 8);
  EXPECT_EQ(kineto::dtype_bytes("Long"), 8);
  EXPECT_EQ(kineto::dtype_bytes("Byte"), 1);
  EXPECT_EQ(kineto::dtype_bytes("Bool"), 1);
  EXPECT_FALSE(kineto::dtype_bytes("NoSuchType").has_value());
}

TEST(KinetoNamesTest, OperatorInputTypesAndCollectives) {
  EXPECT_EQ(kineto::cpp_type_bytes("float"), 4);
  EXPECT_EQ(kineto::cpp_type_bytes("c10::BFloat16"), 2);
  EXPECT_EQ(kineto::cpp_type_bytes("unsigned char"), 1);
  EXPECT_EQ(kineto::cpp_type_bytes("long int"), 8);
  EXPECT_EQ(kineto::cpp_type_bytes("Float"), 4);  // a ScalarType name, as some versions write it
  EXPECT_EQ(kineto::cpp_type_bytes("TensorList"), std::nullopt);
  EXPECT_EQ(kineto::collective_of_operator("nccl:all_to_all"), "alltoall");
  EXPECT_EQ(kineto::collective_of_operator("nccl:_all_gather_base"), "allgather");
  EXPECT_EQ(kineto::collective_of_operator("gloo:broadcast"), "broadcast");
  EXPECT_EQ(kineto::collective_of_operator("record_param_comms"), "");
  EXPECT_EQ(kineto::collective_of_operator("aten::mm"), "");
}

TEST(KinetoNamesTest, CostKeyDropsArguments) {
  EXPECT_EQ(kineto::cost_key_for("k(int, float*)"), "k");
  EXPECT_EQ(kineto::cost_key_for("Memcpy HtoD (Pageable -> Device)"), "Memcpy HtoD");
  EXPECT_EQ(kineto::cost_key_for("aten::mm"), "aten::mm");
}

}  // namespace
}  // namespace clustertwin::traces
