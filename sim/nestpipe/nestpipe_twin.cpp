#include "sim/nestpipe/nestpipe_twin.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "common/parallel.h"
#include "common/text.h"
#include "models/nestpipe/key_stats.h"
#include "models/nestpipe/workload.h"
#include "models/spec/recommender.h"

namespace clustertwin::sim::nestpipe {
namespace {

using models::nestpipe::Variant;

double layer_exposed(const SimResult& r, const std::string& name) {
  for (const LayerMetrics& l : r.breakdown) {
    if (l.name == name) return l.exposed_s;
  }
  return 0;
}

double layer_busy(const SimResult& r, const std::string& name) {
  for (const LayerMetrics& l : r.breakdown) {
    if (l.name == name) return l.busy_s;
  }
  return 0;
}

NestPipeRow row_of(const SimResult& r, const NestPipeSetup& setup) {
  NestPipeRow row;
  row.variant = r.variant;
  row.workers = r.workers;
  row.step_ms = r.step_time_s * 1e3;
  row.qps = r.step_time_s > 0 ? static_cast<double>(setup.batch_per_worker) * r.workers / r.step_time_s : 0;
  row.compute_ms = layer_exposed(r, "compute") * 1e3;
  row.exposed_comm_ms = layer_exposed(r, "all2all") * 1e3;
  row.comm_ms = layer_busy(r, "all2all") * 1e3;
  row.lookup_ms = layer_exposed(r, "lookup") * 1e3;
  row.other_ms = std::max(0.0, row.step_ms - row.compute_ms - row.exposed_comm_ms - row.lookup_ms);
  row.wall_s = r.wall_s;
  return row;
}

// Speedup against torchrec at the same worker count; scaling efficiency
// against the same variant at the fewest workers of the sweep.
void fill_relative(std::vector<NestPipeRow>* rows) {
  std::map<int, double> torchrec;
  std::map<std::string, std::pair<int, double>> base;  // variant -> (fewest workers, per-worker throughput)
  for (const NestPipeRow& r : *rows) {
    if (r.variant == "torchrec") torchrec[r.workers] = r.step_ms;
    auto [it, fresh] = base.emplace(r.variant, std::make_pair(r.workers, r.qps / r.workers));
    if (!fresh && r.workers < it->second.first) it->second = {r.workers, r.qps / r.workers};
  }
  for (NestPipeRow& r : *rows) {
    auto t = torchrec.find(r.workers);
    r.speedup = t != torchrec.end() && r.step_ms > 0 ? t->second / r.step_ms : 0;
    const double per_worker = base[r.variant].second;
    r.scaling_efficiency = per_worker > 0 ? (r.qps / r.workers) / per_worker : 0;
  }
}

std::string fixed(double v, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, v);
  return buffer;
}

}  // namespace

Status validate(const NestPipeSetup& s) {
  auto spec = spec::recommender_spec(s.model);
  if (!spec.is_ok()) return Status::invalid_argument("model: " + spec.status().message());
  if (s.batch_per_worker < 1) {
    return Status::invalid_argument("batch_per_worker " + std::to_string(s.batch_per_worker) + ": must be at least 1");
  }
  // The key generator numbers a batch's key slots in 32 bits (key_generator.h).
  const double slots = s.batch_per_worker * std::ceil(spec->embedding_lookups_per_sample());
  if (slots >= 4294967296.0) {
    return Status::invalid_argument("batch_per_worker " + std::to_string(s.batch_per_worker) + ": " + fixed(slots, 0) +
                                    " key slots (batch x " + fixed(std::ceil(spec->embedding_lookups_per_sample()), 0) +
                                    " lookups per sample) exceed the key generator's limit of 2^32");
  }
  if (s.micro_batches < 1 || s.batch_per_worker % s.micro_batches != 0) {
    return Status::invalid_argument("micro_batches " + std::to_string(s.micro_batches) + ": must divide the batch of " +
                                    std::to_string(s.batch_per_worker));
  }
  if (!(s.zipf_exponent > 0 && s.zipf_exponent <= 100)) {
    // Beyond ~10 every draw is the most popular key already; 100 bounds the sums' exponents.
    return Status::invalid_argument("zipf_exponent " + format_number("%g", s.zipf_exponent) + ": must be in (0, 100]");
  }
  if (!(s.batch_overlap >= 0 && s.batch_overlap <= 1)) {
    return Status::invalid_argument("batch_overlap " + fixed(s.batch_overlap, 3) + ": must be in [0, 1]");
  }
  if (s.samples_per_user < 0) {
    return Status::invalid_argument("samples_per_user " + std::to_string(s.samples_per_user) +
                                    ": must be >= 0 (0: the model's default)");
  }
  if (!(s.user_shared_fraction >= 0 && s.user_shared_fraction <= 1)) {
    return Status::invalid_argument("user_shared_fraction " + fixed(s.user_shared_fraction, 3) + ": must be in [0, 1]");
  }
  if (s.replica_sync_every < 1) {
    return Status::invalid_argument("replica_sync_every " + std::to_string(s.replica_sync_every) +
                                    ": must be at least 1");
  }
  if (!(s.launch_latency_s >= 0 && s.launch_latency_s <= 1)) {
    return Status::invalid_argument("launch_latency_s " + format_number("%g", s.launch_latency_s) +
                                    ": must be in [0, 1] s (a kernel launch costs microseconds)");
  }
  if (s.kernels_per_layer < 0) {
    return Status::invalid_argument("kernels_per_layer " + std::to_string(s.kernels_per_layer) + ": must be >= 0");
  }
  if (s.sharding_group < 1) {
    return Status::invalid_argument("sharding_group " + std::to_string(s.sharding_group) + ": must be at least 1");
  }
  return Status::ok();
}

namespace {

// The generator behind the setup's data: one key space over all tables, the spec's lookups per sample.
models::nestpipe::KeyGeneratorOptions key_options(const NestPipeSetup& setup, const spec::RecommenderSpec& spec) {
  models::nestpipe::KeyGeneratorOptions keys;
  keys.vocabulary = 0;
  for (const spec::EmbeddingTableSpec& t : spec.tables)
    keys.vocabulary += t.rows;
  keys.keys_per_sample = static_cast<int>(std::lround(spec.embedding_lookups_per_sample()));
  keys.zipf_exponent = setup.zipf_exponent;
  keys.batch_overlap = setup.batch_overlap;
  keys.samples_per_user = nestpipe_samples_per_user(setup);
  keys.user_shared_fraction = setup.user_shared_fraction;
  keys.seed = setup.seed;
  return keys;
}

// Assumption: row-wise Adagrad (TorchRec's usual embedding optimizer) keeps one fp32 per row, synchronised
// with the row (DMPCollection.sync's include_optimizer_state defaults to true).
constexpr int64_t kOptimizerStateBytesPerRow = 4;

}  // namespace

int nestpipe_samples_per_user(const NestPipeSetup& setup) {
  if (setup.samples_per_user > 0) return setup.samples_per_user;
  return setup.model == "hstu-industrial" ? 8 : 1;
}

StatusOr<double> nestpipe_dense_call_overhead(const NestPipeSetup& setup) {
  auto spec = spec::recommender_spec(setup.model);
  if (!spec.is_ok()) return Status::invalid_argument("model: " + spec.status().message());
  return static_cast<double>(spec->dense.size()) * setup.kernels_per_layer * setup.launch_latency_s;
}

Status add_replica_sync(const NestPipeSetup& setup, int workers, models::nestpipe::StepSizes* sizes) {
  const int group = std::min(setup.sharding_group, workers);
  sizes->replica_sync_rows = sizes->replica_sync_bytes = 0;
  if (workers <= group) return Status::ok();
  if (workers % group != 0) {
    return Status::invalid_argument("sharding_group " + std::to_string(group) + ": must divide the workers (" +
                                    std::to_string(workers) + "; 2dsp replicates whole groups)");
  }
  auto spec = spec::recommender_spec(setup.model);
  if (!spec.is_ok()) return spec.status();
  const models::nestpipe::KeyGeneratorOptions keys = key_options(setup, *spec);
  // Between two syncs every one of the W workers draws P batches: the shard's rows some replica touched are
  // the shard's distinct keys among P x W x (independent draws of a batch) (batch overlap ignored: it only
  // shrinks the set), spread over the P steps.
  const int every = setup.replica_sync_every;
  const double draws = static_cast<double>(every) * workers *
                       static_cast<double>(models::nestpipe::independent_draws(keys, setup.batch_per_worker));
  const std::vector<double> per_owner = models::nestpipe::expected_unique_per_owner(keys, group, draws);
  double mean = 0;
  for (double v : per_owner)
    mean += v / static_cast<double>(per_owner.size());
  sizes->replica_sync_rows = std::llround(mean / every);
  sizes->replica_sync_bytes = sizes->replica_sync_rows * (sizes->row_bytes + kOptimizerStateBytesPerRow);
  return Status::ok();
}

int nestpipe_owners(const NestPipeSetup& setup, Variant variant, int workers) {
  return variant == Variant::k2dSp ? std::min(setup.sharding_group, workers) : workers;
}

StatusOr<models::nestpipe::StepSizes> nestpipe_step_sizes(const NestPipeSetup& setup, int owners) {
  CT_RETURN_IF_ERROR(validate(setup));
  if (owners < 1) return Status::invalid_argument("workers " + std::to_string(owners) + ": must be at least 1");
  auto spec = spec::recommender_spec(setup.model);
  if (!spec.is_ok()) return spec.status();
  const models::nestpipe::KeyGeneratorOptions keys = key_options(setup, *spec);
  auto stats = models::nestpipe::estimate_key_stats(
      keys, owners, setup.batch_per_worker, setup.micro_batches,
      std::min<int64_t>(setup.samples_to_draw, int64_t{owners} * setup.batch_per_worker));
  if (!stats.is_ok()) return stats.status();
  models::nestpipe::Workload w;
  w.spec = &*spec;
  w.batch_per_worker = setup.batch_per_worker;
  w.micro_batches = setup.micro_batches;
  auto sizes = models::nestpipe::step_sizes(w, *stats);
  if (!sizes.is_ok()) return sizes.status();
  // Per-owner skew of the embedding All2Alls (StepSizes::a2a_share), from the model's per-owner counts.
  sizes->a2a_share = stats->unique_per_pair;
  sizes->micro_a2a_share = stats->micro_unique_per_pair;
  sizes->clustered_micro_a2a_share = stats->clustered_micro_unique_per_pair;
  sizes->exact_skew = setup.exact_skew;
  if (!setup.clustering) {
    sizes->clustered_micro_emb_a2a_bytes = sizes->micro_emb_a2a_bytes;
    sizes->clustered_micro_a2a_share = sizes->micro_a2a_share;
  }
  return sizes;
}

namespace {

// The plan of `variant` from the step sizes of its owner count.
StatusOr<models::Plan> plan_from_sizes(const NestPipeSetup& setup, Variant variant, int workers,
                                       models::nestpipe::StepSizes sizes) {
  if (variant == Variant::k2dSp) {
    sizes.sharding_group = nestpipe_owners(setup, variant, workers);
    CT_RETURN_IF_ERROR(add_replica_sync(setup, workers, &sizes));
  }
  return models::nestpipe::build_plan(variant, sizes, setup.micro_batches);
}

}  // namespace

StatusOr<models::Plan> nestpipe_plan(const NestPipeSetup& setup, Variant variant, int workers) {
  if (workers < 1) return Status::invalid_argument("workers " + std::to_string(workers) + ": must be at least 1");
  auto sizes = nestpipe_step_sizes(setup, nestpipe_owners(setup, variant, workers));
  if (!sizes.is_ok()) return sizes.status();
  return plan_from_sizes(setup, variant, workers, *sizes);
}

std::vector<BreakdownLayer> nestpipe_breakdown() {
  return {{"compute", {"dense_fwd", "dense_bwd"}},
          {"all2all", {"key_a2a", "emb_a2a_fwd", "emb_a2a_bwd"}},
          {"lookup", {"lookup_gather", "lookup_copy", "dbp_patch"}},
          {"other", {"h2d", "emb_update", "dense_allreduce", "replica_allreduce"}}};
}

SimOptions nestpipe_sim_options() {
  SimOptions o;
  o.steps = 12;
  o.warmup_steps = 4;
  o.drain_steps = 3;
  o.breakdown = nestpipe_breakdown();
  return o;
}

namespace {

// The sweep's (variant, workers) points: its explicit points, else variants x workers; each count checked
// against the profile.
StatusOr<std::vector<std::pair<Variant, int>>> sweep_points(const cluster::ClusterProfile& profile,
                                                            const NestPipeSweep& sweep) {
  std::vector<std::pair<Variant, int>> wanted = sweep.points;
  if (wanted.empty()) {
    if (sweep.variants.empty()) return Status::invalid_argument("variants: give at least one variant");
    if (sweep.workers.empty()) return Status::invalid_argument("workers: give at least one worker count");
    for (Variant v : sweep.variants) {
      for (int w : sweep.workers)
        wanted.push_back({v, w});
    }
  }
  for (const auto& [v, w] : wanted) {
    if (w < 1) return Status::invalid_argument("workers " + std::to_string(w) + ": must be at least 1");
    CT_RETURN_IF_ERROR(cluster::check_worker_count(profile, w));
  }
  return wanted;
}

struct SweepPoint {
  Variant variant;
  int workers;
  models::Plan plan;
};

// Each point's plan. Key statistics are the costly part at large scale: the step sizes are computed once per
// owner count, in parallel (they do not depend on the variant).
StatusOr<std::vector<SweepPoint>> sweep_plans(const NestPipeSetup& setup,
                                              const std::vector<std::pair<Variant, int>>& wanted, int parallel) {
  std::map<int, StatusOr<models::nestpipe::StepSizes>> sizes;
  for (const auto& [v, w] : wanted)
    sizes.emplace(nestpipe_owners(setup, v, w), Status::internal("not computed"));
  std::vector<int> owners;
  for (const auto& [o, unused] : sizes)
    owners.push_back(o);
  parallel_for(owners.size(), parallel, [&](size_t i) { sizes.at(owners[i]) = nestpipe_step_sizes(setup, owners[i]); });
  std::vector<SweepPoint> points;
  for (const auto& [v, w] : wanted) {
    const auto& s = sizes.at(nestpipe_owners(setup, v, w));
    if (!s.is_ok()) return s.status();
    auto plan = plan_from_sizes(setup, v, w, *s);
    if (!plan.is_ok()) return plan.status();
    points.push_back({v, w, std::move(*plan)});
  }
  return points;
}

}  // namespace

StatusOr<std::vector<NestPipeRow>> run_nestpipe_sweep(const NestPipeSetup& setup,
                                                      const cluster::ClusterProfile& profile,
                                                      const NestPipeSweep& sweep) {
  CT_RETURN_IF_ERROR(validate(setup));
  auto wanted = sweep_points(profile, sweep);
  if (!wanted.is_ok()) return wanted.status();
  auto planned = sweep_plans(setup, *wanted, sweep.parallel);
  if (!planned.is_ok()) return planned.status();
  const std::vector<SweepPoint>& points = *planned;
  std::vector<StatusOr<SimResult>> results(points.size(), Status::internal("not run"));
  int done = 0;
  std::mutex progress_mutex;
  parallel_for(points.size(), sweep.parallel, [&](size_t i) {
    SimOptions o = sweep.options;
    o.workers = points[i].workers;
    if (!sweep.trace_dir.empty()) {
      o.trace_out = sweep.trace_dir + "/" + std::string(models::nestpipe::variant_name(points[i].variant)) + "-" +
                    std::to_string(points[i].workers) + ".json";
    }
    results[i] = simulate_plan(points[i].plan, profile, o);
    if (sweep.progress && results[i].is_ok()) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      sweep.progress(row_of(*results[i], setup), ++done, static_cast<int>(points.size()));
    }
  });
  std::vector<NestPipeRow> rows;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!results[i].is_ok()) {
      return results[i].status().with_context(std::string(models::nestpipe::variant_name(points[i].variant)) + " at " +
                                              std::to_string(points[i].workers) + " workers");
    }
    rows.push_back(row_of(*results[i], setup));
  }
  fill_relative(&rows);
  return rows;
}

std::string nestpipe_rows_json(const std::vector<NestPipeRow>& rows, const std::string& extra) {
  nlohmann::ordered_json j = extra.empty() ? nlohmann::ordered_json::object() : nlohmann::ordered_json::parse(extra);
  j["rows"] = nlohmann::ordered_json::array();
  for (const NestPipeRow& r : rows) {
    j["rows"].push_back({{"variant", r.variant},
                         {"workers", r.workers},
                         {"step_ms", r.step_ms},
                         {"qps", r.qps},
                         {"lookup_ms", r.lookup_ms},
                         {"comm_ms", r.comm_ms},
                         {"exposed_comm_ms", r.exposed_comm_ms},
                         {"compute_ms", r.compute_ms},
                         {"other_ms", r.other_ms},
                         {"speedup", r.speedup},
                         {"scaling_efficiency", r.scaling_efficiency}});
  }
  return j.dump(2) + "\n";
}

std::string nestpipe_rows_csv(const std::vector<NestPipeRow>& rows) {
  std::string out =
      "variant,workers,step_ms,qps,lookup_ms,comm_ms,exposed_comm_ms,compute_ms,other_ms,speedup,scaling_efficiency\n";
  for (const NestPipeRow& r : rows) {
    out += r.variant + "," + std::to_string(r.workers) + "," + fixed(r.step_ms, 3) + "," + fixed(r.qps, 1) + "," +
           fixed(r.lookup_ms, 3) + "," + fixed(r.comm_ms, 3) + "," + fixed(r.exposed_comm_ms, 3) + "," +
           fixed(r.compute_ms, 3) + "," + fixed(r.other_ms, 3) + "," + fixed(r.speedup, 4) + "," +
           fixed(r.scaling_efficiency, 4) + "\n";
  }
  return out;
}

std::string nestpipe_rows_table(const std::vector<NestPipeRow>& rows) {
  char line[256];
  std::snprintf(line, sizeof line, "%-9s %7s %10s %12s %10s %10s %10s %8s %8s\n", "variant", "workers", "step ms",
                "samples/s", "lookup ms", "a2a ms", "exp. a2a", "speedup", "scaling");
  std::string out = line;
  for (const NestPipeRow& r : rows) {
    std::snprintf(line, sizeof line, "%-9s %7d %10.2f %12.0f %10.2f %10.2f %10.2f %8s %7.1f%%\n", r.variant.c_str(),
                  r.workers, r.step_ms, r.qps, r.lookup_ms, r.comm_ms, r.exposed_comm_ms,
                  ratio_or_dash(r.speedup).c_str(), 100 * r.scaling_efficiency);
    out += line;
  }
  return out;
}

void add_nestpipe_default_costs(cluster::ClusterProfile* profile) {
  if (profile->costs.count("emb_update") == 0 && profile->host_memory_bandwidth > 0) {
    // Read the gradient, read and write the row: three passes over the rows.
    profile->costs["emb_update"] =
        cluster::CostModel{0, 0, profile->host_memory_bandwidth / profile->devices_per_node / 3.0, 0, 0, 0};
  }
}

}  // namespace clustertwin::sim::nestpipe
