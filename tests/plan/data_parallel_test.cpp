#include "models/plan/data_parallel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "models/plan/plan_json.h"

namespace clustertwin::models {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

Task compute(int id, const std::string& name, int64_t grad_bytes = 0, int stream = 0) {
  Task t;
  t.id = id;
  t.name = name;
  t.stream = stream;
  t.flops = 1e9;
  t.grad_bytes = grad_bytes;
  return t;
}

Task allreduce(int id, const std::string& name, int stream, int64_t bytes, int dep) {
  Task t;
  t.id = id;
  t.name = name;
  t.kind = TaskKind::kCollective;
  t.stream = stream;
  t.bytes = bytes;
  t.collective = Collective{};
  t.deps = {dep};
  return t;
}

// One worker's step: the forward, three backward tasks completing 10, 20 and
// 30 MiB of gradients, and the optimizer.
Plan one_gpu_step() {
  Plan p;
  p.system = "test";
  p.variant = "one-gpu";
  p.streams = {"compute"};
  p.tasks = {compute(0, "fwd"), compute(1, "bwd3", 10 * kMiB), compute(2, "bwd2", 20 * kMiB),
             compute(3, "bwd1", 30 * kMiB), compute(4, "opt")};
  return p;
}

TEST(AddDataParallelTest, BucketsAreCutWhereTheGradientsFillThem) {
  auto out = add_data_parallel(one_gpu_step(), {}, "step.json");  // 25 MiB buckets
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  Plan expected = one_gpu_step();
  expected.streams.push_back("dp allreduce");
  // bwd3 brings 10 MiB: no bucket yet. bwd2 brings 20: 30 >= 25, bucket 0 of 25 MiB launches after bwd2,
  // 5 MiB stay. bwd1 brings 30: 35 >= 25, bucket 1 after bwd1, 10 MiB stay: the remainder, bucket 2, also
  // after bwd1. The optimizer waits for bucket 2 (the buckets run in order on their stream).
  expected.tasks.push_back(allreduce(5, "dp allreduce 0", 1, 25 * kMiB, 2));
  expected.tasks.push_back(allreduce(6, "dp allreduce 1", 1, 25 * kMiB, 3));
  expected.tasks.push_back(allreduce(7, "dp allreduce 2", 1, 10 * kMiB, 3));
  expected.tasks[4].deps = {7};
  EXPECT_EQ(*out, expected);
  // The transformed plan is a plan like any other: it survives its file format.
  auto back = plan_from_json(plan_to_json(*out), "back.json");
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(*back, *out);
}

TEST(AddDataParallelTest, BucketSizesAcrossTasks) {
  struct Case {
    const char* what;
    std::vector<int64_t> grads;  // per backward task, MiB
    int64_t bucket_mib;
    std::vector<std::pair<int64_t, int>> buckets;  // MiB, task it waits for (1 = the first backward task)
  };
  const Case cases[] = {
      // 60 MiB at once: two full buckets and the 10 MiB rest, all after that task.
      {"one task fills several buckets", {60}, 25, {{25, 1}, {25, 1}, {10, 1}}},
      // 25 + 25: exactly two buckets, no empty remainder.
      {"no remainder", {25, 25}, 25, {{25, 1}, {25, 2}}},
      // 3 + 3 + 3 below one 25 MiB bucket: one bucket of 9 after the last.
      {"all in the remainder", {3, 3, 3}, 25, {{9, 3}}},
      // A task without gradients in between changes nothing: 5 + 0 + 5 in 4 MiB buckets: 4 after the first
      // (1 left), 4 after the third (2 left), then 2.
      {"a task without gradients", {5, 0, 5}, 4, {{4, 1}, {4, 3}, {2, 3}}},
  };
  for (const Case& c : cases) {
    Plan p;
    p.streams = {"compute"};
    p.tasks.push_back(compute(0, "fwd"));
    for (int64_t g : c.grads)
      p.tasks.push_back(compute(static_cast<int>(p.tasks.size()), "bwd" + std::to_string(p.tasks.size()), g * kMiB));
    p.tasks.push_back(compute(static_cast<int>(p.tasks.size()), "opt"));
    DataParallelOptions o;
    o.bucket_bytes = c.bucket_mib * kMiB;
    auto out = add_data_parallel(p, o, "p.json");
    ASSERT_TRUE(out.is_ok()) << c.what << ": " << out.status().message();
    ASSERT_EQ(out->tasks.size(), p.tasks.size() + c.buckets.size()) << c.what;
    for (size_t k = 0; k < c.buckets.size(); ++k) {
      const Task& ar = out->tasks[p.tasks.size() + k];
      EXPECT_EQ(ar.bytes, c.buckets[k].first * kMiB) << c.what << ", bucket " << k;
      EXPECT_EQ(ar.deps, std::vector<int>{c.buckets[k].second}) << c.what << ", bucket " << k;
    }
    EXPECT_EQ(out->tasks[p.tasks.size() - 1].deps, std::vector<int>{out->tasks.back().id}) << c.what;
  }
}

TEST(AddDataParallelTest, TheOptimizerIsTheNextTaskOnTheGradientsStream) {
  // A copy on another stream comes between the last backward task and the optimizer in plan order; the
  // optimizer, next on the compute stream, is the one that waits.
  Plan p;
  p.streams = {"compute", "h2d"};
  p.tasks = {compute(0, "bwd", 1 * kMiB), compute(1, "copy", 0, 1), compute(2, "opt")};
  p.tasks[1].kind = TaskKind::kCopy;
  p.tasks[1].flops = 0;
  auto out = add_data_parallel(p, {}, "p.json");
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  ASSERT_EQ(out->tasks.size(), 4u);
  EXPECT_EQ(out->tasks[3].stream, 2);  // a stream of its own, after the plan's
  EXPECT_TRUE(out->tasks[1].deps.empty());
  EXPECT_EQ(out->tasks[2].deps, std::vector<int>{3});
}

TEST(AddDataParallelTest, WithNothingAfterTheGradientsTheNextStepWaits) {
  // The last backward task ends the step: the next step's first task on its stream waits for the last bucket.
  Plan p;
  p.streams = {"compute"};
  p.tasks = {compute(0, "fwd"), compute(1, "bwd", 30 * kMiB)};
  auto out = add_data_parallel(p, {}, "p.json");
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  ASSERT_EQ(out->tasks.size(), 4u);  // 25 MiB and the 5 MiB rest
  EXPECT_TRUE(out->tasks[0].deps.empty());
  EXPECT_EQ(out->tasks[0].prev_step_deps, std::vector<int>{3});
}

TEST(AddDataParallelTest, AGradientTotalIsSpreadOverTheNamedComputeTasks) {
  // 100 bytes over the compute tasks from b0 to b2 (the copy between them carries none): 100 / 3 = 33 each,
  // the last takes the rest, 34. In 40-byte buckets: 33 + 33 = 66 -> 40 after b1 (26 left); 26 + 34 = 60 ->
  // 40 after b2 (20 left) -> the remainder 20, after b2.
  Plan p;
  p.streams = {"compute"};
  p.tasks = {compute(0, "fwd"), compute(1, "b0"), compute(2, "copy"),
             compute(3, "b1"),  compute(4, "b2"), compute(5, "opt")};
  p.tasks[2].kind = TaskKind::kCopy;
  DataParallelOptions o;
  o.bucket_bytes = 40;
  o.grad_bytes_total = 100;
  o.grads_first = "b0";
  o.grads_last = "b2";
  auto out = add_data_parallel(p, o, "p.json");
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  const std::vector<int64_t> grads = {0, 33, 0, 33, 34, 0};
  for (size_t i = 0; i < grads.size(); ++i)
    EXPECT_EQ(out->tasks[i].grad_bytes, grads[i]) << out->tasks[i].name;
  ASSERT_EQ(out->tasks.size(), 9u);
  EXPECT_EQ(out->tasks[6].bytes, 40);
  EXPECT_EQ(out->tasks[6].deps, std::vector<int>{3});
  EXPECT_EQ(out->tasks[7].bytes, 40);
  EXPECT_EQ(out->tasks[7].deps, std::vector<int>{4});
  EXPECT_EQ(out->tasks[8].bytes, 20);
  EXPECT_EQ(out->tasks[5].deps, std::vector<int>{8});

  // Without names: from the first compute task (fwd) to the last (opt), 5 of them: 20 bytes each; the
  // optimizer now carries gradients itself, and with nothing after it the next step waits.
  o.grads_first.clear();
  o.grads_last.clear();
  out = add_data_parallel(p, o, "p.json");
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  EXPECT_EQ(out->tasks[0].grad_bytes, 20);
  EXPECT_EQ(out->tasks[5].grad_bytes, 20);
  EXPECT_EQ(out->tasks[0].prev_step_deps, std::vector<int>{out->tasks.back().id});
}

TEST(AddDataParallelTest, Refusals) {
  struct Case {
    const char* what;
    DataParallelOptions options;
    Plan plan;
    std::string message;
  };
  auto options = [](int64_t bucket, int64_t total, std::string first = "", std::string last = "") {
    DataParallelOptions o;
    o.bucket_bytes = bucket;
    o.grad_bytes_total = total;
    o.grads_first = std::move(first);
    o.grads_last = std::move(last);
    return o;
  };
  Plan unmarked = one_gpu_step();
  for (Task& t : unmarked.tasks)
    t.grad_bytes = 0;
  Plan twice = one_gpu_step();
  twice.streams.push_back("dp allreduce");
  Plan some_ranks = one_gpu_step();
  some_ranks.tasks[2].ranks = {{0, 4}};
  Plan name_taken = one_gpu_step();
  name_taken.tasks[0].name = "dp allreduce 1";
  const std::string p = "step.json: data parallelism: ";
  const Case cases[] = {
      {"bucket 0", options(0, 0), one_gpu_step(), p + "bucket_bytes 0 must be > 0"},
      {"negative bucket", options(-1, 0), one_gpu_step(), p + "bucket_bytes -1 must be > 0"},
      {"negative total", options(kMiB, -5), unmarked,
       p + "grad_bytes_total -5 must be >= 0 (0: the tasks' grad_bytes)"},
      {"no gradients", options(kMiB, 0), unmarked,
       p + "no task carries grad_bytes; give grad_bytes_total, the gradient bytes in all"},
      {"gradients twice", options(kMiB, 100), one_gpu_step(),
       p + "the plan's tasks carry grad_bytes (62914560 bytes in all); grad_bytes_total 100 would replace them"},
      {"unknown first", options(kMiB, 100, "bwd9"), unmarked, p + "grads_first 'bwd9' is not a task of the plan"},
      {"unknown last", options(kMiB, 100, "", "bwd9"), unmarked, p + "grads_last 'bwd9' is not a task of the plan"},
      {"wrong order", options(kMiB, 100, "bwd1", "bwd3"), unmarked,
       p + "grads_first 'bwd1' (task 3) comes after grads_last 'bwd3' (task 1)"},
      {"names without a total", options(kMiB, 0, "bwd3"), one_gpu_step(),
       p + "grads_first and grads_last place grad_bytes_total, which is not given"},
      {"added twice", options(kMiB, 0), twice,
       p + "the plan already has a stream 'dp allreduce' (data parallelism added twice?)"},
      {"gradients on some ranks", options(kMiB, 0), some_ranks,
       p + "task 'bwd2' has grad_bytes but runs on some ranks only; an all-reduce over the world needs the "
           "gradients on every rank"},
      {"name taken", options(25 * kMiB, 0), name_taken, p + "the plan already has a task named 'dp allreduce 1'"},
  };
  for (const Case& c : cases) {
    auto out = add_data_parallel(c.plan, c.options, "step.json");
    ASSERT_FALSE(out.is_ok()) << c.what;
    EXPECT_EQ(out.status().code(), Status::Code::kInvalidArgument) << c.what;
    EXPECT_EQ(out.status().message(), c.message) << c.what;
  }
}

TEST(ScaleComputeTest, MultipliesTheFlopsOfComputeTasksOnly) {
  Plan p = one_gpu_step();
  auto with_dp = add_data_parallel(p, {}, "p.json");
  ASSERT_TRUE(with_dp.is_ok());
  auto out = scale_compute(*with_dp, 2.5, "p.json");
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  for (size_t i = 0; i < out->tasks.size(); ++i) {
    const Task& t = out->tasks[i];
    // Compute: 1e9 x 2.5; the all-reduces keep their bytes (a bucket holds gradients, whatever the batch).
    EXPECT_EQ(t.flops, t.kind == TaskKind::kCompute ? 2.5e9 : 0.0) << t.name;
    EXPECT_EQ(t.bytes, with_dp->tasks[i].bytes) << t.name;
  }
}

TEST(ScaleComputeTest, RefusesAScaleThatIsNotAPositiveNumber) {
  for (double scale : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    auto out = scale_compute(one_gpu_step(), scale, "p.json");
    ASSERT_FALSE(out.is_ok()) << scale;
    EXPECT_NE(out.status().message().find("p.json: compute scale "), std::string::npos) << out.status().message();
    EXPECT_NE(out.status().message().find(" must be a positive finite number"), std::string::npos);
  }
}

}  // namespace
}  // namespace clustertwin::models
