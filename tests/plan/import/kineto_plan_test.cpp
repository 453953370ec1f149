// Deriving a plan from an imported trace: a data-parallel step on two ranks
// whose dependencies are known, the derived trace read back as a recorded
// run, and traces that do not repeat one plan refused with what differs.

#include "models/plan/import/kineto_plan.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "calibrators/replay.h"
#include "tests/plan/import/kineto_events.h"
#include "traces/trace_writer.h"

namespace clustertwin::models {
namespace {

using calibrators::fit_keys;
using calibrators::KeyFit;
using calibrators::read_recorded_run;
using calibrators::task_samples;
using traces::Category;
using traces::Event;

// An event whose cost key is its name.
Event event(const std::string& name, Category c, int64_t rank, int64_t stream, double ts, double dur) {
  Event e = testing::timed_event(name, c, rank, stream, ts, dur);
  e.cost_key = name;
  return e;
}

// Streams: 0 "stream 7" (kernels), 1 "stream 20" (NCCL), 2 "python" (CPU).
// Each step, from its marker at S: fwd [S, S+10], bwd1 [S+10, S+20],
// bwd2 [S+20, S+30] on stream 7; the all-reduce of bwd1's gradients
// [S+22, S+40] on stream 20 (it waited for bwd1); the optimizer [S+45, S+50]
// waits for the all-reduce. Steps are 60 us apart; a launch on the CPU and a
// kernel before the first marker (the profiler's warm-up) are not tasks.
traces::Trace two_ranks(int steps = 2) {
  traces::Trace t;
  t.metadata.source = traces::Source::kImported;
  t.metadata.system = "imported";
  t.metadata.world_size = 2;
  t.metadata.streams = {"stream 7", "stream 20", "python"};
  t.metadata.config_json = R"({"inputs":["a.json","b.json"]})";
  for (int64_t r = 0; r < 2; ++r) {
    t.events.push_back(event("warmup_kernel", Category::kCompute, r, 0, 0, 5));
    for (int s = 0; s < steps; ++s) {
      const double S = 10 + 60.0 * s + r * 0.5;  // rank 1 half a microsecond late
      t.events.push_back(event("ProfilerStep#" + std::to_string(s + 3), Category::kHost, r, 2, S, 55));
      t.events.push_back(event("cudaLaunchKernel", Category::kHost, r, 2, S + 1, 2));
      t.events.push_back(event("fwd", Category::kCompute, r, 0, S, 10));
      t.events.push_back(event("bwd", Category::kCompute, r, 0, S + 10, 10));
      t.events.push_back(event("bwd", Category::kCompute, r, 0, S + 20, 10));
      Event ar = event("ncclKernel_AllReduce", Category::kComm, r, 1, S + 22, 18);
      ar.collective = "allreduce";
      ar.bytes = 4 << 20;
      ar.group_size = 2;
      t.events.push_back(ar);
      t.events.push_back(event("adam", Category::kCompute, r, 0, S + 45, 5));
    }
  }
  return t;
}

TEST(DerivePlanTest, TasksStreamsAndDependenciesOfADataParallelStep) {
  auto d = derive_plan(two_ranks(), "two.json");
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  const models::Plan& p = d->plan;
  EXPECT_EQ(p.streams, (std::vector<std::string>{"stream 7", "stream 20"}));
  ASSERT_EQ(p.tasks.size(), 5u);
  std::vector<std::string> names;
  for (const models::Task& t : p.tasks)
    names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fwd", "bwd", "bwd #2", "adam", "ncclKernel_AllReduce"}));
  const models::Task& ar = p.tasks[4];
  ASSERT_TRUE(ar.collective.has_value());
  EXPECT_EQ(ar.collective->op, models::CollectiveOp::kAllReduce);
  EXPECT_EQ(ar.collective->group.kind, models::GroupSpec::Kind::kWorld);
  EXPECT_EQ(ar.bytes, 4 << 20);
  EXPECT_EQ(ar.deps, std::vector<int>{1});          // waited for the first backward kernel
  EXPECT_EQ(p.tasks[3].deps, std::vector<int>{4});  // the optimizer waited for the all-reduce
  for (int i : {0, 1, 2}) {
    EXPECT_TRUE(p.tasks[i].deps.empty()) << p.tasks[i].name;  // ran back to back on their stream
    EXPECT_TRUE(p.tasks[i].prev_step_deps.empty()) << p.tasks[i].name;
  }
  EXPECT_EQ(d->steps, 2);
  EXPECT_EQ(d->template_step, 1);
  // 2 ranks x 2 steps x 5 device events, each with its step and task; the CPU and warm-up events are gone.
  ASSERT_EQ(d->trace.events.size(), 20u);
  for (const Event& e : d->trace.events) {
    ASSERT_TRUE(e.step && e.task_id) << e.name;
    EXPECT_EQ(p.tasks[*e.task_id].cost_key, e.cost_key);
  }
}

TEST(DerivePlanTest, TheDerivedTraceIsARecordedRun) {
  auto d = derive_plan(two_ranks(3), "three.json");
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/derived.json";
  ASSERT_TRUE(traces::write_trace(path, d->trace).is_ok());
  auto run = read_recorded_run(path);
  ASSERT_TRUE(run.is_ok()) << run.status().message();
  EXPECT_EQ(run->plan, d->plan);
  EXPECT_EQ(run->runner_steps, 3);
  EXPECT_EQ(run->prologue_steps, 0);
  // Each task's time from ready (replay.h): the first kernel of a step from the previous step's optimizer
  // (the 10 us between steps are its to wait), the all-reduce from bwd1's end, the optimizer from the
  // all-reduce's end.
  const auto fits = fit_keys(task_samples(*run, 1, 2));
  std::map<std::string, double> mean;
  for (const KeyFit& f : fits)
    mean[f.cost_key] = f.mean_s;
  EXPECT_NEAR(mean.at("fwd"), 20e-6, 1e-9);
  EXPECT_NEAR(mean.at("bwd"), 10e-6, 1e-9);
  EXPECT_NEAR(mean.at("adam"), 10e-6, 1e-9);
  EXPECT_NEAR(mean.at("ncclKernel_AllReduce"), 20e-6, 1e-9);
}

TEST(DerivePlanTest, TracesThatDoNotRepeatOnePlanAreRefusedWithWhatDiffers) {
  traces::Trace missing = two_ranks();
  // Rank 1's second step loses its optimizer kernel.
  for (auto it = missing.events.begin(); it != missing.events.end(); ++it) {
    if (it->rank == 1 && it->name == "adam" && it->ts_us > 60) {
      missing.events.erase(it);
      break;
    }
  }
  EXPECT_EQ(derive_plan(missing, "m.json").status().message(),
            "m.json: rank 1, step 1, stream 'stream 7': 3 device events where rank 0's step 1 has 4 (every rank and "
            "step from the template on must run the same plan)");
  traces::Trace planned = two_ranks();
  planned.metadata.config_json = R"({"plan":{}})";
  EXPECT_EQ(derive_plan(planned, "p.json").status().message(),
            "p.json: field 'metadata.config.plan': the trace already carries its plan; calibrate it as it is");
  traces::Trace host_only = two_ranks();
  std::erase_if(host_only.events, [](const Event& e) { return e.category != Category::kHost; });
  EXPECT_EQ(derive_plan(host_only, "h.json").status().code(), Status::Code::kInvalidArgument);
}

TEST(DerivePlanTest, TasksCarryTheGradientsTheirEventsCompleted) {
  traces::Trace grads = two_ranks();
  for (Event& e : grads.events) {
    if (e.name == "bwd") e.grad_bytes = 1 << 20;
  }
  auto d = derive_plan(grads, "g.json");
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  int64_t total = 0;
  for (const models::Task& t : d->plan.tasks) {
    EXPECT_EQ(t.grad_bytes, t.cost_key == "bwd" ? 1 << 20 : 0) << t.name;
    total += t.grad_bytes;
  }
  EXPECT_EQ(total, 2 << 20);
}

TEST(DerivePlanTest, ACollectiveWithoutBytesIsPricedByItsTimeWithANote) {
  traces::Trace no_bytes = two_ranks();
  for (Event& e : no_bytes.events)
    e.bytes.reset();
  auto d = derive_plan(no_bytes, "n.json");
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  for (const models::Task& t : d->plan.tasks) {
    if (t.collective) {
      EXPECT_EQ(t.bytes, 0);
    }
  }
  ASSERT_EQ(d->notes.size(), 1u);
  EXPECT_EQ(d->notes[0].rfind("1 collective task(s) 'ncclKernel_AllReduce' without a message size", 0), 0u)
      << d->notes[0];
}

// On a busy GPU the kernels a step launches run after the host has started the next step: the launch link
// (host_ts_us), not the kernel's own time, says which step they belong to.
TEST(DerivePlanTest, KernelsBelongToTheStepThatLaunchedThem) {
  traces::Trace late = two_ranks(3);
  for (Event& e : late.events) {
    if (e.name == "adam") {
      e.host_ts_us = e.ts_us - 40;  // launched inside its own step ...
      e.ts_us += 20;                // ... and run 15 us into the next one (markers 60 us apart, 55 long)
    }
  }
  auto d = derive_plan(late, "l.json");
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  EXPECT_EQ(d->steps, 3);
  for (const Event& e : d->trace.events) {
    if (e.name != "adam") continue;
    // Step s's marker starts at 10 + 60 s (+0.5 on rank 1); its adam launched at 15 + 60 s.
    EXPECT_EQ(*e.step, static_cast<int64_t>((e.host_ts_us.value() - 10) / 60)) << e.ts_us;
  }
  // Without the launch link the same kernels fall into the next step: the last step has one too many, the
  // first one too few, and the plan cannot be derived.
  for (Event& e : late.events)
    e.host_ts_us.reset();
  EXPECT_FALSE(derive_plan(late, "l.json").is_ok());
}

// Kineto marks each step on the host thread and again on the GPU's timeline; a step starts at the earliest.
TEST(DerivePlanTest, AStepMarkedTwiceIsOneStep) {
  traces::Trace twice = two_ranks(3);
  std::vector<Event> gpu_markers;
  for (const Event& e : twice.events) {
    if (e.name.rfind("ProfilerStep#", 0) != 0) continue;
    Event m = e;
    m.stream = 0;
    m.ts_us += 1;  // the GPU's annotation starts when the step's first kernel does
    gpu_markers.push_back(m);
  }
  twice.events.insert(twice.events.end(), gpu_markers.begin(), gpu_markers.end());
  auto d = derive_plan(twice, "t.json");
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  EXPECT_EQ(d->steps, 3);
  EXPECT_EQ(d->plan, derive_plan(two_ranks(3), "t.json")->plan);
}

// The first profiled steps settle (lazy initialisation, autotuning): one before the template that runs other
// kernels is left out with a note, and the steps are numbered from the first kept one.
TEST(DerivePlanTest, AFirstStepThatDiffersIsLeftOutWithANote) {
  traces::Trace first = two_ranks(4);
  for (int64_t r = 0; r < 2; ++r)
    first.events.push_back(event("autotune", Category::kCompute, r, 0, 12 + r * 0.5, 1));
  auto d = derive_plan(first, "f.json");
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  EXPECT_EQ(d->steps, 3);
  EXPECT_EQ(d->template_step, 0);
  ASSERT_EQ(d->notes.size(), 1u);
  EXPECT_EQ(d->notes[0],
            "step 0 left out: rank 0, step 0, stream 'stream 7': 5 device events where rank 0's step 1 has 4");
  int64_t last = -1;
  for (const Event& e : d->trace.events) {
    EXPECT_NE(e.name, "autotune");
    last = std::max(last, *e.step);
  }
  EXPECT_EQ(last, 2);
}

// two_ranks with every kernel linked to its launch: each launched 2 us before it starts (1 us long), but
// each step's first kernel, whose stream sat idle since the last step's optimizer: the host launches it
// 0.5 us into the step and it starts 1 us in, so the host held it. The all-reduce's launch began as bwd1
// ended, the optimizer's 3 us after the all-reduce did: the host waiting for the device (a synchronize).
traces::Trace launched(int steps) {
  traces::Trace t = two_ranks(steps);
  for (Event& e : t.events) {
    if (e.category == Category::kHost || e.name == "warmup_kernel") continue;
    if (e.name == "fwd") {
      e.ts_us += 1;
      e.dur_us -= 1;
      e.host_ts_us = e.ts_us - 0.8;
      e.host_dur_us = 0.3;
    } else {
      e.host_ts_us = e.ts_us - 2;
      e.host_dur_us = 1;
    }
  }
  return t;
}

TEST(DerivePlanTest, AKernelThatWaitedForItsLaunchWaitsForAHostTask) {
  auto d = derive_plan(launched(3), "h.json");
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  const models::Plan& p = d->plan;
  EXPECT_EQ(p.streams, (std::vector<std::string>{"stream 7", "stream 20", "host"}));
  std::map<std::string, const models::Task*> by_name;
  for (const models::Task& t : p.tasks)
    by_name[t.name] = &t;
  ASSERT_EQ(p.tasks.size(), 7u);
  ASSERT_TRUE(by_name.count("host #1") && by_name.count("host tail"));
  EXPECT_EQ(by_name["host #1"]->kind, models::TaskKind::kHost);
  EXPECT_EQ(by_name["fwd"]->deps, std::vector<int>{by_name["host #1"]->id});
  // The launches that began as another stream's task ended: dependencies on those tasks, no host cut.
  EXPECT_EQ(by_name["ncclKernel_AllReduce"]->deps, std::vector<int>{by_name["bwd"]->id});
  EXPECT_EQ(by_name["adam"]->deps, std::vector<int>{by_name["ncclKernel_AllReduce"]->id});
  // The host pieces of every (rank, step) tile the step: 0.5 us to the launch, the rest to the next step.
  std::map<std::pair<int64_t, int64_t>, double> host_us;
  for (const Event& e : d->trace.events) {
    if (e.category != Category::kHost) continue;
    host_us[{e.rank, *e.step}] += e.dur_us;
    if (e.name == "host #1") {
      EXPECT_NEAR(e.dur_us, 0.5, 1e-9);
    }
  }
  ASSERT_EQ(host_us.size(), 6u);
  // The last step's next start is not in the trace: its tail runs to its marker's end (55 us into the step)
  // plus the 5 us the step before left between its marker's end and the next start.
  for (const auto& [rank_step, us] : host_us)
    EXPECT_NEAR(us, 60, 1e-9) << rank_step.first << " " << rank_step.second;
  // Without host tasks the plan is the device timeline's, as before.
  DerivePlanOptions device_only;
  device_only.host_tasks = false;
  auto plain = derive_plan(launched(3), "h.json", device_only);
  ASSERT_TRUE(plain.is_ok());
  EXPECT_EQ(plain->plan.tasks.size(), 5u);
}

// A kernel linked to its launch costs its time on the device (its waits are the plan's), and the derived
// run's step is the host's: 60 us between markers.
TEST(DerivePlanTest, LaunchedKernelsCostTheirDeviceTimeAndTheStepIsTheHosts) {
  auto d = derive_plan(launched(4), "h.json");
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/launched.json";
  ASSERT_TRUE(traces::write_trace(path, d->trace).is_ok());
  auto run = read_recorded_run(path);
  ASSERT_TRUE(run.is_ok()) << run.status().message();
  std::map<std::string, double> mean;
  for (const KeyFit& f : fit_keys(task_samples(*run, 1, 2)))
    mean[f.cost_key] = f.mean_s;
  EXPECT_NEAR(mean.at("fwd"), 9e-6, 1e-12);   // not the 10 us it sat behind the host
  EXPECT_NEAR(mean.at("adam"), 5e-6, 1e-12);  // not from the all-reduce's end
  EXPECT_NEAR(mean.at("host tail"), 59.5e-6, 1e-12);
  auto step = recorded_step_time(*run, 1, 2);
  ASSERT_TRUE(step.is_ok());
  EXPECT_NEAR(*step, 60e-6, 1e-12);
}

// launched() with each step's first kernel starting 3.5 us after its launch ended (at S+4, not S+1) and no
// other stream's task ending meanwhile: a wait the trace does not explain (the launch's own latency, device
// work the profiler did not record). The host piece that ends with the launch runs on to the kernel's start,
// so the replay keeps the wait, and the kernel still costs its device time.
TEST(DerivePlanTest, AWaitAfterALaunchThatNothingExplainsStaysInTheHostPiece) {
  traces::Trace t = launched(4);
  for (Event& e : t.events) {
    if (e.name != "fwd") continue;
    e.ts_us += 3;
    e.dur_us -= 3;
  }
  auto d = derive_plan(t, "w.json");
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  std::map<std::string, const models::Task*> by_name;
  for (const models::Task& task : d->plan.tasks)
    by_name[task.name] = &task;
  ASSERT_TRUE(by_name.count("host #1") && by_name.count("host tail"));
  EXPECT_EQ(by_name["fwd"]->deps, std::vector<int>{by_name["host #1"]->id});
  std::map<std::pair<int64_t, int64_t>, double> host_us;
  for (const Event& e : d->trace.events) {
    if (e.category != Category::kHost) continue;
    host_us[{e.rank, *e.step}] += e.dur_us;
    if (e.name == "host #1") {
      EXPECT_NEAR(e.dur_us, 4, 1e-9);  // to the kernel's start; 0.5 us to its launch's end
    }
  }
  for (const auto& [rank_step, us] : host_us)  // the pieces still tile the step (the last: see above)
    EXPECT_NEAR(us, 60, 1e-9) << rank_step.first << " " << rank_step.second;
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/waited.json";
  ASSERT_TRUE(traces::write_trace(path, d->trace).is_ok());
  auto run = read_recorded_run(path);
  ASSERT_TRUE(run.is_ok()) << run.status().message();
  for (const KeyFit& f : fit_keys(task_samples(*run, 1, 2))) {
    if (f.cost_key == "fwd") {
      EXPECT_NEAR(f.mean_s, 6e-6, 1e-12);
    }
  }
}

// A derived run is measured by its profiler step markers, on its slowest rank: from a step's start to the
// next step's start, the last step's estimated (its marker's end, 55 us, plus the 5 us the step before left
// after its marker), unless the device's pace is slower (here it is not: 50 us of kernels a step). A window
// from step 0 needs no step before it.
TEST(DerivePlanTest, ADerivedRunIsMeasuredByItsStepMarkers) {
  const traces::Trace t = launched(4);
  auto d = derive_plan(t, "m.json");
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/markers.json";
  ASSERT_TRUE(traces::write_trace(path, d->trace).is_ok());
  auto run = read_recorded_run(path);
  ASSERT_TRUE(run.is_ok()) << run.status().message();
  ASSERT_EQ(run->step_spans.size(), 2u);
  EXPECT_NEAR(*recorded_step_time(*run, 2, 2), 60e-6, 1e-12);
  EXPECT_NEAR(*recorded_step_time(*run, 0, 0), 60e-6, 1e-12);
  // The last step: to its estimated next start, 55 + 5 us.
  EXPECT_NEAR(*recorded_step_time(*run, 3, 3), 60e-6, 1e-12);
  EXPECT_NEAR(*recorded_step_time(*run, 0, 3), 60e-6, 1e-12);
  // A run without spans (the executors' recordings) keeps the events' ends and needs a step before.
  run->step_spans.clear();
  EXPECT_NEAR(*recorded_step_time(*run, 2, 2), 60e-6, 1e-12);
  // Its last event is the last step's host tail, to the estimated next start: its marker's end (55 us) plus the
  // 5 us the step before left after its marker.
  EXPECT_NEAR(*recorded_step_time(*run, 3, 3), 60e-6, 1e-12);
  EXPECT_FALSE(recorded_step_time(*run, 0, 0).is_ok());
  // Spans that are not one [start, end] per runner step, or end before they start: one line naming the field.
  for (const char* bad : {R"([{"rank": 0, "spans": [[0, 1]]}])", R"([{"rank": 0, "spans": "x"}])",
                          R"([{"rank": 0, "spans": [[5, 1], [0, 1], [0, 1], [0, 1]]}])", R"({})"}) {
    traces::Trace broken = d->trace;
    nlohmann::json config = nlohmann::json::parse(broken.metadata.config_json);
    config["step_spans_us"] = nlohmann::json::parse(bad);
    broken.metadata.config_json = config.dump();
    const std::string bad_path = std::string(std::getenv("TEST_TMPDIR")) + "/bad_spans.json";
    ASSERT_TRUE(traces::write_trace(bad_path, broken).is_ok());
    auto refused = read_recorded_run(bad_path);
    ASSERT_FALSE(refused.is_ok()) << bad;
    EXPECT_EQ(refused.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(refused.status().message().find(bad_path + ": field 'metadata.config.step_spans_us': not a list"),
              std::string::npos)
        << refused.status().message();
  }
}

// A dependency that the template step shows but another step breaks (the other stream's task ended after
// the task started) is a coincidence: the task depends on the one that ended in its idle gap in every step.
TEST(DerivePlanTest, DependenciesHoldInEveryStepOfTheTemplatesRank) {
  // In the template step (1) the optimizer's stream sits idle from bwd2's end (S+30) to S+45 and the
  // all-reduce ends at S+40, in the gap; in step 2 the optimizer starts at S+35, before the all-reduce ends.
  traces::Trace broken = two_ranks(3);
  for (Event& e : broken.events) {
    const bool step2 = e.ts_us >= 130 && e.ts_us < 190;
    if (step2 && e.name == "adam") e.ts_us -= 10;  // S+35: before the all-reduce's end (S+40)
  }
  auto b = derive_plan(broken, "b.json");
  ASSERT_TRUE(b.is_ok()) << b.status().message();
  std::map<std::string, const models::Task*> by_name;
  for (const models::Task& task : b->plan.tasks)
    by_name[task.name] = &task;
  EXPECT_TRUE(by_name["adam"]->deps.empty());  // it did not wait for the all-reduce after all
  EXPECT_EQ(derive_plan(two_ranks(3), "ok.json")->plan.tasks[3].deps, std::vector<int>{4});
}

// A device-bound loop that never synchronises: the host launches a step's 10 kernels at 5 us each (50 us, then
// 10 us of its own before the next marker: 60 us a step), the device runs them at 30 us each (300 us a step),
// so the host runs steps ahead and the device's queue carries across the markers. Its markers come every
// 60 us; the loop's pace is the device's, 300 us a step, what the measured step and the twin's replay are.
// Measured by the markers alone the window would end with the device draining every step before it.
TEST(DerivePlanTest, ADeviceBoundStepIsMeasuredAtTheDevicesPaceWhenTheHostRunsAhead) {
  traces::Trace t;
  t.metadata.world_size = 1;
  t.metadata.source = traces::Source::kImported;
  t.metadata.streams = {"host thread", "stream 7"};
  double device_free = 0;
  for (int s = 0; s < 4; ++s) {
    const double start = 60.0 * s;
    Event marker = event("ProfilerStep#" + std::to_string(s), Category::kHost, 0, 0, start, 58);
    t.events.push_back(marker);
    for (int k = 0; k < 10; ++k) {
      const double launch = start + 5.0 * k;
      const double begin = std::max(device_free, launch + 4.5);
      Event kernel = event("k" + std::to_string(k), Category::kCompute, 0, 1, begin, 30);
      kernel.host_ts_us = launch;
      kernel.host_dur_us = 4.5;
      t.events.push_back(kernel);
      device_free = begin + 30;
    }
  }
  auto d = derive_plan(t, "ahead.json");
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/ahead.json";
  ASSERT_TRUE(traces::write_trace(path, d->trace).is_ok());
  auto run = read_recorded_run(path);
  ASSERT_TRUE(run.is_ok()) << run.status().message();
  auto step = recorded_step_time(*run, 1, run->runner_steps - 1);
  ASSERT_TRUE(step.is_ok()) << step.status().message();
  EXPECT_NEAR(*step, 300e-6, 1e-12);
}

}  // namespace
}  // namespace clustertwin::models
