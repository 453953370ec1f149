// What NestPipe's pipelines overlap in a real run's recorded trace (issue
// 48): DBP's prefetch of the next batch's rows (lookup_gather) does not wait
// for the current batch's dense work, and FWP's embedding All2Alls run while
// another micro-batch's dense work runs. TorchRec is the
// negative control: its plan orders every lookup and every All2All against
// the dense tasks (the lookup of batch b waits for batch b-1's update, which
// waits for its dense backward; the dense forward waits for the lookup),
// so no interval of its trace may overlap a dense one.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/cli/run_command.h"
#include "traces/trace_reader.h"

namespace clustertwin::real::nestpipe {
namespace {

using testing::CommandResult;
using testing::run_clustertwin;

struct Interval {
  int64_t rank = 0, step = 0;
  double begin_us = 0, end_us = 0;
};

// The intervals of tasks whose cost key is in `keys`, from a recorded trace.
std::vector<Interval> intervals(const std::string& trace, const std::set<std::string>& keys) {
  std::vector<Interval> out;
  auto reader = traces::TraceReader::open(trace);
  EXPECT_TRUE(reader.is_ok()) << reader.status().message();
  if (!reader.is_ok()) return out;
  traces::Event e;
  while ((*reader)->next(&e)) {
    if (keys.count(e.cost_key) && e.step) out.push_back({e.rank, *e.step, e.ts_us, e.ts_us + e.dur_us});
  }
  EXPECT_TRUE((*reader)->status().is_ok()) << (*reader)->status().message();
  return out;
}

// Microseconds of `a` that run during `b` on the same rank, in the same runner step (`same_step`) or any.
double overlap_us(const Interval& a, const Interval& b) {
  if (a.rank != b.rank) return 0;
  return std::max(0.0, std::min(a.end_us, b.end_us) - std::max(a.begin_us, b.begin_us));
}

// Runner steps (rank, step) in which some task of `a` overlaps some task of `b` by more than a microsecond.
int overlapping_steps(const std::vector<Interval>& a, const std::vector<Interval>& b, bool same_step) {
  std::set<std::pair<int64_t, int64_t>> steps;
  for (const Interval& x : a) {
    for (const Interval& y : b) {
      if ((!same_step || x.step == y.step) && overlap_us(x, y) > 1) steps.insert({x.rank, x.step});
    }
  }
  return static_cast<int>(steps.size());
}

// Runs `launch --nproc RANKS -- run nestpipe --variant VARIANT --steps 10 --seed 3 --trace TRACE ARGS`.
std::string recorded_trace(int ranks, const std::string& variant, const std::vector<std::string>& args) {
  const std::string trace = ::testing::TempDir() + "ct_overlap_" + variant + "_" + std::to_string(ranks) + "ranks.json";
  std::filesystem::remove(trace);
  std::vector<std::string> all = {"launch",    "--nproc", std::to_string(ranks),
                                  "--",        "run",     "nestpipe",
                                  "--variant", variant,   "--steps",
                                  "10",        "--seed",  "3",
                                  "--trace",   trace};
  all.insert(all.end(), args.begin(), args.end());
  const CommandResult r = run_clustertwin(all);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return trace;
}

const std::set<std::string> kDense = {"dense_fwd", "dense_bwd"};
const std::set<std::string> kPrefetch = {"lookup_gather", "lookup_copy"};
const std::set<std::string> kEmbeddingA2a = {"emb_a2a_fwd", "emb_a2a_bwd"};

// The batch a task of runner step `step` works on (real/nestpipe/trainer.h: batch = step - 2 + its offset).
int64_t batch_of(const Interval& i, int offset) {
  return i.step - 2 + offset;
}

// For each batch b: whether the lookup of batch b+1 (lookup_gather, batch offset `lookup_offset`) started before
// the dense work of batch b ended. Counts (started before, started after).
std::pair<int, int> next_lookup_against_dense(const std::string& trace, int lookup_offset) {
  const std::vector<Interval> dense = intervals(trace, kDense);
  const std::vector<Interval> lookups = intervals(trace, {"lookup_gather"});
  std::map<int64_t, double> dense_end;  // batch -> end of its last dense task
  for (const Interval& d : dense)
    dense_end[batch_of(d, 0)] = std::max(dense_end[batch_of(d, 0)], d.end_us);
  std::pair<int, int> counts{0, 0};
  for (const Interval& l : lookups) {
    const auto it = dense_end.find(batch_of(l, lookup_offset) - 1);
    if (it == dense_end.end()) continue;
    (l.begin_us < it->second ? counts.first : counts.second) += 1;
  }
  return counts;
}

TEST(NestPipeOverlapTest, DbpPrefetchesTheNextBatchWithoutWaitingForTheDenseWork) {
  // One rank: the All2Alls are local. DBP gathers batch b+1's rows (lookup_gather, offset +1) in the runner
  // step that runs batch b's dense work, waiting only for batch b+1's keys and batch b-1's update: it starts
  // before batch b's dense work ends, every time. How much of it overlaps on a CPU depends on the threads'
  // timing (the gather takes a fraction of a millisecond here), so the test pins the order that lets it.
  const std::string dbp = recorded_trace(1, "dbp", {"--batch", "256"});
  const auto [dbp_before, dbp_after] = next_lookup_against_dense(dbp, /*lookup_offset=*/1);
  EXPECT_GE(dbp_before, 7) << "dbp: too few prefetches seen";
  EXPECT_EQ(dbp_after, 0) << "dbp's prefetch of the next batch waited for the dense work";
  std::printf("dbp: %d steps with the prefetch overlapping the dense work by more than 1 us (of %d)\n",
              overlapping_steps(intervals(dbp, kPrefetch), intervals(dbp, kDense), /*same_step=*/true), dbp_before);

  // TorchRec's lookup of batch b+1 (offset 0) waits for batch b's update, which waits for its dense backward.
  const std::string torchrec = recorded_trace(1, "torchrec", {"--batch", "256"});
  const auto [torchrec_before, torchrec_after] = next_lookup_against_dense(torchrec, /*lookup_offset=*/0);
  EXPECT_EQ(torchrec_before, 0) << "torchrec's lookup ran before the previous batch's dense work ended";
  EXPECT_GE(torchrec_after, 7);
  EXPECT_EQ(overlapping_steps(intervals(torchrec, kPrefetch), intervals(torchrec, kDense), /*same_step=*/false), 0)
      << "torchrec's lookup ran during a dense task: its plan orders them";
}

TEST(NestPipeOverlapTest, FwpMovesEmbeddingsDuringAnotherMicroBatchsDenseWork) {
  // Two ranks, four micro-batches: micro-batch m+1's rows arrive while micro-batch m computes.
  const std::string fwp = recorded_trace(2, "fwp", {"--batch", "256", "--micro-batches", "4"});
  EXPECT_GE(overlapping_steps(intervals(fwp, kEmbeddingA2a), intervals(fwp, kDense), /*same_step=*/true), 1)
      << "fwp's All2Alls never ran during a dense task";

  const std::string torchrec = recorded_trace(2, "torchrec", {"--batch", "256", "--micro-batches", "4"});
  EXPECT_EQ(overlapping_steps(intervals(torchrec, kEmbeddingA2a), intervals(torchrec, kDense), /*same_step=*/false), 0)
      << "torchrec's All2All ran during a dense task: its plan orders them";
}

}  // namespace
}  // namespace clustertwin::real::nestpipe
