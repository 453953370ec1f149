// The report of a mix plan: JSON (machine-readable, deterministic) and a table.

#include <algorithm>
#include <cstdio>

#include "common/json.h"
#include "common/text.h"
#include "sim/mix/mix_plan.h"

namespace clustertwin::sim::mix {
namespace {

using Json = nlohmann::ordered_json;

// "a 3, b 4": the jobs' nodes.
std::string nodes_by_job(const MixPlan& plan, const std::vector<int>& workers) {
  std::string out;
  for (size_t j = 0; j < workers.size(); ++j) {
    const int per_node = std::max(1, plan.devices_per_node);
    out += (j ? ", " : "") + plan.jobs[j].name + " " + std::to_string((workers[j] + per_node - 1) / per_node);
  }
  return out;
}

// The busiest link several jobs shared: "up100001 (pod 1's uplink) 61% busy".
std::string busiest_shared(const MixTry& t) {
  if (t.result.contended.empty()) return "no shared link";
  const ContendedLink& l = t.result.contended.front();
  return "busiest shared link " + l.link + ", " + format_number("%.0f", 100 * l.utilization) + "% busy";
}

std::string outcome(const MixTry& t) {
  if (!t.placed) return "not placed: " + t.why;
  return (t.meets ? "every target met" : "misses: " + t.why) + " (" + busiest_shared(t) + ")";
}

Json try_json(const MixPlan& plan, const MixTry& t) {
  Json j = {{"nodes", t.nodes}, {"placement", t.placement}, {"workers", Json::object()}};
  for (size_t k = 0; k < t.workers.size(); ++k)
    j["workers"][plan.jobs[k].name] = t.workers[k];
  j["placed"] = t.placed;
  j["meets"] = t.meets;
  if (t.placed) {
    j["pod_nodes"] = t.pod_nodes;
    j["worst_of_target"] = t.worst;
  }
  if (!t.why.empty()) j["why"] = t.why;
  if (t.placed) {
    j["shared_links"] = t.result.shared_links;
    j["contended_links"] = Json::array();
    for (const ContendedLink& l : t.result.contended) {
      Json link = {{"link", l.link}, {"utilization", l.utilization}, {"bytes_by_job", Json::object()}};
      for (const auto& [job, bytes] : l.bytes_by_job)
        link["bytes_by_job"][job] = bytes;
      j["contended_links"].push_back(link);
    }
  }
  return j;
}

// What the search assumed, one clause each (docs/mix.md explains them).
const std::vector<std::string>& assumptions() {
  static const std::vector<std::string> all = {
      "a job's throughput does not fall as it grows, and its throughput per worker does not rise (as plan SYSTEM "
      "assumes): one node below its alone size misses, so no fewer nodes meet its target alone",
      "a job alone is as fast on the lowest nodes (packed from node 0) as anywhere (uniform nodes, a symmetric "
      "fabric)",
      "sharing the fabric never makes a job faster, so the alone sizes together bound the mix from below",
      "in the mix, a job's throughput per worker does not rise as it grows (the others fixed): its best rate over "
      "the policies bounds how far it must grow",
      "only the placement policies listed are tried; above the lower bound the answer is minimal against one node "
      "fewer (every split of it, or each grown job a node smaller when the splits are many), not against every "
      "smaller count"};
  return all;
}

// Why no fewer nodes will do, as far as the search can say.
std::string minimal_because(const MixPlan& plan) {
  if (plan.answer.nodes == plan.lower_bound_nodes) return "it equals the lower bound";
  return plan.below_every_split ? "every split of one node fewer misses under every policy"
                                : "each grown job one node smaller misses under every policy";
}

// One job's entry: its target, its alone size and, when there is an answer, its place in it.
Json job_json(const MixPlan& plan, size_t k) {
  const JobSpec& job = plan.jobs[k];
  const AloneSize& a = plan.alone[k];
  Json o = {{"name", job.name}, {"sized", a.searched}};
  if (job.target.present()) {
    o["target"] = {{target_unit_key(job.target.unit), job.target.value}};
    if (job.target.unit == JobTarget::Unit::kSamplesPerS) o["target"]["batch_per_worker"] = job.target.batch_per_worker;
  } else {
    o["target"] = nullptr;
  }
  o["alone_workers"] = a.workers;
  if (a.searched) {
    o["alone_throughput"] = a.throughput;
    o["alone_points"] = a.points;
    if (a.has_below) o["alone_below"] = {{"workers", a.below_workers}, {"throughput", a.below_throughput}};
  }
  if (plan.feasible) {
    const JobResult& r = plan.answer.result.jobs[k];
    o["workers"] = r.workers;
    o["nodes"] = r.nodes;
    o["pods"] = r.pods;
    if (job.target.present()) {
      o["throughput_alone"] = job_throughput(job.target, r.workers, r.alone.step_time_s);
      o["throughput_in_mix"] = job_throughput(job.target, r.workers, r.mixed.step_time_s);
    }
    o["slowdown"] = r.slowdown;
  }
  return o;
}

Json tries_json(const MixPlan& plan, const std::vector<MixTry>& tries) {
  Json all = Json::array();
  for (const MixTry& t : tries)
    all.push_back(try_json(plan, t));
  return all;
}

// "#   rec: target 3,000,000 samples/s: 560 workers (...)": how a job was sized alone.
std::string alone_line(const JobSpec& job, const AloneSize& a) {
  const std::string unit = target_unit_name(job.target.unit);
  std::string line = "#   " + job.name + ": ";
  if (!a.searched) {
    line += std::to_string(job.workers) + " workers, fixed by the file" +
            (job.target.present() ? "; target " + with_thousands(job.target.value) + " " + unit : "");
  } else if (a.workers == 0) {
    line += "target " + with_thousands(job.target.value) + " " + unit + ": not met alone";
  } else {
    line += "target " + with_thousands(job.target.value) + " " + unit + ": " + std::to_string(a.workers) +
            " workers (" + with_thousands(a.throughput) + ")";
    if (a.has_below) {
      line += "; " + std::to_string(a.below_workers) + " workers: " + with_thousands(a.below_throughput) + ", short";
    }
    line += "; " + std::to_string(a.points) + " counts simulated";
  }
  return line + "\n";
}

// The table's header: the cluster, the policies, each job alone and the lower bound.
std::string plan_header(const MixPlan& plan) {
  std::string out = "# clustertwin plan mix: " + plan.file + " on " + plan.profile + " (" +
                    std::to_string(plan.profile_nodes) + " nodes x " + std::to_string(plan.devices_per_node) +
                    " devices): the fewest nodes on which every job meets its target\n";
  std::string policies;
  for (const std::string& p : plan.placements)
    policies += (policies.empty() ? "" : ", ") + p;
  out += "# policies, in order of preference: " + policies + "; seed " + std::to_string(plan.seed) + "\n";
  out += "# alone (each job on an empty cluster, packed from node 0):\n";
  for (size_t k = 0; k < plan.jobs.size(); ++k)
    out += alone_line(plan.jobs[k], plan.alone[k]);
  if (plan.lower_bound_nodes > 0)
    out += "# lower bound: " + std::to_string(plan.lower_bound_nodes) + " nodes (the alone sizes together)\n";
  return out;
}

// The answer's jobs, one row each: sizes, target, throughput alone and in the mix.
std::string answer_jobs(const MixPlan& plan) {
  const MixTry& a = plan.answer;
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "  %-12s %8s %6s %5s %22s %14s %14s %10s %9s\n", "job", "workers", "nodes", "pods",
                "target", "alone", "in mix", "of target", "slowdown");
  out += line;
  for (size_t k = 0; k < plan.jobs.size(); ++k) {
    const JobSpec& job = plan.jobs[k];
    const JobResult& r = a.result.jobs[k];
    std::string target = "-", alone = "-", mixed = "-", share = "-";
    if (job.target.present()) {
      const double in_mix = job_throughput(job.target, r.workers, r.mixed.step_time_s);
      target = with_thousands(job.target.value) + " " + target_unit_name(job.target.unit);
      alone = with_thousands(job_throughput(job.target, r.workers, r.alone.step_time_s));
      mixed = with_thousands(in_mix);
      share = format_number("%.1f", 100 * in_mix / job.target.value) + "%";
    }
    std::snprintf(line, sizeof line, "  %-12s %8d %6zu %5d %22s %14s %14s %10s %8.3fx\n", job.name.c_str(), r.workers,
                  r.nodes.size(), r.pods, target.c_str(), alone.c_str(), mixed.c_str(), share.c_str(), r.slowdown);
    out += line;
  }
  return out;
}

// The answer: its size and why it is minimal, its jobs, the policies at it and one node fewer, its mix.
std::string answer_section(const MixPlan& plan) {
  const MixTry& a = plan.answer;
  const int idle = a.pod_nodes - a.nodes;
  std::string out = "answer: " + std::to_string(a.nodes) + " nodes (" + nodes_by_job(plan, a.workers) +
                    "), placement " + a.placement + "; " +
                    (a.nodes == plan.lower_bound_nodes
                         ? "minimal: it equals the lower bound"
                         : std::to_string(a.nodes - plan.lower_bound_nodes) +
                               " above the lower bound (contention costs them); minimal: " + minimal_because(plan)) +
                    "\n";
  if (idle > 0) {
    out += "  (their pods hold " + std::to_string(a.pod_nodes) + " nodes: " + std::to_string(idle) +
           " left idle, free for work that stays inside a node)\n";
  }
  out += answer_jobs(plan);
  out += "\n# every policy at the answer's sizes:\n";
  for (const MixTry& t : plan.at_answer)
    out += "#   " + t.placement + ": " + outcome(t) + "\n";
  if (!plan.below.empty()) {
    out += plan.below_every_split ? "# one node fewer (every split among the sized jobs), every policy misses:\n"
                                  : "# one node fewer (each grown job a node smaller), every policy misses:\n";
    for (const MixTry& t : plan.below)
      out += "#   " + std::to_string(t.nodes) + " nodes (" + nodes_by_job(plan, t.workers) + ") " + t.placement + ": " +
             outcome(t) + "\n";
  }
  out += "\n# the answer's mix, as `clustertwin sim mix` runs it with these sizes and nodes:\n";
  out += mix_result_table(a.result);
  return out;
}

}  // namespace

std::string mix_plan_json(const MixPlan& plan) {
  Json j;
  j["mix"] = plan.file;
  j["profile"] = plan.profile;
  j["profile_nodes"] = plan.profile_nodes;
  j["devices_per_node"] = plan.devices_per_node;
  j["placements"] = plan.placements;
  j["seed"] = plan.seed;
  j["feasible"] = plan.feasible;
  if (!plan.feasible) j["why_not"] = plan.why_not;
  j["lower_bound_nodes"] = plan.lower_bound_nodes;
  j["jobs"] = Json::array();
  for (size_t k = 0; k < plan.jobs.size(); ++k)
    j["jobs"].push_back(job_json(plan, k));
  if (plan.feasible) {
    j["answer"] = {{"nodes", plan.answer.nodes},
                   {"pod_nodes", plan.answer.pod_nodes},
                   {"placement", plan.answer.placement},
                   {"minimal", minimal_because(plan)}};
    j["answer"]["mix"] = mix_result_document(plan.answer.result);
    j["at_answer"] = tries_json(plan, plan.at_answer);
    j["one_node_fewer"] = tries_json(plan, plan.below);
  } else {
    j["answer"] = nullptr;
  }
  j["tries"] = tries_json(plan, plan.tries);
  j["simulations"] = plan.simulations;
  j["assumptions"] = assumptions();
  return json_document(j, 1);
}

std::string mix_plan_table(const MixPlan& plan) {
  std::string out = plan_header(plan) + "\n";
  if (!plan.feasible) {
    out += "no answer: " + plan.why_not + "\n";
  } else {
    out += answer_section(plan);
  }
  out += "\n# mixes tried, in order (" + std::to_string(plan.tries.size()) + "; " + std::to_string(plan.simulations) +
         " simulations with the alone searches):\n";
  for (const MixTry& t : plan.tries)
    out += "#   " + std::to_string(t.nodes) + " nodes (" + nodes_by_job(plan, t.workers) + ") " + t.placement + ": " +
           outcome(t) + "\n";
  out += "# assumed:\n";
  for (const std::string& a : assumptions())
    out += "#   - " + a + "\n";
  return out;
}

}  // namespace clustertwin::sim::mix
