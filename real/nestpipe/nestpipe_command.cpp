// clustertwin run nestpipe: one rank's work. The command line
// (cli/real_command.cpp) only parses; this file checks the flags, builds the
// plan from the run's own data, runs it with the trainer's bodies and
// reports.

#include "real/nestpipe/nestpipe_command.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/json.h"
#include "models/nestpipe/key_stats.h"
#include "models/nestpipe/plans.h"
#include "models/nestpipe/workload.h"
#include "models/plan/plan_json.h"
#include "real/core/communicator.h"
#include "real/core/device.h"
#include "real/core/dist_env.h"
#include "real/core/plan_runner.h"
#include "real/core/tracer.h"
#include "real/nestpipe/run_checkpoints.h"
#include "real/nestpipe/trainer.h"

namespace clustertwin::real::nestpipe {

using clustertwin::models::nestpipe::Batch;
using clustertwin::models::nestpipe::build_plan;
using clustertwin::models::nestpipe::measured_key_stats;
using clustertwin::models::nestpipe::step_sizes;
using clustertwin::models::nestpipe::StepSizes;
using clustertwin::models::nestpipe::Variant;
using clustertwin::models::nestpipe::variant_from_name;
using clustertwin::models::nestpipe::Workload;
using Json = nlohmann::ordered_json;
namespace {

constexpr char kRunVariants[] = "torchrec, semisync, dbp, fwp, nestpipe";

Status check_args(const NestPipeArgs& a, Variant* variant) {
  if (a.variant == "2dsp") {
    return Status::invalid_argument(
        "variant 2dsp: twin-only (its replicas synchronise periodically, not every step); run it with "
        "'clustertwin sim', or run one of " +
        std::string(kRunVariants));
  }
  const std::optional<Variant> v = variant_from_name(a.variant);
  if (!v) {
    return Status::invalid_argument("variant '" + a.variant + "': unknown variant (allowed: " + kRunVariants + ")");
  }
  *variant = *v;
  if (a.steps < 1) return Status::invalid_argument("steps " + std::to_string(a.steps) + ": must be at least 1");
  if (a.batch < 1) return Status::invalid_argument("batch " + std::to_string(a.batch) + ": must be at least 1");
  if (a.micro_batches < 1 || a.batch % a.micro_batches != 0) {
    return Status::invalid_argument("micro_batches " + std::to_string(a.micro_batches) + ": must divide batch " +
                                    std::to_string(a.batch));
  }
  if (a.optimizer != "sgd" && a.optimizer != "adagrad") {
    return Status::invalid_argument("optimizer '" + a.optimizer + "': unknown (allowed: sgd, adagrad)");
  }
  if (a.dense_optimizer != "sgd" && a.dense_optimizer != "adam") {
    return Status::invalid_argument("dense_optimizer '" + a.dense_optimizer + "': unknown (allowed: sgd, adam)");
  }
  if (!(a.lr > 0) || !std::isfinite(a.lr)) return Status::invalid_argument("lr " + json_number(a.lr) + ": must be > 0");
  if (!(a.dense_lr > 0) || !std::isfinite(a.dense_lr)) {
    return Status::invalid_argument("dense_lr " + json_number(a.dense_lr) + ": must be > 0");
  }
  if (!(a.zipf > 0) || !std::isfinite(a.zipf)) {
    return Status::invalid_argument("zipf " + json_number(a.zipf) + ": must be > 0");
  }
  if (!(a.overlap >= 0 && a.overlap <= 1)) {
    return Status::invalid_argument("overlap " + json_number(a.overlap) + ": must be in [0, 1]");
  }
  if (a.vocab < 1 || a.vocab > (int64_t{1} << 53)) {
    return Status::invalid_argument("vocab " + std::to_string(a.vocab) + ": must be in [1, 2^53]");
  }
  if (a.no_patch && *v != Variant::kDbp && *v != Variant::kNestPipe) {
    return Status::invalid_argument("no_patch: variant " + a.variant + " has no patch (only dbp and nestpipe)");
  }
  if (a.threads < 1) return Status::invalid_argument("threads " + std::to_string(a.threads) + ": must be >= 1");
  if (!(a.timeout_s > 0)) return Status::invalid_argument("timeout_s " + json_number(a.timeout_s) + ": must be > 0");
  if (a.store != "host" && a.store != "device") {
    return Status::invalid_argument("store '" + a.store + "': unknown (allowed: host, device)");
  }
  return check_checkpoint_args(a);
}

Json options_json(const NestPipeArgs& a, int world) {
  return {{"variant", a.variant},
          {"world_size", world},
          {"steps", a.steps},
          {"micro_batches", a.micro_batches},
          {"batch", a.batch},
          {"model", a.model},
          {"optimizer", a.optimizer},
          {"dense_optimizer", a.dense_optimizer},
          {"lr", a.lr},
          {"dense_lr", a.dense_lr},
          {"zipf", a.zipf},
          {"overlap", a.overlap},
          {"vocab", a.vocab},
          {"criteo", a.criteo},
          {"no_patch", a.no_patch},
          {"seed", a.seed},
          {"threads", a.threads},
          {"store", a.store}};
}

Json sizes_json(const StepSizes& s) {
  return {{"input_bytes", s.input_bytes},
          {"key_bytes", s.key_bytes},
          {"owner_rows_dedup", s.owner_rows_dedup},
          {"owner_rows_per_requester", s.owner_rows_per_requester},
          {"row_bytes", s.row_bytes},
          {"emb_a2a_bytes", s.emb_a2a_bytes},
          {"micro_emb_a2a_bytes", s.micro_emb_a2a_bytes},
          {"clustered_micro_emb_a2a_bytes", s.clustered_micro_emb_a2a_bytes},
          {"patch_rows", s.patch_rows},
          {"dense_forward_flops", s.dense_forward_flops},
          {"dense_param_bytes", s.dense_param_bytes},
          {"sharding_group", s.sharding_group},
          {"lookup_requests", s.lookup_requests}};
}

// The batch a traced task worked on, or -1 for the pipeline's fill and
// drain, where tasks do nothing.
int64_t batch_of_event(const traces::Event& e, const models::Plan& plan, const Trainer& trainer) {
  if (!e.task_id || !e.step) return -1;
  const auto b = trainer.batch_of(plan.tasks[static_cast<size_t>(*e.task_id)], *e.step);
  return b ? *b : -1;
}

// When each batch's last task ended (microseconds from the tracer's
// start), from the events of the window the trainer ran last.
void note_batch_ends(const std::vector<traces::Event>& events, const models::Plan& plan, const Trainer& trainer,
                     std::vector<double>* end) {
  for (const traces::Event& e : events) {
    const int64_t b = batch_of_event(e, plan, trainer);
    if (b >= 0) (*end)[b] = std::max((*end)[b], e.end_us());
  }
}

// Step time of batch b: when its last task ended minus when batch b-1's
// did. The median skips the first two batches this process trained (the
// pipeline fills).
double median_step_ms(const std::vector<double>& end, int64_t first, int steps) {
  std::vector<double> ms;
  for (int64_t b = std::min<int64_t>(first + 2, steps - 1); b < steps; ++b) {
    if (b >= first + 1) ms.push_back((end[b] - end[b - 1]) / 1000.0);
  }
  if (ms.empty()) return first < steps ? end[first] / 1000.0 : 0.0;
  std::sort(ms.begin(), ms.end());
  return ms.size() % 2 == 1 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
}

StatusOr<std::unique_ptr<BatchSource>> make_source(const NestPipeArgs& a, const spec::RecommenderSpec& spec,
                                                   int features, const real::DistEnv& env) {
  if (!a.criteo.empty()) {
    if (spec.family != "dlrm" || spec.dense_features != 13 || features != 26) {
      return Status::invalid_argument("criteo: needs a DLRM with 13 dense features and 26 tables; model " + a.model +
                                      " is not one");
    }
    CriteoSourceOptions c;
    c.path = a.criteo;
    c.vocabulary = a.vocab;
    c.samples = a.batch;
    c.rank = env.rank;
    c.world = env.world_size;
    c.batches = a.steps;
    return criteo_source(c);
  }
  SyntheticSourceOptions s;
  s.keys.vocabulary = a.vocab;
  s.keys.zipf_exponent = a.zipf;
  s.keys.keys_per_sample = features;
  s.keys.batch_overlap = a.overlap;
  s.keys.seed = a.seed;
  s.dense_features = spec.dense_features;
  s.samples = a.batch;
  s.rank = env.rank;
  s.world = env.world_size;
  return synthetic_source(s);
}

traces::Metadata metadata_for(const real::Communicator& comm, const models::Plan& plan, const std::string& model,
                              const std::string& config_json, uint64_t seed) {
  traces::Metadata m = real::real_run_metadata(comm, plan.system, plan.variant, config_json, seed);
  m.model = model;
  m.streams = plan.streams;
  return m;
}

// The --model's spec, of a family the trainer runs.
StatusOr<spec::RecommenderSpec> trainer_spec(const std::string& model) {
  auto spec = spec::recommender_spec(model);
  if (!spec.is_ok()) return spec.status().with_context("model");
  if (spec->family != "dlrm" && spec->family != "hstu") {
    return Status::invalid_argument("model " + model + ": family " + spec->family + " (allowed: dlrm, hstu)");
  }
  return spec;
}

// A run's step plan and the sizes it was built from.
struct SizedPlan {
  StepSizes sizes;
  models::Plan plan;
};

// The plan's sizes come from this run's own first two batches, so a trace
// replayed by the twin carries the byte counts that actually moved.
StatusOr<SizedPlan> plan_from_own_batches(const NestPipeArgs& a, Variant variant, const spec::RecommenderSpec& spec,
                                          BatchSource& source) {
  auto first = source.step_keys(0);
  if (!first.is_ok()) return first.status();
  std::vector<Batch> second;
  if (a.steps > 1) {
    auto keys = source.step_keys(1);
    if (!keys.is_ok()) return keys.status();
    second = std::move(*keys);
  }
  auto stats = measured_key_stats(*first, second, a.micro_batches);
  if (!stats.is_ok()) return stats.status();
  Workload workload;
  workload.spec = &spec;
  workload.batch_per_worker = a.batch;
  workload.micro_batches = a.micro_batches;
  auto sizes = step_sizes(workload, *stats);
  if (!sizes.is_ok()) return sizes.status();
  auto plan = build_plan(variant, *sizes, a.micro_batches);
  if (!plan.is_ok()) return plan.status();
  return SizedPlan{*sizes, std::move(*plan)};
}

TrainerOptions trainer_options(const NestPipeArgs& a, Variant variant, const spec::RecommenderSpec& spec,
                               const c10::Device& device) {
  TrainerOptions t;
  t.variant = variant;
  t.steps = a.steps;
  t.micro_batches = a.micro_batches;
  t.samples = a.batch;
  t.spec = spec;
  t.vocabulary = a.vocab;
  t.embedding_optimizer = a.optimizer == "sgd"
                              ? EmbeddingOptimizer::sgd(static_cast<float>(a.lr))
                              : EmbeddingOptimizer::rowwise_adagrad(static_cast<float>(a.lr), 1e-8f, 0.f);
  t.dense_optimizer.kind = a.dense_optimizer == "adam" ? DenseOptimizer::Kind::kAdam : DenseOptimizer::Kind::kSgd;
  t.dense_optimizer.lr = static_cast<float>(a.dense_lr);
  t.patch = !a.no_patch;
  t.seed = a.seed;
  t.device = device;
  t.store_on_device = a.store == "device";
  return t;
}

// What every rank's trainer counted, gathered across ranks.
struct RankTotals {
  at::Tensor totals;     // the losses of each step summed over ranks, then the stale rows, then the patched rows
  at::Tensor stale_all;  // 4 per rank: its earliest stale row's batch (INT64_MAX: none), key, read and expected
};

// Every rank's losses, stale and patched rows; the earliest stale row.
StatusOr<RankTotals> gather_totals(real::Communicator& comm, real::Group& world, const Trainer& tr, int steps) {
  RankTotals t;
  t.totals = at::zeros({steps + 2}, at::kDouble);
  for (int b = 0; b < steps; ++b)
    t.totals[b] = tr.losses()[b];
  t.totals[steps] = static_cast<double>(tr.stale_rows());
  t.totals[steps + 1] = static_cast<double>(tr.patched_rows());
  CT_RETURN_IF_ERROR(comm.all_reduce(world, t.totals));
  const std::optional<StaleRow> mine = tr.first_stale();
  at::Tensor stale_in = at::tensor(std::vector<int64_t>{mine ? mine->batch : INT64_MAX, mine ? mine->key : 0,
                                                        mine ? mine->read : 0, mine ? mine->expected : 0},
                                   at::kLong);
  t.stale_all = at::zeros({4 * comm.world_size()}, at::kLong);
  CT_RETURN_IF_ERROR(comm.all_gather(world, t.stale_all, stale_in));
  return t;
}

// The trace keeps the tasks that did work (fill and drain steps do none).
Status write_trace(const NestPipeArgs& a, real::Communicator& comm, real::Group& world,
                   const std::vector<traces::Event>& events, const SizedPlan& planned, const Trainer& tr) {
  real::Tracer kept(comm.rank());
  for (const traces::Event& e : events) {
    if (batch_of_event(e, planned.plan, tr) >= 0) kept.record(e);
  }
  const Json config = {{"options", options_json(a, comm.world_size())},
                       {"plan", Json::parse(models::plan_to_json(planned.plan))},
                       {"sizes", sizes_json(planned.sizes)},
                       {"runner_steps", tr.runner_steps()},
                       {"prologue_steps", Trainer::kPrologue}};
  return kept.gather_and_write(comm, world, metadata_for(comm, planned.plan, a.model, config.dump(), a.seed), a.trace);
}

// Rank 0's report of the run.
struct RunSummary {
  int world_size = 0;
  double first_loss = 0, last_loss = 0;  // averaged over ranks
  int64_t stale = 0, patched = 0;
  double step_ms = 0;
  int first_rank = -1;  // the rank that owns the earliest stale row, -1 when none
  Json first_stale;     // null when none
  std::string first_stale_text;
};

RunSummary summarise(const NestPipeArgs& a, const RankTotals& t, int world_size, double step_ms) {
  RunSummary s;
  s.world_size = world_size;
  s.first_loss = t.totals[0].item<double>() / world_size;
  s.last_loss = t.totals[a.steps - 1].item<double>() / world_size;
  s.stale = static_cast<int64_t>(t.totals[a.steps].item<double>());
  s.patched = static_cast<int64_t>(t.totals[a.steps + 1].item<double>());
  s.step_ms = step_ms;
  for (int r = 0; r < world_size; ++r) {
    const int64_t b = t.stale_all[4 * r].item<int64_t>();
    if (b != INT64_MAX && (s.first_rank < 0 || b < t.stale_all[4 * s.first_rank].item<int64_t>())) s.first_rank = r;
  }
  if (s.first_rank >= 0) {
    const int64_t* f = t.stale_all.data_ptr<int64_t>() + 4 * s.first_rank;
    s.first_stale = {{"batch", f[0]}, {"key", f[1]}, {"owner", s.first_rank}, {"read", f[2]}, {"expected", f[3]}};
    s.first_stale_text = "batch " + std::to_string(f[0]) + ", key " + std::to_string(f[1]) + " (owner rank " +
                         std::to_string(s.first_rank) + ") was read at version " + std::to_string(f[2]) +
                         ", expected version " + std::to_string(f[3]);
  }
  return s;
}

void print_json(const NestPipeArgs& a, const RunSummary& s, const c10::Device& device, const std::string& backend) {
  const Json out = {{"variant", a.variant},
                    {"no_patch", a.no_patch},
                    {"device", device.is_cuda() ? "cuda" : "cpu"},
                    {"backend", backend},
                    {"store", a.store},
                    {"world_size", s.world_size},
                    {"steps", a.steps},
                    {"micro_batches", a.micro_batches},
                    {"batch", a.batch},
                    {"median_step_ms", s.step_ms},
                    {"first_loss", s.first_loss},
                    {"last_loss", s.last_loss},
                    {"stale_rows", s.stale},
                    {"patched_rows", s.patched},
                    {"first_stale", s.first_stale}};
  std::fputs(json_document(out).c_str(), stdout);
}

void print_table(const NestPipeArgs& a, const RunSummary& s, const spec::RecommenderSpec& spec,
                 const c10::Device& device, const std::string& comm_description) {
  std::printf("# clustertwin run nestpipe: %d ranks, %s, %s, batch %d per rank in %d micro-batches, %s/%s\n",
              s.world_size, comm_description.c_str(), a.model.c_str(), a.batch, a.micro_batches, a.optimizer.c_str(),
              a.dense_optimizer.c_str());
  std::printf("# embedding store: %lld rows x %d in %s\n", static_cast<long long>(a.vocab), spec.embedding_dim,
              a.store == "device" ? "device memory" : (device.is_cuda() ? "pinned host memory" : "host memory"));
  // dbp and nestpipe without their patch are the negative control: the label says so.
  const std::string label = a.variant + (a.no_patch ? "-nopatch" : "");
  std::printf("  %-16s %6s %17s %11s %11s %11s %13s\n", "variant", "steps", "median step (ms)", "first loss",
              "last loss", "stale rows", "patched rows");
  std::printf("  %-16s %6d %17.3f %11.6f %11.6f %11lld %13lld\n", label.c_str(), a.steps, s.step_ms, s.first_loss,
              s.last_loss, static_cast<long long>(s.stale), static_cast<long long>(s.patched));
  if (s.first_rank >= 0) std::printf("# first stale row: %s\n", s.first_stale_text.c_str());
  if (!a.trace.empty()) std::printf("# trace: %s\n", a.trace.c_str());
}

// What the training part of a run gives the report.
struct Trained {
  std::vector<traces::Event> events;  // of the last window (the only one when tracing)
  double step_ms = 0;
};

// Trains batches [first, steps) window by window: one window when nothing is
// checkpointed, else up to each multiple of checkpoint_every, followed by
// that step's checkpoint.
StatusOr<Trained> train(const NestPipeArgs& a, real::Communicator& comm, real::Group& world, const SizedPlan& planned,
                        Trainer& trainer, int64_t first, const real::KillHooks& hooks) {
  real::Tracer tracer(comm.rank());
  std::vector<double> batch_end(a.steps, 0.0);
  const int64_t every = a.checkpoint_every;
  for (int64_t begin = first; begin < a.steps;) {
    const int64_t end = every > 0 ? std::min<int64_t>(a.steps, (begin / every + 1) * every) : a.steps;
    trainer.set_window(begin, end);
    real::RunnerOptions runner_options;
    runner_options.steps = trainer.runner_steps();
    runner_options.check_order = !a.no_check_order;
    real::PlanRunner runner(planned.plan, comm, tracer, runner_options);
    trainer.install(runner);
    CT_RETURN_IF_ERROR(comm.barrier(world));
    if (begin == first) tracer.start();
    if (begin != first) tracer.clear();
    CT_RETURN_IF_ERROR(runner.run().with_context("nestpipe/" + a.variant));
    note_batch_ends(tracer.events(), planned.plan, trainer, &batch_end);
    if (every > 0 && end % every == 0) {
      CT_RETURN_IF_ERROR(write_checkpoint(a, comm, world, trainer, end, hooks.checkpoint));
    }
    begin = end;
  }
  return Trained{tracer.events(), median_step_ms(batch_end, first, a.steps)};
}

// The trainer, from a checkpoint with --resume; `first` is its first batch to train.
StatusOr<std::unique_ptr<Trainer>> make_trainer(const NestPipeArgs& a, const TrainerOptions& options,
                                                std::unique_ptr<BatchSource> source, const real::DistEnv& env,
                                                int64_t* first) {
  auto trainer = Trainer::create(options, std::move(source), env.rank, env.world_size);
  if (!trainer.is_ok()) return trainer.status();
  *first = 0;
  if (!a.resume) return trainer;
  auto step = resume_trainer(a, env.rank, env.world_size, **trainer);
  if (!step.is_ok()) return step.status();
  *first = *step;
  return trainer;
}

}  // namespace

Status run_nestpipe(const NestPipeArgs& a) {
  // Everything a user can get wrong is checked before the rendezvous, so a
  // bad flag or file is one line and exit 2 on every rank, never a hang.
  auto env = real::read_dist_env();
  if (!env.is_ok()) return env.status();
  Variant variant = Variant::kTorchRec;
  CT_RETURN_IF_ERROR(check_args(a, &variant));
  auto hooks = read_kill_hooks(env->rank);
  if (!hooks.is_ok()) return hooks.status();
  auto device = real::choose_device(a.device, env->local_rank, real::device_support());
  if (!device.is_ok()) return device.status();
  auto spec = trainer_spec(a.model);
  if (!spec.is_ok()) return spec.status();
  const int features = spec->family == "hstu" ? spec->sequence_length + 1 : static_cast<int>(spec->tables.size());
  auto source = make_source(a, *spec, features, *env);
  if (!source.is_ok()) return source.status();
  auto planned = plan_from_own_batches(a, variant, *spec, **source);
  if (!planned.is_ok()) return planned.status();

  // One intra-op thread per rank by default: ranks share the machine's
  // cores, and one thread keeps every CPU kernel's reduction order fixed.
  at::set_num_threads(a.threads);
  TrainerOptions options = trainer_options(a, variant, *spec, *device);
  options.kill_at_batch = hooks->step;
  int64_t first = 0;
  auto trainer = make_trainer(a, options, std::move(*source), *env, &first);
  if (!trainer.is_ok()) return trainer.status();

  auto comm = real::connect_for_run(*env, a.device, a.backend, a.timeout_s);
  if (!comm.is_ok()) return comm.status();
  auto world = (*comm)->world(0);
  if (!world.is_ok()) return world.status();
  auto trained = train(a, **comm, **world, *planned, **trainer, first, *hooks);
  if (!trained.is_ok()) return trained.status();
  const Trainer& tr = **trainer;

  if (!a.dump_state.empty()) CT_RETURN_IF_ERROR(write_state_dump(a.dump_state, tr.state_dump()));
  auto totals = gather_totals(**comm, **world, tr, a.steps);
  if (!totals.is_ok()) return totals.status();
  if (!a.trace.empty()) CT_RETURN_IF_ERROR(write_trace(a, **comm, **world, trained->events, *planned, tr));
  if ((*comm)->rank() != 0) return Status::ok();

  const RunSummary s = summarise(a, *totals, (*comm)->world_size(), trained->step_ms);
  if (a.json) {
    print_json(a, s, *device, (*comm)->backend());
  } else {
    print_table(a, s, *spec, *device, (*comm)->describe());
  }
  std::fflush(stdout);
  if (a.strict && s.stale > 0) {
    return Status::internal("strict: the version oracle found " + std::to_string(s.stale) +
                            " stale rows; the first: " + s.first_stale_text);
  }
  return Status::ok();
}

}  // namespace clustertwin::real::nestpipe
