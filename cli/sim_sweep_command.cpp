// clustertwin sim sweep: mixes x placements x seeds, one shard of them per
// task of a batch system; clustertwin sim sweep-merge: their point files as
// one table. Each point is one `sim mix` (one simulation per process).

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

#include "cli/command.h"
#include "cli/sweep_options.h"
#include "common/file_io.h"
#include "common/parallel.h"
#include "models/cluster/cluster_profile.h"
#include "sim/mix/mix_run.h"
#include "sim/mix/mix_spec.h"
#include "sim/mix/sweep.h"
#include "sim/mix/sweep_merge.h"

namespace clustertwin::cli {
namespace {

struct SweepArgs {
  std::vector<std::string> mixes;
  std::string placements = "packed,spread,random";
  std::string seeds = "0";
  std::string shard;
  bool shard_from_env = false;
  std::string out;
  bool resume = false;
  int parallel = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
};

struct MergeArgs {
  std::string dir;
  std::string csv;
  bool json = false;
  bool allow_missing = false;
};

// The sweep's mixes, placements and seeds, and the shard this task runs, from the flags.
Status parse_sweep(const SweepArgs& a, sim::mix::SweepSpec* spec, sim::mix::Shard* shard) {
  spec->mixes = a.mixes;
  auto placements = parse_placement_list(a.placements);
  if (!placements.is_ok()) return placements.status();
  spec->placements = std::move(placements).value();
  auto seeds = parse_seed_list(a.seeds);
  if (!seeds.is_ok()) return seeds.status();
  spec->seeds = std::move(seeds).value();
  if (!a.shard.empty()) {
    auto s = parse_shard(a.shard);
    if (!s.is_ok()) return s.status();
    *shard = *s;
  } else if (a.shard_from_env) {
    auto s = shard_from_env([](const char* name) { return std::getenv(name); });
    if (!s.is_ok()) return s.status();
    *shard = *s;
  }
  return Status::ok();
}

// Every mix is read and checked before any point runs: a bad file stops the task at once.
Status read_sweep_mixes(const std::vector<std::string>& files, std::vector<sim::mix::MixSpec>* mixes,
                        std::vector<cluster::ClusterProfile>* profiles) {
  for (const std::string& file : files) {
    auto mix = sim::mix::read_mix(file);
    if (!mix.is_ok()) return mix.status();
    auto profile = cluster::load_cluster_profile(mix->profile);
    if (!profile.is_ok()) return profile.status().with_context(file + ": field 'profile'");
    CT_RETURN_IF_ERROR(sim::mix::check_mix(*mix, *profile));
    mixes->push_back(std::move(mix).value());
    profiles->push_back(std::move(profile).value());
  }
  return Status::ok();
}

// --resume: a point whose file is there, of this sweep, is done; anything else there is run and replaced.
void drop_done_points(const std::string& out, const std::string& id, std::vector<sim::mix::SweepPoint>* points) {
  const size_t before = points->size();
  std::erase_if(*points, [&](const sim::mix::SweepPoint& p) {
    const std::string path = out + "/" + sim::mix::point_file_name(p.index);
    std::error_code exists_ec;
    if (!std::filesystem::exists(path, exists_ec)) return false;
    auto done = sim::mix::read_sweep_point(path);
    return done.is_ok() && done->id == id && done->result.point.index == p.index;
  });
  std::printf("# --resume: %zu of them done already, %zu to run\n", before - points->size(), points->size());
}

// Points side by side, each mix's simulations sharing what is left of --parallel; each writes its file.
Status run_points(const SweepArgs& a, const std::string& id, const sim::mix::SweepSpec& spec,
                  const std::vector<sim::mix::MixSpec>& mixes, const std::vector<cluster::ClusterProfile>& profiles,
                  const std::vector<sim::mix::SweepPoint>& points) {
  const int outer = std::max(1, std::min(a.parallel, static_cast<int>(points.size())));
  const int inner = std::max(1, a.parallel / outer);
  std::vector<Status> statuses(points.size());
  std::mutex print;
  parallel_for(points.size(), outer, [&](size_t i) {
    const sim::mix::SweepPoint& p = points[i];
    const auto start = std::chrono::steady_clock::now();
    sim::mix::MixOptions o;
    o.placement = p.placement;
    o.seed = p.seed;
    o.seed_given = true;
    o.parallel = inner;
    auto result = sim::mix::run_mix(mixes[p.mix], profiles[p.mix], o);
    const std::string path = a.out + "/" + sim::mix::point_file_name(p.index);
    statuses[i] =
        result.is_ok() ? write_file_atomically(path, sim::mix::point_json(id, spec, p, *result)) : result.status();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::lock_guard<std::mutex> lock(print);
    std::printf("  point %zu: %s %s seed %llu -> %s (%.1f s%s)\n", p.index, spec.mixes[p.mix].c_str(),
                p.placement.c_str(), static_cast<unsigned long long>(p.seed), path.c_str(), seconds,
                statuses[i].is_ok() ? "" : ", failed");
    std::fflush(stdout);
  });
  for (size_t i = 0; i < points.size(); ++i) {
    if (!statuses[i].is_ok()) return statuses[i].with_context("point " + std::to_string(points[i].index));
  }
  return Status::ok();
}

Status run_sweep(const SweepArgs& a) {
  sim::mix::SweepSpec spec;
  sim::mix::Shard shard;
  CT_RETURN_IF_ERROR(parse_sweep(a, &spec, &shard));
  std::vector<sim::mix::MixSpec> mixes;
  std::vector<cluster::ClusterProfile> profiles;
  CT_RETURN_IF_ERROR(read_sweep_mixes(spec.mixes, &mixes, &profiles));
  auto id = sim::mix::sweep_id(spec, mixes);
  if (!id.is_ok()) return id.status();
  std::error_code ec;
  std::filesystem::create_directories(a.out, ec);
  if (ec) return Status::invalid_argument("--out " + a.out + ": cannot create the folder: " + ec.message());

  std::vector<sim::mix::SweepPoint> points = sim::mix::shard_points(spec, shard);
  std::printf("# sweep %s: %zu points (%zu mixes x %zu placements x %zu seeds); shard %d/%d runs %zu of them into %s\n",
              id->c_str(), spec.points(), spec.mixes.size(), spec.placements.size(), spec.seeds.size(), shard.index,
              shard.count, points.size(), a.out.c_str());
  if (a.resume) drop_done_points(a.out, *id, &points);
  std::fflush(stdout);
  return run_points(a, *id, spec, mixes, profiles, points);
}

Status run_sweep_merge(const MergeArgs& a) {
  auto sweep = sim::mix::merge_sweep(a.dir, a.allow_missing);
  if (!sweep.is_ok()) return sweep.status();
  if (!a.csv.empty()) CT_RETURN_IF_ERROR(write_output(a.csv, sim::mix::merged_csv(*sweep)));
  if (a.json) return write_output("-", sim::mix::merged_json(*sweep));
  std::printf("%s", sim::mix::merged_table(*sweep).c_str());
  return Status::ok();
}

}  // namespace

void add_sim_sweep_commands(CLI::App& sim, Action* action) {
  auto a = std::make_shared<SweepArgs>();
  CLI::App* cmd = sim.add_subcommand(
      "sweep",
      "Run `sim mix` over mixes x placements x seeds, or one shard of them (a Slurm array task, a GNU parallel job), "
      "writing one JSON file per point into --out; merge the shards with `sim sweep-merge` (docs/mix.md, Sweeps)");
  cmd->add_option("MIX", a->mixes, "Job mix files (YAML); every shard must be given the same ones, in the same order")
      ->required();
  cmd->add_option("--placements", a->placements, "Placement policies, comma-separated")->capture_default_str();
  cmd->add_option("--seeds", a->seeds, "Seeds: a list and ranges, ascending (\"1-8\", \"0,3,5-7\")")
      ->capture_default_str();
  auto* shard = cmd->add_option("--shard", a->shard,
                                "Run only shard K of N (counting from 0): the points whose index modulo N is K");
  cmd->add_flag("--shard-from-env", a->shard_from_env,
                "Take the shard from a Slurm array task: K = SLURM_ARRAY_TASK_ID, N = SLURM_ARRAY_TASK_COUNT "
                "(submit with --array=0-(N-1))")
      ->excludes(shard);
  cmd->add_option("--out", a->out, "Folder of the point files (point-NNNNNN.json, each written atomically)")
      ->required();
  cmd->add_flag("--resume", a->resume,
                "Skip the points whose file in --out is already this sweep's (a requeued or rerun task)");
  cmd->add_option("--parallel", a->parallel,
                  "Simulations at a time (points, and each mix's simulations), each in its own process (default: "
                  "cores)")
      ->check(CLI::Range(1, 256));
  cmd->callback([a, action] { *action = [a] { return run_sweep(*a); }; });

  auto m = std::make_shared<MergeArgs>();
  CLI::App* merge = sim.add_subcommand(
      "sweep-merge",
      "Merge a sweep's point files into one table: per point and job the step time alone and in the mix and the "
      "slowdown, then per mix, placement and job the mean, min and max slowdown over the seeds");
  merge->add_option("DIR", m->dir, "Folder the sweep's shards wrote (--out)")->required();
  merge->add_option("--csv", m->csv, "Also write the per point and job rows to this CSV file");
  merge->add_flag("--json", m->json, "Print JSON instead of the table");
  merge->add_flag("--allow-missing", m->allow_missing, "Merge what is there when points are missing (listed)");
  merge->callback([m, action] { *action = [m] { return run_sweep_merge(*m); }; });
}

}  // namespace clustertwin::cli
