// clustertwin trace import-chakra|export-chakra: Chakra execution traces
// (ASTRA-sim's workload format) to a plan and back (models/plan/import/chakra_plan.h).

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/command.h"
#include "common/file_io.h"
#include "models/cluster/cluster_profile.h"
#include "models/cluster/cluster_profile_yaml.h"
#include "models/plan/import/chakra_plan.h"
#include "models/plan/plan_json.h"
#include "sim/core/task_cost.h"
#include "traces/chakra/chakra_trace.h"

namespace clustertwin::cli {
namespace {

struct ChakraArgs {
  // import
  std::vector<std::string> files;
  std::string plan_out;
  std::string profile_out;
  std::string comm_groups;
  std::string compute_cost = "duration";
  bool ctrl_deps = false;
  // export
  std::string plan;
  std::string out_dir;
  std::string prefix;
  int workers = 0;
  // both
  std::string platform = "h100-1024";
};

std::string stem(const std::string& path) {
  std::string base = std::filesystem::path(path).filename().string();
  if (ends_with(base, ".json")) base.resize(base.size() - 5);
  return base;
}

// duration_micros for export: what the twin would charge the task on `profile`
// (sim/core/task_cost.h); nullopt for transfers the network times.
StatusOr<std::optional<double>> task_seconds(const models::Task& t, int rank, const cluster::ClusterProfile& profile,
                                             int world) {
  auto cost = t.cost_key.empty() ? profile.costs.end() : profile.costs.find(t.cost_key);
  if (t.kind == models::TaskKind::kCollective) {
    const bool p2p = t.collective->op == models::CollectiveOp::kSend || t.collective->op == models::CollectiveOp::kRecv;
    const int members =
        p2p ? 2
            : static_cast<int>(
                  models::group_members(t.collective->group, rank, world, profile.devices_per_node).size());
    if (cost != profile.costs.end()) {
      return std::optional<double>(cost->second.collective_seconds(t.collective->op, static_cast<double>(t.bytes),
                                                                   members, static_cast<double>(t.requests)));
    }
    const cluster::CollectiveFactor* fitted = profile.fitted_collective(t.collective->op);
    if (!p2p && fitted != nullptr) {
      return std::optional<double>(fitted->fitted_seconds(t.collective->op, static_cast<double>(t.bytes), members));
    }
    return std::optional<double>();
  }
  if (t.kind == models::TaskKind::kCopy) {
    if (cost == profile.costs.end()) return std::optional<double>();
    return std::optional<double>(
        cost->second.seconds(t.flops, static_cast<double>(t.bytes), static_cast<double>(t.requests)));
  }
  auto s = sim::task_seconds(t, profile.device_type_of(rank), profile);
  if (!s.is_ok()) return s.status();
  return std::optional<double>(*s);
}

Status run_export(const ChakraArgs& a) {
  auto plan = models::read_plan(a.plan);
  if (!plan.is_ok()) return plan.status();
  auto profile = cluster::load_cluster_profile(a.platform);
  if (!profile.is_ok()) return profile.status();
  if (a.workers < 1) return Status::invalid_argument("--workers " + std::to_string(a.workers) + ": must be >= 1");
  CT_RETURN_IF_ERROR(in_flag_words(cluster::check_worker_count(*profile, a.workers), {{"workers", "--workers"}}));
  models::ChakraExportOptions options;
  options.world_size = a.workers;
  options.devices_per_node = profile->devices_per_node;
  options.platform = profile->name;
  const int world = a.workers;
  auto exported = models::plan_to_chakra(
      *plan, a.plan, options, [&](const models::Task& t, int rank) { return task_seconds(t, rank, *profile, world); });
  if (!exported.is_ok()) return exported.status();

  const std::string prefix = a.prefix.empty() ? stem(a.plan) : a.prefix;
  // The files go into -o and nowhere else: a prefix is a file name, not a path.
  if (prefix.empty() || prefix.find('/') != std::string::npos || prefix == "." || prefix == "..") {
    return Status::invalid_argument("--prefix '" + prefix +
                                    "': a file name without '/' (the files go into the -o folder)");
  }
  std::error_code ec;
  std::filesystem::create_directories(a.out_dir, ec);
  if (ec) return Status::io_error(a.out_dir + ": cannot create the directory (" + ec.message() + ")");
  size_t nodes = 0;
  for (size_t r = 0; r < exported->ranks.size(); ++r) {
    const std::string path = a.out_dir + "/" + prefix + "." + std::to_string(r) + ".et";
    CT_RETURN_IF_ERROR(traces::chakra::write_et(path, exported->ranks[r]));
    nodes += exported->ranks[r].nodes.size();
  }
  std::string groups;
  if (!exported->comm_groups.empty()) {
    groups = a.out_dir + "/" + prefix + ".comm_groups.json";
    CT_RETURN_IF_ERROR(write_file_atomically(groups, models::comm_groups_json(exported->comm_groups)));
  }
  std::printf("%s: %d Chakra execution trace(s) %s.0.et .. %s.%d.et, %zu nodes in all, durations on %s%s\n",
              a.out_dir.c_str(), world, prefix.c_str(), prefix.c_str(), world - 1, nodes, profile->name.c_str(),
              groups.empty() ? "" : ("; process groups in " + groups).c_str());
  return Status::ok();
}

StatusOr<models::ChakraImportOptions> import_options(const ChakraArgs& a) {
  models::ChakraImportOptions options;
  if (a.compute_cost == "duration") {
    options.compute_cost = models::ChakraComputeCost::kDuration;
  } else if (a.compute_cost == "flops") {
    options.compute_cost = models::ChakraComputeCost::kFlops;
  } else {
    return Status::invalid_argument("--compute-cost '" + a.compute_cost + "': allowed: duration, flops");
  }
  options.ctrl_deps = a.ctrl_deps;
  if (!a.comm_groups.empty()) {
    auto text = read_file(a.comm_groups);
    if (!text.is_ok()) return text.status();
    auto groups = models::parse_comm_groups(*text, a.comm_groups);
    if (!groups.is_ok()) return groups.status();
    options.comm_groups = *groups;
  }
  return options;
}

// The measured durations become costs on top of the platform: a profile of
// their own, written where --profile-out says (default: beside the plan).
// Returns its path, "" when no task is priced by its duration.
StatusOr<std::string> write_duration_profile(const ChakraArgs& a, const models::ChakraImport& imported) {
  if (imported.durations.empty()) {
    if (!a.profile_out.empty()) {
      return Status::invalid_argument("--profile-out " + a.profile_out +
                                      ": no task is priced by its duration_micros, so there is no cost to write");
    }
    return std::string();
  }
  auto profile = cluster::load_cluster_profile(a.platform);
  if (!profile.is_ok()) return profile.status();
  std::string profile_path = a.profile_out;
  if (profile_path.empty()) {
    profile_path = ends_with(a.plan_out, ".json") ? a.plan_out.substr(0, a.plan_out.size() - 5) : a.plan_out;
    profile_path += ".profile.yaml";
  }
  profile->name = std::filesystem::path(profile_path).stem().string();
  for (const auto& [key, seconds] : imported.durations)
    profile->costs[key] = cluster::CostModel{.latency = seconds};
  auto yaml = cluster::cluster_profile_yaml(
      *profile, "Written by clustertwin trace import-chakra: " + std::string(a.platform) + " with the " +
                    std::to_string(imported.durations.size()) + " duration(s) of " + a.plan_out + "'s tasks");
  if (!yaml.is_ok()) return yaml.status();
  CT_RETURN_IF_ERROR(write_file_atomically(profile_path, *yaml));
  return profile_path;
}

// What the import made: the plan's tasks by kind, how they were priced, what was skipped, and how to run it.
void print_import_summary(const ChakraArgs& a, const models::ChakraImport& imported, const std::string& profile_path) {
  const models::Plan& plan = imported.plan;
  int counts[5] = {0, 0, 0, 0, 0};
  int p2p = 0;
  for (const models::Task& t : plan.tasks) {
    ++counts[static_cast<int>(t.kind)];
    if (t.collective &&
        (t.collective->op == models::CollectiveOp::kSend || t.collective->op == models::CollectiveOp::kRecv))
      ++p2p;
  }
  std::printf(
      "%s: a plan of %zu tasks on %zu streams for %d rank(s) from %zu file(s) of %lld nodes: %d compute, %d host, "
      "%d collective (%d send/recv), %d copy, %d lookup\n",
      a.plan_out.c_str(), plan.tasks.size(), plan.streams.size(), imported.world_size, a.files.size(),
      static_cast<long long>(imported.nodes), counts[0], counts[4], counts[1], p2p, counts[2], counts[3]);
  if (imported.by_duration > 0) {
    std::printf("# %lld task(s) priced by duration_micros: costs in %s (%s plus those durations)\n",
                static_cast<long long>(imported.by_duration), profile_path.c_str(), a.platform.c_str());
  }
  if (imported.by_flops > 0) {
    std::printf("# %lld compute task(s) priced by num_ops on the platform's roofline (peak FLOP/s x efficiency)\n",
                static_cast<long long>(imported.by_flops));
  }
  if (imported.skipped > 0) {
    std::printf("# %lld METADATA_NODE/INVALID_NODE node(s) skipped (no work; their dependencies pass through)\n",
                static_cast<long long>(imported.skipped));
  }
  if (imported.ctrl_deps_ignored > 0) {
    std::printf("# %lld ctrl_deps not followed (as Chakra's feeder; --ctrl-deps follows them)\n",
                static_cast<long long>(imported.ctrl_deps_ignored));
  }
  if (imported.groups_from_metadata > 0) {
    std::printf("# %lld process group(s) read from METADATA_NODEs (process_group:init)\n",
                static_cast<long long>(imported.groups_from_metadata));
  }
  if (imported.world_groups > 0) {
    std::printf("# %lld collective(s) name a pg_name whose members no file gives (--comm-groups): taken as the world\n",
                static_cast<long long>(imported.world_groups));
  }
  if (!imported.exported_on.empty()) {
    std::printf(
        "# exported from a plan priced on profile '%s': its cost keys are kept, run on that profile for the "
        "same costs\n",
        imported.exported_on.c_str());
  }
  std::printf("# run: clustertwin sim plan %s --workers %d%s\n", a.plan_out.c_str(), imported.world_size,
              profile_path.empty() ? "" : (" --platform " + profile_path).c_str());
}

Status run_import(const ChakraArgs& a) {
  auto options = import_options(a);
  if (!options.is_ok()) return options.status();
  std::vector<models::ChakraInput> inputs;
  for (const std::string& path : a.files) {
    auto file = traces::chakra::read_et(path);
    if (!file.is_ok()) return file.status();
    inputs.push_back({path, std::move(file).value()});
  }
  auto imported = models::plan_from_chakra(inputs, *options);
  if (!imported.is_ok()) return imported.status();
  auto profile_path = write_duration_profile(a, *imported);
  if (!profile_path.is_ok()) return profile_path.status();
  CT_RETURN_IF_ERROR(models::write_plan(a.plan_out, imported->plan));
  print_import_summary(a, *imported, *profile_path);
  return Status::ok();
}

}  // namespace

void add_trace_chakra_commands(CLI::App& trace, Action* action) {
  auto args = std::make_shared<ChakraArgs>();
  CLI::App* import = trace.add_subcommand(
      "import-chakra",
      "Read Chakra execution traces (one .et per rank, as ASTRA-sim takes them) into a plan for clustertwin sim "
      "plan: compute nodes priced by duration_micros (or num_ops), collectives and send/recv by size over the "
      "modelled network, data_deps as dependencies (models/plan/import/chakra_plan.h; docs/bring-your-own-trace.md)");
  import->add_option("FILES", args->files, "The .et files, one per rank (rank from NAME.<rank>.et, else the order)")
      ->required()
      ->expected(1, -1);
  import->add_option("-o,--out", args->plan_out, "The plan to write (JSON)")->required();
  import->add_option("--platform", args->platform, "The profile the durations are added to (shipped name or YAML)")
      ->capture_default_str();
  import->add_option("--profile-out", args->profile_out,
                     "Where to write that profile (default: the plan's name with .profile.yaml)");
  import->add_option("--comm-groups", args->comm_groups,
                     "ASTRA-sim's communicator-group JSON ({\"1\": [0, 1], ...}): the members of each pg_name");
  import
      ->add_option("--compute-cost", args->compute_cost,
                   "Price a compute node with both by its duration_micros ('duration') or its num_ops on the "
                   "platform's roofline ('flops')")
      ->capture_default_str();
  import->add_flag("--ctrl-deps", args->ctrl_deps, "Also wait for ctrl_deps (Chakra's feeder follows data_deps only)");
  import->callback([args, action] { *action = [args] { return run_import(*args);
};
}  // namespace clustertwin::cli
);

CLI::App* exp = trace.add_subcommand(
    "export-chakra",
    "Write a plan as Chakra execution traces, one .et per rank (DIR/PREFIX.<rank>.et, each written atomically), "
    "with each task's duration on --platform; import-chakra reads them back into the same plan");
exp->add_option("PLAN", args->plan, "The plan (JSON)")->required();
exp->add_option("-o,--out", args->out_dir, "The directory to write to (created if missing)")->required();
exp->add_option("--workers", args->workers, "Ranks: one file each")->required();
exp->add_option("--platform", args->platform, "Profile whose costs give duration_micros")->capture_default_str();
exp->add_option("--prefix", args->prefix, "File names PREFIX.<rank>.et (default: the plan's file name)");
exp->callback([args, action] { *action = [args] { return run_export(*args); }; });
}

}  // namespace clustertwin::cli
