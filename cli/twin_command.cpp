#include "cli/twin_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/plan.h"
#include "common/parallel.h"
#include "models/cluster/cluster_profile.h"
#include "sim/core/twin.h"

namespace clustertwin::cli {
namespace {

// What both commands take: where the job runs and the twin's own settings.
struct TwinArgs {
  std::string system;
  std::string platform = "h100-1024";
  std::vector<std::string> set;  // KEY=VALUE, the twin's settings
  int steps = -1;
  uint64_t seed = 0;
};

// A twin's job at `workers` workers, checked and prepared.
struct Prepared {
  const sim::Twin* twin = nullptr;
  cluster::ClusterProfile profile;
  std::shared_ptr<const sim::TwinSettings> settings;
};

StatusOr<Prepared> prepare(const TwinArgs& a) {
  Prepared p;
  p.twin = sim::find_twin(a.system);
  if (p.twin == nullptr) return Status::internal("no twin named '" + a.system + "' in the registry");
  auto profile = cluster::load_cluster_profile(a.platform);
  if (!profile.is_ok()) return profile.status();
  p.profile = std::move(profile).value();
  // --set KEY=VALUE pairs as the mapping a config file would hold: the twin reads them as a mix job's entry.
  cluster::ConfigNode entry;
  entry.kind = cluster::ConfigNode::Kind::kMap;
  for (const std::string& kv : a.set) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      return Status::invalid_argument("--set '" + kv + "': expected KEY=VALUE (a setting of the " + a.system +
                                      " twin)");
    for (const auto& [key, value] : entry.fields) {
      if (key == kv.substr(0, eq)) return Status::invalid_argument("--set '" + kv + "': '" + key + "' set twice");
    }
    cluster::ConfigNode value;
    value.kind = cluster::ConfigNode::Kind::kScalar;
    value.text = kv.substr(eq + 1);
    entry.fields.push_back({kv.substr(0, eq), std::move(value)});
  }
  auto reader = cluster::FieldReader::open("--set", "", entry);
  if (!reader.is_ok()) return reader.status();
  sim::JobFrame frame;
  frame.file = "--set";
  frame.steps = a.steps;
  auto settings = p.twin->read_settings(*reader, frame);
  if (!settings.is_ok()) return settings.status();
  CT_RETURN_IF_ERROR(reader->finish());
  p.settings = std::move(settings).value();
  return p;
}

// The job of `p` at `workers` workers run alone.
StatusOr<sim::SimResult> run_at(const Prepared& p, const TwinArgs& a, int workers) {
  sim::JobFrame frame;
  frame.file = "--set";
  frame.name = a.system;
  frame.field = a.system;
  frame.workers = workers;
  frame.seed = a.seed;
  frame.steps = a.steps;
  CT_RETURN_IF_ERROR(in_flag_words(cluster::check_worker_count(p.profile, workers), {{"workers", "--workers"}}));
  CT_RETURN_IF_ERROR(p.twin->check(*p.settings, p.profile, frame));
  auto job = p.twin->prepare(*p.settings, p.profile, frame);
  if (!job.is_ok()) return job.status();
  auto result = sim::run_alone(**job, p.profile);
  if (!result.is_ok()) return result.status();
  result->variant = (*job)->runs();
  return result;
}

void add_twin_options(CLI::App* cmd, TwinArgs* a) {
  cmd->add_option("--platform", a->platform, "Shipped profile (h100-1024, ...) or a YAML file")->capture_default_str();
  cmd->add_option("--set", a->set,
                  "A setting of the twin, KEY=VALUE, as a mix job's entry spells it (docs/mix.md); repeatable");
  cmd->add_option("--steps", a->steps, "Steps simulated (default: the twin's)");
  cmd->add_option("--seed", a->seed, "Seed of the workload")->capture_default_str();
}

struct SimTwinArgs {
  TwinArgs twin;
  std::string workers = "8";
  bool json = false;
};

Status run_sim_twin(const SimTwinArgs& a) {
  auto workers = parse_workers(a.workers);
  if (!workers.is_ok()) return workers.status();
  auto p = prepare(a.twin);
  if (!p.is_ok()) return p.status();
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::string table;
  for (int w : *workers) {
    auto r = run_at(*p, a.twin, w);
    if (!r.is_ok()) return r.status().with_context("--workers " + std::to_string(w));
    rows.push_back({{"workers", w}, {"runs", r->variant}, {"step_time_s", r->step_time_s}, {"steps", r->steps}});
    char line[160];
    std::snprintf(line, sizeof(line), "  %8d  %-28s %12.3f\n", w, r->variant.c_str(), r->step_time_s * 1e3);
    table += line;
  }
  if (a.json) {
    nlohmann::ordered_json doc = {{"system", a.twin.system}, {"platform", p->profile.name}, {"rows", rows}};
    return write_output("-", doc.dump() + "\n");
  }
  std::printf("# clustertwin sim %s on %s (the twin interface: sim/core/twin.h)\n", a.twin.system.c_str(),
              p->profile.name.c_str());
  std::printf("# %8s  %-28s %12s\n", "workers", "runs", "step (ms)");
  std::fputs(table.c_str(), stdout);
  return Status::ok();
}

struct PlanTwinArgs {
  TwinArgs twin;
  PlanOptions plan;
};

Status run_plan_twin(PlanTwinArgs a) {
  const auto started = std::chrono::steady_clock::now();
  CT_RETURN_IF_ERROR(check_plan_target(a.plan));
  a.twin.platform = a.plan.platform;
  auto p = prepare(a.twin);
  if (!p.is_ok()) return p.status();
  CT_RETURN_IF_ERROR(check_plan_options(&a.plan, p->profile.devices(), p->profile.name));
  const int batch = p->twin->batch_per_worker(*p->settings);
  PlanSystem s;
  s.system = a.twin.system;
  s.platform = p->profile.name;
  s.title = a.twin.system + " on " + p->profile.name;
  s.estimate = "a run of the twin's steps";
  if (batch == 0) {
    s.unit = "steps/s";
    s.unit_key = "steps_per_s";
  }
  s.families = {a.twin.system};
  s.ladder = sim::node_ladder(p->profile.devices_per_node, a.plan.max_workers);
  s.confirm = [&](int, int workers) {
    std::string c =
        "clustertwin sim " + a.twin.system + " --platform " + a.plan.platform + " --workers " + std::to_string(workers);
    for (const std::string& kv : a.twin.set)
      c += " --set " + kv;
    return c;
  };
  s.evaluate = [&](const std::vector<std::pair<int, int>>& points, bool) -> StatusOr<std::vector<sim::CapacityPoint>> {
    std::vector<StatusOr<sim::SimResult>> runs(points.size(), Status::internal("not run"));
    parallel_for(points.size(), a.plan.parallel, [&](size_t k) { runs[k] = run_at(*p, a.twin, points[k].second); });
    std::vector<sim::CapacityPoint> out(points.size());
    for (size_t k = 0; k < points.size(); ++k) {
      if (!runs[k].is_ok()) return runs[k].status().with_context("at " + std::to_string(points[k].second) + " workers");
      const double step = runs[k]->step_time_s;
      out[k].step_s = step;
      out[k].throughput = !(step > 0) ? 0 : batch > 0 ? points[k].second * static_cast<double>(batch) / step : 1 / step;
    }
    return out;
  };
  return run_plan(a.plan, s, started);
}

}  // namespace

void add_sim_twin_command(CLI::App& sim, Action* action, const std::string& system, const std::string& help) {
  auto a = std::make_shared<SimTwinArgs>();
  a->twin.system = system;
  CLI::App* cmd = sim.add_subcommand(system, help);
  add_twin_options(cmd, &a->twin);
  cmd->add_option("--workers", a->workers, "Worker counts, comma-separated (whole nodes, or fewer than one)")
      ->capture_default_str();
  cmd->add_flag("--json", a->json, "Print the rows as JSON");
  cmd->callback([a, action] { *action = [a] { return in_sim_option_words(run_sim_twin(*a)); }; });
}

void add_plan_twin(CLI::App* plan, Action* action, const std::string& system, const std::string& help) {
  auto a = std::make_shared<PlanTwinArgs>();
  a->twin.system = system;
  a->plan.platform = a->twin.platform;
  CLI::App* cmd = plan->add_subcommand(system, help);
  add_plan_options(cmd, &a->plan, "Throughput the job must reach (samples/s, or steps/s for a twin without a batch)",
                   "Shipped profile (h100-1024, ...) or a YAML file");
  cmd->add_option("--set", a->twin.set, "A setting of the twin, KEY=VALUE, as a mix job's entry spells it; repeatable");
  cmd->add_option("--steps", a->twin.steps, "Steps simulated (default: the twin's)");
  cmd->add_option("--seed", a->twin.seed, "Seed of the workload")->capture_default_str();
  cmd->callback([a, action] { *action = [a] { return run_plan_twin(*a); }; });
}

}  // namespace clustertwin::cli
