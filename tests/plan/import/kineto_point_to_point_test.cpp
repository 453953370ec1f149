// Deriving a plan from a pipeline-parallel trace: the two-stage Kineto
// fixture (traces/data/examples/make_kineto_pipeline.py, whose docstring
// gives every event's time) imported and derived into per-rank tasks with
// send/recv pairs, a four-rank pipeline whose stages all-reduce among their
// replicas, and the traces whose pairs or groups do not hold refused with
// one line naming the rank, step and event.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "calibrators/replay.h"
#include "models/plan/import/kineto_plan.h"
#include "traces/kineto_import.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

namespace clustertwin::models {
namespace {

using calibrators::fit_keys;
using calibrators::KeyFit;
using calibrators::read_recorded_run;
using calibrators::task_samples;
using models::CollectiveOp;
using models::RankRange;
using traces::Category;
using traces::Event;

const std::string kExamples = std::string(CT_SOURCE_DIR) + "/traces/data/examples/";

traces::Trace imported_pipeline() {
  const std::string out = std::string(std::getenv("TEST_TMPDIR")) + "/pipeline.json";
  const Status s = traces::import_kineto(
      {kExamples + "kineto_pipeline_rank0.json", kExamples + "kineto_pipeline_rank1.json"}, out, {}, nullptr);
  EXPECT_TRUE(s.is_ok()) << s.message();
  auto t = traces::read_trace(out);
  EXPECT_TRUE(t.is_ok()) << t.status().message();
  return t.is_ok() ? *t : traces::Trace();
}

const models::Task& task_named(const models::Plan& p, const std::string& name) {
  const auto it = std::find_if(p.tasks.begin(), p.tasks.end(), [&](const models::Task& t) { return t.name == name; });
  EXPECT_NE(it, p.tasks.end()) << name;
  return it == p.tasks.end() ? p.tasks.front() : *it;
}

int id_of(const models::Plan& p, const std::string& name) {
  return task_named(p, name).id;
}

const std::string kFwd = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64";
const std::string kBwd = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x256x64_wgrad";
const std::string kP2p = "ncclDevKernel_SendRecv";

TEST(DerivePointToPointTest, TheImportGivesEachSendAndRecvItsPeerAndBytes) {
  const traces::Trace t = imported_pipeline();
  int sends = 0, recvs = 0;
  for (const Event& e : t.events) {
    if (e.category != Category::kComm) continue;
    ASSERT_TRUE(e.collective == "send" || e.collective == "recv") << e.collective;
    (e.collective == "send" ? sends : recvs) += 1;
    EXPECT_EQ(e.peer, 1 - e.rank);            // "Dst Rank" / "Src Rank" of the record_param_comms around the launch
    EXPECT_EQ(e.bytes, 4 * 1024 * 1024 * 2);  // In msg nelems x BFloat16
  }
  EXPECT_EQ(sends, 6);  // one per rank and step, 2 ranks x 3 steps
  EXPECT_EQ(recvs, 6);
}

TEST(DerivePointToPointTest, EachStageGetsItsTasksPairsAndDependencies) {
  auto d = derive_plan(imported_pipeline(), "pipeline.json");
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  const models::Plan& p = d->plan;
  // Rank 0's stream 7 (forward, backward, optimizer), stream 24 (send, recv) and host pieces, then rank 1's.
  ASSERT_EQ(p.tasks.size(), 14u);
  const std::vector<RankRange> r0{{0, 1}}, r1{{1, 2}};
  for (const models::Task& t : p.tasks)
    EXPECT_EQ(t.ranks, t.id < 7 ? r0 : r1) << t.name;
  const models::Task& send0 = task_named(p, "[rank 0] " + kP2p);
  const models::Task& recv0 = task_named(p, "[rank 0] " + kP2p + " #2");
  const models::Task& recv1 = task_named(p, "[rank 1] " + kP2p);
  const models::Task& send1 = task_named(p, "[rank 1] " + kP2p + " #2");
  // Each send meets the recv of its pair and order at its peer: rank 0 -> 1 and 1 -> 0, the first of each.
  for (const models::Task* t : {&send0, &recv0, &recv1, &send1}) {
    ASSERT_TRUE(t->collective.has_value()) << t->name;
    EXPECT_EQ(t->collective->tag, 0) << t->name;
    EXPECT_EQ(t->bytes, 8388608) << t->name;
    EXPECT_EQ(t->cost_key, kP2p);
  }
  EXPECT_EQ(send0.collective->op, CollectiveOp::kSend);
  EXPECT_EQ(send0.collective->peer_offset, 1);
  EXPECT_EQ(recv0.collective->op, CollectiveOp::kRecv);
  EXPECT_EQ(recv0.collective->peer_offset, 1);
  EXPECT_EQ(recv1.collective->op, CollectiveOp::kRecv);
  EXPECT_EQ(recv1.collective->peer_offset, -1);
  EXPECT_EQ(send1.collective->op, CollectiveOp::kSend);
  EXPECT_EQ(send1.collective->peer_offset, -1);
  // Dependencies from the idle gaps: the send after the forward that made the activations, the backward
  // after the recv of the gradients (rank 0); the forward after the recv of the activations, the send of
  // the gradients after the backward (rank 1); a step's first launch after the host's first piece.
  EXPECT_EQ(send0.deps, std::vector<int>{id_of(p, "[rank 0] " + kFwd)});
  EXPECT_EQ(task_named(p, "[rank 0] " + kBwd).deps, std::vector<int>{recv0.id});
  EXPECT_EQ(task_named(p, "[rank 0] " + kFwd).deps, std::vector<int>{id_of(p, "[rank 0] host #1")});
  EXPECT_TRUE(recv0.deps.empty());  // posted behind the send on its stream
  EXPECT_EQ(task_named(p, "[rank 1] " + kFwd).deps, std::vector<int>{recv1.id});
  EXPECT_EQ(send1.deps, std::vector<int>{id_of(p, "[rank 1] " + kBwd)});
  EXPECT_EQ(recv1.deps, std::vector<int>{id_of(p, "[rank 1] host #1")});
  EXPECT_EQ(p.streams,
            (std::vector<std::string>{"gpu0 stream 7", "gpu0 stream 24", "host", "gpu1 stream 7", "gpu1 stream 24"}));
  EXPECT_EQ(d->steps, 3);
}

// A recv posted early waits for its send; the pair's transfer starts when both are ready: 20 us for each
// (the fixture's send kernels start 3 us after their producer ends and run 17 us).
TEST(DerivePointToPointTest, ASendAndItsRecvAreOneTransferFromTheLaterReady) {
  auto d = derive_plan(imported_pipeline(), "pipeline.json");
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/pipeline_run.json";
  ASSERT_TRUE(traces::write_trace(path, d->trace).is_ok());
  auto run = read_recorded_run(path);
  ASSERT_TRUE(run.is_ok()) << run.status().message();
  std::map<std::string, KeyFit> fit;
  for (const KeyFit& f : fit_keys(task_samples(*run, 0, 2)))
    fit[f.cost_key] = f;
  // Two pairs per step (activations, gradients) x 3 steps, not one sample per side.
  EXPECT_EQ(fit.at(kP2p).samples, 6);
  EXPECT_NEAR(fit.at(kP2p).mean_s, 20e-6, 1e-9);
}

// 4 ranks: 2 pipeline stages x 2 data-parallel replicas. Ranks 0 and 1 run stage 0 and send to ranks 2 and
// 3 (stage 1); each stage all-reduces among its replicas, a group the trace gives as start + i x stride.
// Interleaved: ranks 0 and 2 run stage 0 and send to ranks 1 and 3, the replicas are equal modulo 2.
traces::Trace four_ranks(bool layout = true, bool lose_a_recv = false, bool interleaved = false) {
  traces::Trace t;
  t.metadata.source = traces::Source::kImported;
  t.metadata.world_size = 4;
  t.metadata.streams = {"compute", "p2p", "comm"};
  auto add = [&](const std::string& name, Category c, int64_t rank, int64_t stream, double ts, double dur) -> Event& {
    Event e;
    e.name = e.cost_key = name;
    e.category = c;
    e.rank = rank;
    e.stream = stream;
    e.ts_us = ts;
    e.dur_us = dur;
    t.events.push_back(e);
    return t.events.back();
  };
  for (int64_t r = 0; r < 4; ++r) {
    const bool first_stage = interleaved ? r % 2 == 0 : r < 2;
    const int64_t hop = interleaved ? 1 : 2;
    for (int s = 0; s < 2; ++s) {
      const double S = 100.0 * s;
      add("ProfilerStep#" + std::to_string(s), Category::kHost, r, 0, S, 99);
      auto p2p = [&](const std::string& op, double ts, double dur) {
        Event& e = add("sendrecv", Category::kComm, r, 1, ts, dur);
        e.collective = op;
        e.peer = first_stage ? r + hop : r - hop;
        e.bytes = 1000;
      };
      if (first_stage) {
        add("fwd", Category::kCompute, r, 0, S + 1, 20);
        p2p("send", S + 23, 10);                                          // after the forward
        if (!(lose_a_recv && r == 1 && s == 1)) p2p("recv", S + 34, 33);  // waits for the gradients
        add("bwd", Category::kCompute, r, 0, S + 69, 20);                 // after the recv
      } else {
        p2p("recv", S + 1, 32);                            // waits for the activations
        add("fwd", Category::kCompute, r, 0, S + 35, 10);  // after the recv
        add("bwd", Category::kCompute, r, 0, S + 45, 10);
        p2p("send", S + 57, 10);  // after the backward
      }
      Event& ar = add("allreduce", Category::kComm, r, 2, first_stage ? S + 91 : S + 69, 7);
      ar.collective = "allreduce";
      ar.bytes = 4000;
      ar.group_size = 2;
      if (layout) {
        ar.group_start = interleaved ? r % 2 : (first_stage ? 0 : 2);
        ar.group_stride = interleaved ? 2 : 1;
      }
    }
  }
  return t;
}

TEST(DerivePointToPointTest, StagesOfReplicasAllReduceAmongThemselves) {
  auto d = derive_plan(four_ranks(), "four.json");
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  const models::Plan& p = d->plan;
  ASSERT_EQ(p.tasks.size(), 10u);  // per stage: fwd, bwd, send, recv, all-reduce
  const models::Task& ar0 = task_named(p, "[ranks 0-1] allreduce");
  const models::Task& ar1 = task_named(p, "[ranks 2-3] allreduce");
  EXPECT_EQ(ar0.ranks, (std::vector<RankRange>{{0, 2}}));
  EXPECT_EQ(ar1.ranks, (std::vector<RankRange>{{2, 4}}));
  for (const models::Task* ar : {&ar0, &ar1}) {
    EXPECT_EQ(ar->collective->group.kind, models::GroupSpec::Kind::kBlock);  // ranks 0-1 and 2-3: blocks of 2
    EXPECT_EQ(ar->collective->group.size, 2);
  }
  EXPECT_EQ(task_named(p, "[ranks 0-1] sendrecv").collective->peer_offset, 2);
  EXPECT_EQ(task_named(p, "[ranks 2-3] sendrecv").collective->peer_offset, -2);
  EXPECT_EQ(task_named(p, "[ranks 2-3] fwd").deps, std::vector<int>{id_of(p, "[ranks 2-3] sendrecv")});
  EXPECT_EQ(task_named(p, "[ranks 0-1] bwd").deps, std::vector<int>{id_of(p, "[ranks 0-1] sendrecv #2")});
}

TEST(DerivePointToPointTest, InterleavedStagesAllReduceAcrossAStride) {
  auto d = derive_plan(four_ranks(true, false, true), "interleaved.json");
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  const models::Plan& p = d->plan;
  const models::Task& ar0 = task_named(p, "[ranks 0, 2] allreduce");
  EXPECT_EQ(ar0.ranks, (std::vector<RankRange>{{0, 1}, {2, 3}}));
  EXPECT_EQ(ar0.collective->group.kind, models::GroupSpec::Kind::kStride);  // ranks 0 and 2: equal modulo 2
  EXPECT_EQ(ar0.collective->group.size, 2);
  EXPECT_EQ(task_named(p, "[ranks 1, 3] allreduce").ranks, (std::vector<RankRange>{{1, 2}, {3, 4}}));
  EXPECT_EQ(task_named(p, "[ranks 0, 2] sendrecv").collective->peer_offset, 1);
}

TEST(DerivePointToPointTest, PairsAndGroupsThatDoNotHoldAreRefusedWithOneLine) {
  // Rank 1's second step lost its recv: rank 1 is then a group of its own (its first step, which has the
  // recv, is left out), and rank 3's send has no recv to meet.
  EXPECT_EQ(derive_plan(four_ranks(true, true), "lost.json").status().message(),
            "lost.json: rank 3, step 1, stream 'p2p': event 'sendrecv': send #1 to rank 1 has no recv #1 from rank "
            "3 on rank 1 in that step (a pair's k-th send meets the peer's k-th recv, in launch order)");
  traces::Trace unpaired = four_ranks();
  std::erase_if(unpaired.events, [](const Event& e) { return e.rank == 3 && e.collective == "recv"; });
  EXPECT_EQ(derive_plan(unpaired, "unpaired.json").status().message(),
            "unpaired.json: rank 1, step 0, stream 'p2p': event 'sendrecv': send #1 to rank 3 has no recv #1 from "
            "rank 1 on rank 3 in that step (a pair's k-th send meets the peer's k-th recv, in launch order)");
  traces::Trace outside = four_ranks();
  for (Event& e : outside.events)
    if (e.rank == 0 && e.collective == "send") e.peer = 9;
  EXPECT_EQ(derive_plan(outside, "outside.json").status().message(),
            "outside.json: rank 0, step 0, stream 'p2p': event 'sendrecv': a send to rank 9, outside the world of 4 "
            "ranks (metadata.world_size)");
  traces::Trace no_peer = four_ranks();
  for (Event& e : no_peer.events)
    if (e.rank == 2 && e.collective == "recv") e.peer.reset();
  EXPECT_EQ(derive_plan(no_peer, "np.json")
                .status()
                .message()
                .rfind("np.json: rank 2, step 0, stream 'p2p': event 'sendrecv': a recv without its peer", 0),
            0u);
  traces::Trace bytes = four_ranks();
  for (Event& e : bytes.events)
    if (e.collective == "recv" && e.rank >= 2) e.bytes = 500;
  EXPECT_EQ(derive_plan(bytes, "bytes.json").status().message(),
            "bytes.json: rank 0, step 0, stream 'p2p': event 'sendrecv': send #1 to rank 2 moves 1000 bytes, its "
            "recv on rank 2 ('sendrecv') 500");
  EXPECT_EQ(derive_plan(four_ranks(false), "nogroup.json").status().message(),
            "nogroup.json: rank 0, step 1, stream 'comm': event 'allreduce': a collective 'allreduce' among 2 of the "
            "4 ranks without its group's ranks (fields 'group_start' / 'group_stride': c10d's 'Process Group Ranks' "
            "or 'Global rank start' / 'stride', which older PyTorch does not record); the plan cannot place it");
}

}  // namespace
}  // namespace clustertwin::models
