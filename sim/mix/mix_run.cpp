#include "sim/mix/mix_run.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <simgrid/s4u.hpp>
#include <sstream>

#include "common/json_number.h"
#include "common/parallel.h"
#include "sim/core/isolated.h"
#include "sim/core/link_tally.h"
#include "sim/core/platform.h"
#include "sim/mix/job_setup.h"
#include "sim/mix/placement.h"

namespace clustertwin::sim::mix {
namespace {

// What one simulation of some of the mix's jobs sends back from its child:
// per job its result and the bytes it put on each link.
struct Outcome {
  std::vector<SimResult> results;
  std::vector<std::vector<LinkTally::Entry>> links;
};

// The payload: per job a line "job N", its SimResult as JSON on one line,
// then a line "link NAME BANDWIDTH BYTES" per link. Numbers are written
// shortest-exact (to_chars), so that they come back bit for bit.
std::string encode(const std::vector<SimResult>& results, const std::vector<std::vector<LinkTally::Entry>>& links) {
  std::string out;
  for (size_t j = 0; j < results.size(); ++j) {
    out += "job " + std::to_string(links[j].size()) + "\n" + sim_result_to_json(results[j]) + "\n";
    for (const LinkTally::Entry& e : links[j])
      out += "link " + e.link + " " + json_number(e.bandwidth) + " " + json_number(e.bytes) + "\n";
  }
  return out;
}

StatusOr<Outcome> decode(const std::string& payload) {
  Outcome out;
  std::istringstream in(payload);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("job ", 0) != 0) return Status::internal("mix payload: expected 'job N', got '" + line + "'");
    const long count = std::strtol(line.c_str() + 4, nullptr, 10);
    if (!std::getline(in, line)) return Status::internal("mix payload: a job without its result");
    auto result = sim_result_from_json(line);
    if (!result.is_ok()) return result.status();
    out.results.push_back(std::move(result).value());
    out.links.emplace_back();
    for (long i = 0; i < count && std::getline(in, line); ++i) {
      std::istringstream fields(line);
      std::string word;
      LinkTally::Entry e;
      fields >> word >> e.link >> e.bandwidth >> e.bytes;
      out.links.back().push_back(e);
    }
  }
  return out;
}

// Runs `jobs` together in one engine on the whole cluster's platform (in
// the child process run_isolated made); `trace_suffix` names their traces.
StatusOr<std::string> run_together(const cluster::ClusterProfile& profile, const std::vector<const JobSetup*>& jobs,
                                   const std::string& trace_dir, const std::string& trace_suffix) {
  TwinEngine twin(profile.devices() <= kStackGuardMaxWorkers);
  // The whole cluster, whatever the jobs use: a pod's uplink carries what
  // all its nodes can send, whether or not a job sits on every node.
  auto platform = Platform::build(profile, profile.devices());
  if (!platform.is_ok()) return platform.status();
  std::vector<std::unique_ptr<Platform>> views;
  std::vector<std::unique_ptr<LinkTally>> tallies;
  std::vector<std::unique_ptr<TwinRun>> runs;
  for (const JobSetup* job : jobs) {
    const SimOptions& options = job->job->options();
    auto view = (*platform)->place(job->profile, job->nodes, options.workers, job->name);
    if (!view.is_ok()) return view.status();
    views.push_back(std::move(view).value());
    views.back()->set_group_merge_min_nodes(options.group_merge_min_nodes);
    tallies.push_back(std::make_unique<LinkTally>());
    views.back()->set_link_tally(tallies.back().get());
    runs.push_back(job->job->run_on(*views.back()));
  }
  for (auto& run : runs)
    run->start();
  twin.engine().run();
  std::vector<SimResult> results;
  std::vector<std::vector<LinkTally::Entry>> links;
  for (size_t j = 0; j < jobs.size(); ++j) {
    CT_RETURN_IF_ERROR(runs[j]->check_complete().with_context("job '" + jobs[j]->name + "'"));
    results.push_back(runs[j]->result());
    links.push_back(tallies[j]->entries());
    if (!trace_dir.empty())
      CT_RETURN_IF_ERROR(runs[j]->write_trace(trace_dir + "/" + jobs[j]->name + trace_suffix + ".json"));
  }
  return encode(results, links);
}

// Simulation 0 is the mix; simulation 1 + j is job j alone on the same nodes of the same platform. Each runs in
// its own process, options.parallel at a time.
StatusOr<std::vector<Outcome>> run_simulations(const MixSpec& mix, const cluster::ClusterProfile& profile,
                                               const MixOptions& options, const std::vector<JobSetup>& setups,
                                               bool mix_is_alone) {
  std::vector<std::vector<const JobSetup*>> sims(1);
  for (const JobSetup& s : setups) {
    sims[0].push_back(&s);
    if (!mix_is_alone) sims.push_back({&s});
  }
  std::vector<StatusOr<std::string>> payloads(sims.size(), Status::internal("not run"));
  parallel_for(sims.size(), std::max(1, options.parallel), [&](size_t i) {
    payloads[i] =
        run_isolated([&]() { return run_together(profile, sims[i], options.trace_dir, i == 0 ? "" : "-alone"); });
  });
  std::vector<Outcome> outcomes;
  for (size_t i = 0; i < sims.size(); ++i) {
    const std::string what = i == 0 ? "the mix" : "job '" + setups[i - 1].name + "' alone";
    if (!payloads[i].is_ok()) return payloads[i].status().with_context(mix.file + ": " + what);
    auto outcome = decode(*payloads[i]);
    if (!outcome.is_ok()) return outcome.status();
    outcomes.push_back(std::move(outcome).value());
  }
  return outcomes;
}

// Each job's result: its nodes and pods, its step times alone and in the mix, its resilience; and the makespan.
void add_job_results(const MixSpec& mix, const cluster::ClusterProfile& profile, const std::vector<JobSetup>& setups,
                     const std::vector<Outcome>& outcomes, bool mix_is_alone, MixResult& out) {
  const Outcome& together = outcomes[0];
  const std::vector<int> pod = pod_of_nodes(profile);
  for (size_t j = 0; j < setups.size(); ++j) {
    JobResult r;
    r.name = setups[j].name;
    r.runs = setups[j].job->runs();
    r.workers = setups[j].job->options().workers;
    r.nodes = setups[j].nodes;
    std::set<int> pods;
    for (int node : r.nodes)
      pods.insert(pod[node]);
    r.pods = static_cast<int>(pods.size());
    r.alone = mix_is_alone ? together.results[0] : outcomes[j + 1].results[0];
    r.mixed = together.results[j];
    r.slowdown = r.alone.step_time_s > 0 ? r.mixed.step_time_s / r.alone.step_time_s : 0;
    if (mix.failures.present && !mix.jobs[j].checkpoint_every.empty()) {
      r.has_resilience = true;
      r.resilience = job_resilience(mix.jobs[j], mix.failures, r.nodes, out.seed, r.mixed.step_time_s);
    }
    for (double end : r.mixed.step_end_s)
      out.makespan_s = std::max(out.makespan_s, end);
    out.jobs.push_back(std::move(r));
  }
}

// The links several jobs used in the mix, busiest first, at most options.top_links of them.
void add_contended_links(const std::vector<JobSetup>& setups, const Outcome& together, const MixOptions& options,
                         MixResult& out) {
  // Links by name, each with the bytes of every job that used it in the mix.
  std::map<std::string, ContendedLink> links;
  for (size_t j = 0; j < setups.size(); ++j) {
    for (const LinkTally::Entry& e : together.links[j]) {
      ContendedLink& l = links[e.link];
      l.link = e.link;
      l.bandwidth = e.bandwidth;
      l.bytes += e.bytes;
      l.bytes_by_job.emplace_back(setups[j].name, e.bytes);
    }
  }
  std::vector<ContendedLink> shared;
  for (auto& [name, l] : links) {
    if (l.bytes_by_job.size() < 2) continue;
    l.utilization = out.makespan_s > 0 && l.bandwidth > 0 ? l.bytes / (l.bandwidth * out.makespan_s) : 0;
    shared.push_back(l);
  }
  out.shared_links = static_cast<int>(shared.size());
  std::stable_sort(shared.begin(), shared.end(),
                   [](const ContendedLink& a, const ContendedLink& b) { return a.utilization > b.utilization; });
  if (static_cast<int>(shared.size()) > options.top_links) shared.resize(std::max(0, options.top_links));
  out.contended = std::move(shared);
}

}  // namespace

StatusOr<MixResult> run_mix(const MixSpec& mix, const cluster::ClusterProfile& profile, const MixOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  MixResult out;
  out.file = mix.file;
  out.profile = profile.name;
  out.placement = options.placement.empty() ? mix.placement : options.placement;
  out.seed = options.seed_given ? options.seed : mix.seed;
  out.failures = mix.failures;
  auto placement = place_jobs(mix, profile, out.placement, out.seed);
  if (!placement.is_ok()) return placement.status();
  std::vector<JobSetup> setups;
  for (size_t j = 0; j < mix.jobs.size(); ++j) {
    auto setup = make_job_setup(mix, mix.jobs[j], profile, (*placement)[j], out.seed);
    if (!setup.is_ok()) return setup.status();
    setups.push_back(std::move(setup).value());
  }
  // A mix of one job is that job alone, the same simulation (unless its trace is wanted twice).
  const bool mix_is_alone = setups.size() == 1 && options.trace_dir.empty();
  auto outcomes = run_simulations(mix, profile, options, setups, mix_is_alone);
  if (!outcomes.is_ok()) return outcomes.status();
  add_job_results(mix, profile, setups, *outcomes, mix_is_alone, out);
  add_contended_links(setups, (*outcomes)[0], options, out);
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return out;
}

}  // namespace clustertwin::sim::mix
