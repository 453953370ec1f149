#include "sim/flexmarl/flexmarl_twin.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "calibrators/flexmarl/flexmarl_paper_fit.h"
#include "models/flexmarl/agents.h"
#include "sim/flexmarl/flexmarl_setup.h"
#include "traces/trace_reader.h"
#include "traces/validator.h"

namespace clustertwin::sim::flexmarl {
namespace {

using models::flexmarl::Framework;

cluster::ClusterProfile npu768() {
  auto p = cluster::load_cluster_profile("npu-768");
  EXPECT_TRUE(p.is_ok()) << p.status().message();
  return *p;
}

// Every engine at `decode_efficiency` (sync's included).
FlexMarlSetup ma(double decode_efficiency = 0.5) {
  FlexMarlSetup s;
  s.efficiency.decode = s.efficiency.sync_decode = decode_efficiency;
  return s;
}

FlexMarlRow run(const FlexMarlSetup& setup, Framework f) {
  auto row = run_flexmarl(setup, npu768(), f);
  EXPECT_TRUE(row.is_ok()) << row.status().message();
  return row.is_ok() ? *row : FlexMarlRow();
}

// A request alone on an instance (of the deployment's width): its prefill, then one token per iteration at the
// mean context.
double alone_s(const models::flexmarl::AgentRole& r, const FlexMarlSetup& s, const cluster::ClusterProfile& p,
               int length) {
  const models::flexmarl::DeviceFacts d = device_facts(p);
  const int tp = models::flexmarl::inference_tp(r.model, d);
  return models::flexmarl::prefill_s(r.model, tp, d, s.efficiency, r.prompt_tokens) +
         length * models::flexmarl::decode_iteration_s(r.model, tp, d, s.efficiency, r.prompt_tokens + length / 2.0);
}

TEST(FlexMarlTwinTest, OneRequestAloneTakesItsClosedForm) {
  // One agent, one sample per step: marti's rollout is one request on an otherwise idle instance (sync's
  // would add the engine's weight load before its phase).
  FlexMarlSetup s = ma();
  s.workload = models::flexmarl::workload_for({*spec::llm_spec("0.5B")});
  s.workload.global_batch = s.workload.micro_batch = s.workload.group = 1;
  const cluster::ClusterProfile p = npu768();
  const FlexMarlRow row = run(s, Framework::kMarti);
  double expected = 0;
  for (int step = 1; step < s.steps; ++step) {
    expected += alone_s(s.workload.agents[0], s, p, models::flexmarl::response_lengths(s.workload, s.seed, step)[0][0]);
  }
  expected /= s.steps - 1;
  EXPECT_NEAR(row.rollout_s, expected, 1e-9 * expected);
  EXPECT_GT(row.step_s, row.rollout_s);  // then training and the publish
  // Sync loads the engine's weights first: the same request, later.
  EXPECT_GT(run(s, Framework::kSync).rollout_s, row.rollout_s);
}

TEST(FlexMarlTwinTest, RolloutNeverBeatsTheRequestsAlone) {
  // Sharing an instance only slows a request down, and a cut chunk must not credit tokens it did not decode:
  // each step's rollout is at least its critical path with every request alone. Sync runs one query's group
  // at a time, agent after agent: its path is the sum over queries and agents of the query's slowest answer.
  const FlexMarlSetup s = ma();
  const cluster::ClusterProfile p = npu768();
  const auto& agents = s.workload.agents;
  double sync_bound = 0, chain_bound = 0;
  for (int step = 1; step < s.steps; ++step) {
    const auto lengths = models::flexmarl::response_lengths(s.workload, s.seed, step);
    const int queries = s.workload.global_batch / s.workload.group;
    std::vector<std::vector<double>> slowest(queries, std::vector<double>(agents.size(), 0.0));
    double chain = 0;
    for (int i = 0; i < s.workload.global_batch; ++i) {
      double later = 0;
      for (size_t a = 0; a < agents.size(); ++a) {
        const double t = alone_s(agents[a], s, p, lengths[a][i]);
        double& query_slowest = slowest[i / s.workload.group][a];
        query_slowest = std::max(query_slowest, t);
        if (agents[a].turn == 1) later = std::max(later, t);
      }
      chain = std::max(chain, alone_s(agents[0], s, p, lengths[0][i]) + later);
    }
    for (const std::vector<double>& query : slowest)
      sync_bound += std::accumulate(query.begin(), query.end(), 0.0);
    chain_bound += chain;
  }
  sync_bound /= s.steps - 1;
  chain_bound /= s.steps - 1;
  EXPECT_GE(run(s, Framework::kSync).rollout_s, sync_bound);
  const FlexMarlRow flex = run(s, Framework::kFlexMarl);
  EXPECT_GE(flex.rollout_s, chain_bound);
  // And not far above it: the MA batch fits the instances' slots, so little is lost to sharing.
  EXPECT_LT(flex.rollout_s, 1.3 * chain_bound);
}

TEST(FlexMarlTwinTest, FewerQueriesInFlightSlowTheRollout) {
  // Inter-query parallelism: with one query in flight, a query's whole chain (every turn) runs before the next
  // query starts, so the rollout is at least the sum over queries of each query's chain; with all four in
  // flight it is far shorter.
  FlexMarlSetup one = ma(), all = ma();
  one.workload.inter_query = 1;
  all.workload.inter_query = 4;
  const double serial = run(one, Framework::kFlexMarl).rollout_s, parallel = run(all, Framework::kFlexMarl).rollout_s;
  EXPECT_GT(serial, 2 * parallel);
  // Sync ignores it (MAS-RL runs one query at a time), marti takes the whole batch.
  EXPECT_EQ(run(one, Framework::kSync).step_s, run(all, Framework::kSync).step_s);
  EXPECT_EQ(run(one, Framework::kMarti).step_s, run(all, Framework::kMarti).step_s);
}

TEST(FlexMarlTwinTest, FlexMarlBeatsTheBaselinesAndKeepsTheBooks) {
  const FlexMarlSetup s = ma();
  auto rows = run_flexmarl_frameworks(s, npu768(), models::flexmarl::all_frameworks());
  ASSERT_TRUE(rows.is_ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 5u);
  const FlexMarlRow &sync = (*rows)[0], &marti = (*rows)[1], &flex = (*rows)[2];
  EXPECT_EQ(sync.framework, "sync");
  EXPECT_LT(flex.step_s, marti.step_s);
  EXPECT_LT(marti.step_s, sync.step_s);
  EXPECT_DOUBLE_EQ(sync.speedup, 1.0);
  EXPECT_DOUBLE_EQ(flex.speedup, sync.step_s / flex.step_s);
  double tokens = 0;
  for (int step = 1; step < s.steps; ++step) {
    for (const auto& agent : models::flexmarl::response_lengths(s.workload, s.seed, step))
      tokens += std::accumulate(agent.begin(), agent.end(), 0.0);
  }
  for (const FlexMarlRow& r : *rows) {
    EXPECT_EQ(r.devices, 48) << r.framework;  // a node per agent
    EXPECT_GT(r.utilization, 0) << r.framework;
    EXPECT_LE(r.utilization, 1) << r.framework;
    EXPECT_NEAR(r.tokens_per_s * r.step_s * (s.steps - 1), tokens, 1e-6 * tokens) << r.framework;
    EXPECT_GE(r.step_s, r.rollout_s) << r.framework;
  }
}

TEST(FlexMarlTwinTest, SameInputsSameBytes) {
  const FlexMarlSetup s = ma();
  const FlexMarlRow a = run(s, Framework::kFlexMarl), b = run(s, Framework::kFlexMarl);
  std::vector<FlexMarlRow> ra = {a}, rb = {b};
  EXPECT_EQ(flexmarl_rows_json(ra), flexmarl_rows_json(rb));
  EXPECT_EQ(flexmarl_timeline_csv(a, 50), flexmarl_timeline_csv(b, 50));
  FlexMarlSetup other = s;
  other.seed = 1;
  EXPECT_NE(run(other, Framework::kFlexMarl).step_s, a.step_s);
}

TEST(FlexMarlTwinTest, CalibrationHitsThePapersSyncStep) {
  auto fit = calibrators::calibrate_sync(ma(), npu768());
  ASSERT_TRUE(fit.is_ok()) << fit.status().message();
  EXPECT_NEAR(fit->step_s, kPaperSyncStepS, 1e-3 * kPaperSyncStepS);
  EXPECT_GT(fit->decode_efficiency, 0.05);
  EXPECT_LE(fit->decode_efficiency, 1.0);
  EXPECT_NEAR(run(ma(fit->decode_efficiency), Framework::kSync).step_s, fit->step_s, 1e-9 * fit->step_s);
}

TEST(FlexMarlTwinTest, TraceIsValidAndHoldsTheLastStep) {
  const FlexMarlRow row = run(ma(), Framework::kFlexMarl);
  const std::string path = ::testing::TempDir() + "/ct_flexmarl_trace.json";
  ASSERT_TRUE(write_flexmarl_trace(row, "npu-768", path).is_ok());
  traces::ValidationStats stats;
  ASSERT_TRUE(traces::validate_trace(path, &stats).is_ok());
  auto trace = traces::read_trace(path);
  ASSERT_TRUE(trace.is_ok());
  // One event per device of each job of the last step (a group job on each of its devices).
  size_t device_jobs = 0;
  for (const auto& b : row.last_step)
    device_jobs += static_cast<size_t>(std::min(b.devices, row.devices - b.first_device));
  EXPECT_GT(device_jobs, row.last_step.size());  // the setup has multi-device groups
  EXPECT_EQ(trace->events.size(), device_jobs);
  EXPECT_EQ(trace->metadata.variant, "flexmarl");
  // The timeline: busy shares in [0, 1], every device listed.
  const std::string csv = flexmarl_timeline_csv(row, 20);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 20 * row.devices);
}

TEST(FlexMarlTwinTest, BadSetupsAreOneLine) {
  const cluster::ClusterProfile p = npu768();
  FlexMarlSetup s = ma();
  s.workload.micro_batch = 128;
  EXPECT_EQ(validate(s, p).message(), "workload MA: micro-batch 128 must be in [1, 64] (the global batch)");
  s = ma();
  s.gap_threshold = 0;
  EXPECT_EQ(validate(s, p).message(), "load_gap 0: the load-gap threshold must be > 0 (requests)");
  s = ma();
  s.devices = 1000;
  EXPECT_EQ(validate(s, p).message(), "workers 1000: more than the 768 devices of profile 'npu-768'");
}

}  // namespace
}  // namespace clustertwin::sim::flexmarl
