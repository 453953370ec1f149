#include "sim/mix/mix_spec.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "common/file_io.h"
#include "common/text.h"
#include "models/cluster/field_reader.h"

// Declares `var` from a StatusOr, or returns its error.
#define CT_ASSIGN_OR_RETURN(var, expr)             \
  auto var##_or = (expr);                          \
  if (!var##_or.is_ok()) return var##_or.status(); \
  auto var = std::move(var##_or).value()

namespace clustertwin::sim::mix {
namespace {

using cluster::ConfigNode;
using cluster::FieldReader;
using cluster::Quantity;
constexpr FieldReader::Need kRequired = FieldReader::kRequired;
constexpr FieldReader::Need kOptional = FieldReader::kOptional;

std::string resolve(const std::string& dir, const std::string& path) {
  if (path.empty() || path.front() == '/' || dir.empty()) return path;
  return dir + "/" + path;
}

bool valid_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

Status read_nodes(FieldReader& job, std::vector<int>* nodes) {
  const ConfigNode* list = job.child("nodes");
  if (list == nullptr) return Status::ok();
  if (list->kind != ConfigNode::Kind::kList || list->items.empty())
    return job.error("nodes", "expected a non-empty list of node indices, got " + list->describe());
  for (const ConfigNode& item : list->items) {
    const auto value = item.kind == ConfigNode::Kind::kScalar ? cluster::whole_number(item.text) : std::nullopt;
    if (!value || *value < 0 || *value > (1 << 24)) {
      return job.error("nodes", "'" + (item.kind == ConfigNode::Kind::kScalar ? item.text : item.describe()) +
                                    "' is not a node index (a whole number >= 0)");
    }
    nodes->push_back(static_cast<int>(*value));
  }
  return Status::ok();
}

// A time that may be long: the profile units (s, ms, us, ns; a plain number is seconds) and min, h, d.
StatusOr<double> parse_long_time(const std::string& text) {
  static const std::pair<const char*, double> kLong[] = {{"min", 60.0}, {"h", 3600.0}, {"d", 86400.0}};
  for (const auto& [unit, seconds] : kLong) {
    const std::string suffix(unit);
    if (text.size() > suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0) {
      std::string number = text.substr(0, text.size() - suffix.size());
      while (!number.empty() && number.back() == ' ')
        number.pop_back();
      const std::optional<double> value = cluster::plain_number(number);
      if (!value) return Status::invalid_argument("'" + text + "' is not a time");
      if (std::string why = cluster::quantity_range_violation(*value * seconds, Quantity::kTime); !why.empty())
        return Status::invalid_argument("'" + text + "' " + why);
      return *value * seconds;
    }
  }
  auto value = cluster::parse_quantity(text, Quantity::kTime);
  if (!value.is_ok()) {
    return Status::invalid_argument("'" + text +
                                    "' is not a time (units: d, h, min, s, ms, us, ns; a plain number is "
                                    "seconds)");
  }
  return value;
}

// A long time under `key`, checked against `bound`.
Status long_time(FieldReader& r, std::string_view key, FieldReader::Bound bound, double* out, FieldReader::Need need) {
  std::string text;
  const bool present = r.child(key) != nullptr;
  CT_RETURN_IF_ERROR(r.text(key, &text, need));
  if (!present) return Status::ok();
  auto value = parse_long_time(text);
  if (!value.is_ok()) return r.error(key, value.status().message());
  if (std::string_view why = cluster::bound_violation(*value, bound); !why.empty())
    return r.error(key, text + " " + std::string(why));
  *out = *value;
  return Status::ok();
}

// checkpoint: {every: TIME or [TIME, ...], cost: TIME | state_bytes: SIZE + storage_bandwidth: BANDWIDTH, restart:
// TIME}
Status read_checkpoint(FieldReader& job, JobSpec* out) {
  CT_ASSIGN_OR_RETURN(c, job.section("checkpoint", kOptional));
  if (!c) return Status::ok();
  const ConfigNode* every = c->child("every");
  if (every == nullptr) return c->error("every", "missing: give the work between checkpoints (a time, or a list)");
  const std::vector<ConfigNode> items =
      every->kind == ConfigNode::Kind::kList ? every->items : std::vector<ConfigNode>{*every};
  if (items.empty()) return c->error("every", "an empty list: give at least one interval");
  for (const ConfigNode& item : items) {
    auto value = item.kind == ConfigNode::Kind::kScalar ? parse_long_time(item.text)
                                                        : StatusOr<double>(Status::invalid_argument(item.describe()));
    if (!value.is_ok() || !(*value > 0)) {
      return c->error("every", "'" + (item.kind == ConfigNode::Kind::kScalar ? item.text : item.describe()) +
                                   "' is not an interval (a time > 0, like 30min)");
    }
    out->checkpoint_every.push_back(*value);
  }
  const bool by_cost = c->child("cost") != nullptr;
  const bool by_state = c->child("state_bytes") != nullptr || c->child("storage_bandwidth") != nullptr;
  if (by_cost == by_state) {
    return c->error("cost", "give either cost, or state_bytes and storage_bandwidth (the checkpoint's write time)");
  }
  if (by_cost) {
    CT_RETURN_IF_ERROR(long_time(*c, "cost", FieldReader::kNonNegative, &out->checkpoint_cost_s, kRequired));
  } else {
    double bytes = 0, bandwidth = 0;
    CT_RETURN_IF_ERROR(c->quantity("state_bytes", Quantity::kSize, FieldReader::kPositive, &bytes, kRequired));
    CT_RETURN_IF_ERROR(
        c->quantity("storage_bandwidth", Quantity::kBandwidth, FieldReader::kPositive, &bandwidth, kRequired));
    out->checkpoint_cost_s = bytes / bandwidth;
  }
  CT_RETURN_IF_ERROR(long_time(*c, "restart", FieldReader::kNonNegative, &out->restart_s, kRequired));
  return c->finish();
}

// failures: {node_mtbf: TIME | at: [{time: TIME, node: N}, ...], horizon: TIME}
Status read_failures(FieldReader& top, FailureSpec* out) {
  CT_ASSIGN_OR_RETURN(f, top.section("failures", kOptional));
  if (!f) return Status::ok();
  out->present = true;
  const ConfigNode* at = f->child("at");
  CT_RETURN_IF_ERROR(long_time(*f, "node_mtbf", FieldReader::kPositive, &out->node_mtbf_s, kOptional));
  if ((out->node_mtbf_s > 0) == (at != nullptr))
    return f->error("node_mtbf", "give either node_mtbf (seeded exponential failures) or at (a list of failures)");
  if (at != nullptr) {
    if (at->kind != ConfigNode::Kind::kList)
      return f->error("at", "expected a list of {time, node}, got " + at->describe());
    for (size_t i = 0; i < at->items.size(); ++i) {
      CT_ASSIGN_OR_RETURN(item,
                          FieldReader::open(f->source(), f->path_of("at[" + std::to_string(i) + "]"), at->items[i]));
      double time = 0;
      int node = 0;
      CT_RETURN_IF_ERROR(long_time(item, "time", FieldReader::kNonNegative, &time, kRequired));
      CT_RETURN_IF_ERROR(item.integer("node", 0, &node, kRequired));
      CT_RETURN_IF_ERROR(item.finish());
      out->listed.emplace_back(time, node);
    }
    std::sort(out->listed.begin(), out->listed.end());
  }
  CT_RETURN_IF_ERROR(long_time(*f, "horizon", FieldReader::kPositive, &out->horizon_s, kOptional));
  return f->finish();
}

// The job's target, and that it has a size or a target to size it by (sim/mix/job_target.h).
Status check_job_size(FieldReader& r, JobSpec* job) {
  const int own_batch = job->settings ? find_twin(job->system)->batch_per_worker(*job->settings) : 0;
  CT_RETURN_IF_ERROR(read_job_target(r, own_batch, &job->target));
  if (job->workers > 0) return Status::ok();
  if (!job->target.present()) {
    return r.error("workers",
                   "missing: give workers (the job's size), or a target that `clustertwin plan mix` sizes it by");
  }
  if (job->target.unit == JobTarget::Unit::kStepsPerS) {
    return r.error("target.steps_per_s",
                   "needs the job's workers: more workers do not raise a step rate (each worker's batch is fixed); "
                   "give workers, or a samples_per_s target");
  }
  if (!job->nodes.empty()) return r.error("nodes", "an explicit placement needs the job's workers");
  return Status::ok();
}

Status read_job(const std::string& file, const std::string& dir, const std::string& field, const ConfigNode& node,
                JobSpec* job) {
  CT_ASSIGN_OR_RETURN(r, FieldReader::open(file, field, node));
  job->field = field;
  job->file = file;
  CT_RETURN_IF_ERROR(r.text("name", &job->name, kRequired));
  if (!valid_name(job->name))
    return r.error("name", "'" + job->name + "' must be letters, digits, '_' or '-' (it names files)");
  CT_RETURN_IF_ERROR(r.integer("workers", 1, &job->workers, kOptional));
  CT_RETURN_IF_ERROR(r.integer("steps", 1, &job->steps, kOptional));
  CT_RETURN_IF_ERROR(r.integer("warmup", 0, &job->warmup, kOptional));
  CT_RETURN_IF_ERROR(r.integer("drain", 0, &job->drain, kOptional));
  CT_RETURN_IF_ERROR(read_nodes(r, &job->nodes));
  CT_RETURN_IF_ERROR(read_checkpoint(r, job));
  CT_ASSIGN_OR_RETURN(dp, r.section("data_parallel", kOptional));
  const bool has_plan = r.child("plan") != nullptr, has_system = r.child("system") != nullptr;
  const int kinds = (dp.has_value() ? 1 : 0) + (has_plan ? 1 : 0) + (has_system ? 1 : 0);
  if (kinds != 1) {
    return r.error(
        kinds == 0 ? "data_parallel" : "plan",
        "give exactly one of data_parallel, plan and system (what the job runs), got " + std::to_string(kinds));
  }
  if (dp) {
    job->kind = JobSpec::Kind::kDataParallel;
    CT_RETURN_IF_ERROR(dp->quantity("compute", Quantity::kTime, FieldReader::kNonNegative, &job->compute_s, kRequired));
    double bytes = 0;
    CT_RETURN_IF_ERROR(dp->quantity("allreduce_bytes", Quantity::kSize, FieldReader::kNonNegative, &bytes, kRequired));
    if (bytes > 9e18) return dp->error("allreduce_bytes", "too large");
    job->allreduce_bytes = std::llround(bytes);
    CT_RETURN_IF_ERROR(dp->finish());
  } else if (has_plan) {
    job->kind = JobSpec::Kind::kPlan;
    CT_RETURN_IF_ERROR(r.text("plan", &job->plan_file, kRequired));
    job->plan_file = resolve(dir, job->plan_file);
  } else {
    job->kind = JobSpec::Kind::kSystem;
    CT_RETURN_IF_ERROR(r.text("system", &job->system, kRequired));
    const Twin* twin = find_twin(job->system);
    if (twin == nullptr)
      return r.error("system", "'" + job->system + "': unknown system (allowed: " + twin_list() + ")");
    auto settings = twin->read_settings(r, job_frame(*job, 0));
    if (!settings.is_ok()) return settings.status();
    job->settings = std::move(settings).value();
  }
  CT_RETURN_IF_ERROR(check_job_size(r, job));
  return r.finish();
}

}  // namespace

JobFrame job_frame(const JobSpec& job, uint64_t seed) {
  JobFrame f;
  f.file = job.file;
  f.field = job.field;
  f.name = job.name;
  f.workers = job.workers;
  f.seed = seed;
  f.steps = job.steps;
  f.warmup = job.warmup;
  f.drain = job.drain;
  f.shared_fabric = true;  // the jobs of a mix share the fabric: no collective has it to itself
  return f;
}

int nodes_needed(const cluster::ClusterProfile& profile, int workers) {
  const int per_node = std::max(1, profile.devices_per_node);
  return (workers + per_node - 1) / per_node;
}

StatusOr<MixSpec> parse_mix(const std::string& yaml_text, const std::string& file, const std::string& dir) {
  CT_ASSIGN_OR_RETURN(root, cluster::parse_config_yaml(yaml_text, file));
  CT_ASSIGN_OR_RETURN(top, FieldReader::open(file, "", root));
  MixSpec mix;
  mix.file = file;
  CT_RETURN_IF_ERROR(top.text("profile", &mix.profile, kRequired));
  if (mix.profile.find('/') != std::string::npos || mix.profile.find(".y") != std::string::npos ||
      mix.profile.find(".xml") != std::string::npos) {
    mix.profile = resolve(dir, mix.profile);
  }
  CT_RETURN_IF_ERROR(top.text("placement", &mix.placement, kOptional));
  if (mix.placement != "packed" && mix.placement != "spread" && mix.placement != "random")
    return top.error("placement", "'" + mix.placement + "': unknown policy (allowed: packed, spread, random)");
  int seed = 0;
  CT_RETURN_IF_ERROR(top.integer("seed", 0, &seed, kOptional));
  mix.seed = static_cast<uint64_t>(seed);
  CT_RETURN_IF_ERROR(read_failures(top, &mix.failures));
  const ConfigNode* jobs = top.child("jobs");
  if (jobs == nullptr) return top.error("jobs", "missing: give a list of jobs");
  if (jobs->kind != ConfigNode::Kind::kList || jobs->items.empty())
    return top.error("jobs", "expected a non-empty list of jobs, got " + jobs->describe());
  CT_RETURN_IF_ERROR(top.finish());
  std::set<std::string> names;
  for (size_t i = 0; i < jobs->items.size(); ++i) {
    JobSpec job;
    const std::string field = "jobs[" + std::to_string(i) + "]";
    CT_RETURN_IF_ERROR(read_job(file, dir, field, jobs->items[i], &job));
    if (!names.insert(job.name).second)
      return Status::invalid_argument(file + ": field '" + field + ".name': '" + job.name + "' names two jobs");
    mix.jobs.push_back(std::move(job));
  }
  return mix;
}

StatusOr<MixSpec> read_mix(const std::string& path) {
  auto text = read_file(path);
  if (!text.is_ok()) return text.status();
  const size_t slash = path.rfind('/');
  return parse_mix(*text, path, slash == std::string::npos ? "" : path.substr(0, slash));
}

namespace {

Status mix_error(const MixSpec& mix, const std::string& field, const std::string& message) {
  return Status::invalid_argument(mix.file + ": field '" + field + "': " + message);
}

// A job's size against the profile: given, within its devices, whole nodes beyond one.
Status check_job_workers(const MixSpec& mix, const JobSpec& job, const cluster::ClusterProfile& profile) {
  if (job.workers < 1) {
    return mix_error(mix, job.field + ".workers",
                     "missing: a mix runs jobs of a given size; `clustertwin plan mix` sizes a job by its target");
  }
  if (job.workers > profile.devices()) {
    return mix_error(mix, job.field + ".workers",
                     std::to_string(job.workers) + " is more workers than profile '" + profile.name + "' has (" +
                         std::to_string(profile.devices()) + " devices)");
  }
  if (job.workers > profile.devices_per_node && job.workers % profile.devices_per_node != 0) {
    return mix_error(mix, job.field + ".workers",
                     std::to_string(job.workers) + " is not a multiple of devices_per_node " +
                         std::to_string(profile.devices_per_node) + " of profile '" + profile.name +
                         "' (a job takes whole nodes)");
  }
  return Status::ok();
}

// A job's explicit nodes: as many as its workers take, in the profile, no node in two jobs (`owner`: node -> job).
Status check_job_nodes(const MixSpec& mix, const JobSpec& job, const cluster::ClusterProfile& profile,
                       std::map<int, std::string>* owner) {
  const int needed = nodes_needed(profile, job.workers);
  if (static_cast<int>(job.nodes.size()) != needed) {
    return mix_error(mix, job.field + ".nodes",
                     std::to_string(job.nodes.size()) + " nodes given, " + std::to_string(job.workers) +
                         " workers take " + std::to_string(needed) + " (" + std::to_string(profile.devices_per_node) +
                         " devices a node)");
  }
  for (int node : job.nodes) {
    if (node >= profile.nodes) {
      return mix_error(mix, job.field + ".nodes",
                       "node " + std::to_string(node) + " is not in profile '" + profile.name + "' (nodes 0-" +
                           std::to_string(profile.nodes - 1) + ")");
    }
    auto [it, fresh] = owner->emplace(node, job.name);
    if (!fresh) {
      return mix_error(
          mix, job.field + ".nodes",
          "node " + std::to_string(node) + " is also job '" + it->second + "''s: explicit placements overlap");
    }
  }
  return Status::ok();
}

// The failure timelines' work, bounded before any is drawn: the expected failures over every node the jobs take,
// and per job the checkpoint segments its shortest interval cuts the horizon into.
Status check_timeline_limits(const MixSpec& mix, const cluster::ClusterProfile& profile, int nodes) {
  if (!mix.failures.present) return Status::ok();
  constexpr double kMostFailures = 1e7;
  constexpr double kMostSegments = 1e8;
  const FailureSpec& f = mix.failures;
  if (f.node_mtbf_s > 0 && nodes * (f.horizon_s / f.node_mtbf_s) > kMostFailures) {
    return mix_error(mix, "failures.node_mtbf",
                     format_number("%g", nodes * (f.horizon_s / f.node_mtbf_s)) + " expected failures (" +
                         std::to_string(nodes) + " nodes x horizon / node_mtbf) exceed the limit of " +
                         format_number("%g", kMostFailures) + ": give a longer node_mtbf or a shorter horizon");
  }
  for (size_t j = 0; j < mix.jobs.size(); ++j) {
    std::vector<double> intervals = mix.jobs[j].checkpoint_every;
    if (f.node_mtbf_s > 0 && !intervals.empty()) {  // the Young row (resilience.h)
      const double job_mtbf = f.node_mtbf_s / std::max(1, nodes_needed(profile, mix.jobs[j].workers));
      intervals.push_back(std::sqrt(2 * mix.jobs[j].checkpoint_cost_s * job_mtbf));  // Young's sqrt(2 C M)
    }
    for (size_t i = 0; i < intervals.size(); ++i) {
      const double every = intervals[i];
      if (every <= 0 || f.horizon_s / (every + mix.jobs[j].checkpoint_cost_s) <= kMostSegments) continue;
      const bool young = i == mix.jobs[j].checkpoint_every.size();
      return mix_error(mix, "jobs[" + std::to_string(j) + "].checkpoint." + (young ? "cost" : "every"),
                       (young ? "Young's interval for this cost, " : "") + format_number("%g", every) +
                           " s, cuts the horizon (" + format_number("%g", f.horizon_s) + " s) into more than " +
                           format_number("%g", kMostSegments) + " checkpoint segments");
    }
  }
  return Status::ok();
}

}  // namespace

Status check_mix(const MixSpec& mix, const cluster::ClusterProfile& profile) {
  if (!profile.simgrid_platform.empty()) {
    return mix_error(
        mix, "profile",
        "'" + mix.profile + "' is a SimGrid platform file: a mix places jobs on the nodes of a cluster profile (YAML)");
  }
  std::map<int, std::string> owner;  // node -> job, for explicit placements
  int total_nodes = 0;
  for (const JobSpec& job : mix.jobs) {
    CT_RETURN_IF_ERROR(check_job_workers(mix, job, profile));
    if (job.settings)
      CT_RETURN_IF_ERROR(find_twin(job.system)->check(*job.settings, profile, job_frame(job, mix.seed)));
    total_nodes += nodes_needed(profile, job.workers);
    if (!job.nodes.empty()) CT_RETURN_IF_ERROR(check_job_nodes(mix, job, profile, &owner));
  }
  for (size_t i = 0; i < mix.failures.listed.size(); ++i) {
    if (mix.failures.listed[i].second >= profile.nodes) {
      return mix_error(mix, "failures.at",
                       "node " + std::to_string(mix.failures.listed[i].second) + " is not in profile '" + profile.name +
                           "' (nodes 0-" + std::to_string(profile.nodes - 1) + ")");
    }
  }
  CT_RETURN_IF_ERROR(check_timeline_limits(mix, profile, total_nodes));
  if (total_nodes > profile.nodes) {
    return mix_error(mix, "jobs",
                     "the jobs take " + std::to_string(total_nodes) + " nodes, more than profile '" + profile.name +
                         "' has (" + std::to_string(profile.nodes) + " nodes of " +
                         std::to_string(profile.devices_per_node) + " devices)");
  }
  return Status::ok();
}

}  // namespace clustertwin::sim::mix
