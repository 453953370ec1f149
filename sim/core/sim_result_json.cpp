// SimResult <-> JSON, for the command's --json output and for bringing the
// result back from the simulation's child process.

#include <nlohmann/json.hpp>

#include "sim/core/simulator.h"

namespace clustertwin::sim {

std::string sim_result_to_json(const SimResult& r) {
  nlohmann::ordered_json j;
  j["system"] = r.system;
  j["variant"] = r.variant;
  j["platform"] = r.platform;
  j["workers"] = r.workers;
  j["steps"] = r.steps;
  j["warmup_steps"] = r.warmup_steps;
  j["drain_steps"] = r.drain_steps;
  j["fidelity"] = std::string(fidelity_name(r.fidelity));
  j["step_time_s"] = r.step_time_s;
  j["step_end_s"] = r.step_end_s;
  j["compute_s"] = r.compute_s;
  j["comm_s"] = r.comm_s;
  j["exposed_comm_s"] = r.exposed_comm_s;
  j["mfu"] = r.mfu;
  j["streams"] = nlohmann::ordered_json::array();
  for (const StreamMetrics& s : r.streams) {
    j["streams"].push_back({{"stream", s.stream}, {"busy_s", s.busy_s}, {"utilization", s.utilization}});
  }
  j["tasks"] = nlohmann::ordered_json::array();
  for (const TaskMetrics& t : r.tasks)
    j["tasks"].push_back({{"name", t.name}, {"mean_s", t.mean_s}, {"max_s", t.max_s}});
  j["breakdown"] = nlohmann::ordered_json::array();
  for (const LayerMetrics& l : r.breakdown)
    j["breakdown"].push_back({{"name", l.name}, {"busy_s", l.busy_s}, {"exposed_s", l.exposed_s}});
  j["simulated_workers"] = r.simulated_workers;
  j["events"] = r.events;
  j["collectives_priced_once"] = r.collectives_priced_once;
  return j.dump();
}

StatusOr<SimResult> sim_result_from_json(const std::string& text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    SimResult r;
    r.system = j.at("system").get<std::string>();
    r.variant = j.at("variant").get<std::string>();
    r.platform = j.at("platform").get<std::string>();
    r.workers = j.at("workers").get<int>();
    r.steps = j.at("steps").get<int>();
    r.warmup_steps = j.at("warmup_steps").get<int>();
    r.drain_steps = j.at("drain_steps").get<int>();
    r.fidelity = j.at("fidelity").get<std::string>() == "step" ? Fidelity::kStep : Fidelity::kFlow;
    r.step_time_s = j.at("step_time_s").get<double>();
    r.step_end_s = j.at("step_end_s").get<std::vector<double>>();
    r.compute_s = j.at("compute_s").get<double>();
    r.comm_s = j.at("comm_s").get<double>();
    r.exposed_comm_s = j.at("exposed_comm_s").get<double>();
    r.mfu = j.at("mfu").get<double>();
    for (const auto& s : j.at("streams")) {
      r.streams.push_back(
          {s.at("stream").get<std::string>(), s.at("busy_s").get<double>(), s.at("utilization").get<double>()});
    }
    for (const auto& t : j.at("tasks")) {
      r.tasks.push_back({t.at("name").get<std::string>(), t.at("mean_s").get<double>(), t.at("max_s").get<double>()});
    }
    for (const auto& l : j.at("breakdown")) {
      r.breakdown.push_back(
          {l.at("name").get<std::string>(), l.at("busy_s").get<double>(), l.at("exposed_s").get<double>()});
    }
    r.simulated_workers = j.at("simulated_workers").get<int>();
    r.events = j.at("events").get<int64_t>();
    r.collectives_priced_once = j.value("collectives_priced_once", int64_t{0});
    return r;
  } catch (const nlohmann::json::exception& e) {
    return Status::internal(std::string("simulation result is not readable: ") + e.what());
  }
}

}  // namespace clustertwin::sim
