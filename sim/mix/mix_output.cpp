// The report of a mix: JSON (machine-readable, deterministic) and a table.

#include <cstdio>

#include "common/json.h"
#include "common/text.h"
#include "sim/mix/mix_run.h"

namespace clustertwin::sim::mix {
namespace {

using Json = nlohmann::ordered_json;

// "0-3,8,10-11": a node list, runs of consecutive nodes as ranges.
std::string node_ranges(const std::vector<int>& nodes) {
  std::string out;
  for (size_t i = 0; i < nodes.size();) {
    size_t j = i;
    while (j + 1 < nodes.size() && nodes[j + 1] == nodes[j] + 1)
      ++j;
    out += (out.empty() ? "" : ",") + std::to_string(nodes[i]);
    if (j > i) out += "-" + std::to_string(nodes[j]);
    i = j + 1;
  }
  return out;
}

Json run_json(const SimResult& r) {
  return {{"step_time_s", r.step_time_s},
          {"comm_s", r.comm_s},
          {"exposed_comm_s", r.exposed_comm_s},
          {"compute_s", r.compute_s},
          {"end_s", r.step_end_s.empty() ? 0.0 : r.step_end_s.back()}};
}

Json resilience_json(const JobResilience& res) {
  Json rows = Json::array();
  for (size_t i = 0; i < res.rows.size(); ++i) {
    const ResilienceResult& r = res.rows[i];
    rows.push_back({{"interval_s", r.interval_s},
                    {"goodput_steps_per_hour", r.goodput_steps_per_hour},
                    {"useful_fraction", r.useful_fraction},
                    {"daly_useful_fraction", res.daly_fraction[i]},
                    {"useful_s", r.useful_s},
                    {"lost_s", r.lost_s},
                    {"checkpoint_s", r.checkpoint_s},
                    {"restart_s", r.restart_s},
                    {"pending_s", r.pending_s},
                    {"failures", r.failures},
                    {"young", res.young_row && i + 1 == res.rows.size()}});
  }
  return {{"job_mtbf_s", res.mtbf_s}, {"young_interval_s", res.young_interval_s}, {"best", res.best}, {"rows", rows}};
}

// Per job with a checkpoint policy: its timelines under the mix's failures.
std::string resilience_table(const MixResult& result) {
  std::string out;
  if (!result.failures.present) return out;
  const FailureSpec& f = result.failures;
  out += "# failures: " +
         (f.node_mtbf_s > 0 ? "exponential, node MTBF " + format_number("%g", f.node_mtbf_s / 3600) + " h, seed " +
                                  std::to_string(result.seed)
                            : std::to_string(f.listed.size()) + " listed") +
         "; horizon " + format_number("%g", f.horizon_s / 3600) + " h; goodput with the step time in the mix\n";
  char line[512];
  std::snprintf(line, sizeof line, "# %-12s %14s %16s %8s %8s %10s %10s %10s %9s %8s\n", "job", "interval (s)",
                "goodput (st/h)", "useful", "Daly", "lost (h)", "ckpt (h)", "restart (h)", "failures", "");
  out += line;
  for (const JobResult& job : result.jobs) {
    if (!job.has_resilience) continue;
    const JobResilience& res = job.resilience;
    for (size_t i = 0; i < res.rows.size(); ++i) {
      const ResilienceResult& r = res.rows[i];
      std::string mark = i == res.best ? "best" : "";
      if (res.young_row && i + 1 == res.rows.size()) mark += mark.empty() ? "Young" : ", Young";
      std::snprintf(line, sizeof line, "  %-12s %14.1f %16.1f %7.2f%% %7.2f%% %10.2f %10.2f %10.2f %9d %8s\n",
                    job.name.c_str(), r.interval_s, r.goodput_steps_per_hour, r.useful_fraction * 100,
                    res.daly_fraction[i] * 100, r.lost_s / 3600, r.checkpoint_s / 3600, r.restart_s / 3600, r.failures,
                    mark.c_str());
      out += line;
    }
    if (res.mtbf_s > 0) {
      out += "#   " + job.name + ": job MTBF " + format_number("%.2f", res.mtbf_s / 3600) + " h over " +
             std::to_string(job.nodes.size()) +
             " nodes; Young's interval sqrt(2 C M) = " + format_number("%.1f", res.young_interval_s) + " s\n";
    }
  }
  return out;
}

// One job's object: its nodes, its runs alone and in the mix, its slowdown and resilience.
Json job_json(const JobResult& r) {
  Json j = {{"name", r.name},           {"runs", r.runs},
            {"workers", r.workers},     {"nodes", r.nodes},
            {"pods", r.pods},           {"fidelity", std::string(fidelity_name(r.mixed.fidelity))},
            {"steps", r.mixed.steps},   {"alone", run_json(r.alone)},
            {"mix", run_json(r.mixed)}, {"slowdown", r.slowdown}};
  if (r.has_resilience) j["resilience"] = resilience_json(r.resilience);
  return j;
}

// One contended link's object: its bandwidth, bytes, utilization and each job's bytes.
Json link_json(const ContendedLink& l) {
  Json by_job = Json::object();
  for (const auto& [job, bytes] : l.bytes_by_job)
    by_job[job] = bytes;
  return {{"link", l.link},
          {"bandwidth", l.bandwidth},
          {"bytes", l.bytes},
          {"utilization", l.utilization},
          {"bytes_by_job", by_job}};
}

}  // namespace

Json mix_result_document(const MixResult& result) {
  Json jobs = Json::array();
  for (const JobResult& job : result.jobs)
    jobs.push_back(job_json(job));
  Json failures = nullptr;
  if (result.failures.present) {
    failures = {{"node_mtbf_s", result.failures.node_mtbf_s},
                {"listed", result.failures.listed.size()},
                {"horizon_s", result.failures.horizon_s}};
  }
  Json links = Json::array();
  for (const ContendedLink& l : result.contended)
    links.push_back(link_json(l));
  return {{"mix", result.file},   {"profile", result.profile},           {"placement", result.placement},
          {"seed", result.seed},  {"makespan_s", result.makespan_s},     {"jobs", jobs},
          {"failures", failures}, {"shared_links", result.shared_links}, {"contended_links", links}};
}

std::string mix_result_json(const MixResult& result) {
  return json_document(mix_result_document(result));
}
std::string mix_result_table(const MixResult& result) {
  std::string out = "# clustertwin sim mix: " + result.file + " on " + result.profile + ", placement " +
                    result.placement +
                    (result.placement == "random" ? " (seed " + std::to_string(result.seed) + ")" : "") + "\n";
  char line[512];
  std::snprintf(line, sizeof line, "# %-12s %-26s %8s %-16s %5s %9s %12s %12s %9s\n", "job", "runs", "workers", "nodes",
                "pods", "fidelity", "alone (ms)", "in mix (ms)", "slowdown");
  out += line;
  for (const JobResult& r : result.jobs) {
    // Long node lists (a spread job's) in full in --json only.
    std::string nodes = node_ranges(r.nodes);
    if (nodes.size() > 16) nodes = std::to_string(r.nodes.size()) + " (--json)";
    std::snprintf(line, sizeof line, "  %-12s %-26s %8d %-16s %5d %9s %12.3f %12.3f %8.3fx\n", r.name.c_str(),
                  r.runs.c_str(), r.workers, nodes.c_str(), r.pods,
                  std::string(fidelity_name(r.mixed.fidelity)).c_str(), r.alone.step_time_s * 1e3,
                  r.mixed.step_time_s * 1e3, r.slowdown);
    out += line;
  }
  out += resilience_table(result);
  if (result.contended.empty()) {
    out += "# no link carried two jobs' traffic: the jobs share no link of the fabric\n";
    return out;
  }
  out += "# links carrying several jobs' traffic: " + std::to_string(result.shared_links) + "; the busiest (" +
         "utilisation = bytes / (bandwidth x " + format_number("%.3f", result.makespan_s * 1e3) + " ms simulated)):\n";
  std::snprintf(line, sizeof line, "# %-20s %14s %12s %12s  %s\n", "link", "bandwidth", "GB carried", "utilisation",
                "GB by job");
  out += line;
  for (const ContendedLink& l : result.contended) {
    std::string by_job;
    for (const auto& [job, bytes] : l.bytes_by_job)
      by_job += (by_job.empty() ? "" : ", ") + job + " " + format_number("%.3f", bytes / 1e9);
    std::snprintf(line, sizeof line, "  %-20s %9.1f GB/s %12.3f %11.1f%%  %s\n", l.link.c_str(), l.bandwidth / 1e9,
                  l.bytes / 1e9, l.utilization * 100, by_job.c_str());
    out += line;
  }
  return out;
}

}  // namespace clustertwin::sim::mix
