// Reading a recorded run from its trace (the plan and step counts in the
// metadata's config, the events checked against the plan) and the step time
// it took over the measured steps.
#include "calibrators/recorded_run.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "models/plan/plan_json.h"
#include "traces/trace_reader.h"

namespace clustertwin::calibrators {

StatusOr<RecordedRun> read_recorded_run(const std::string& path) {
  auto trace = traces::read_trace(path);
  if (!trace.is_ok()) return trace.status();
  RecordedRun run;
  run.path = path;
  run.metadata = trace->metadata;
  run.events = std::move(trace->events);
  auto bad = [&](const std::string& field, const std::string& why) {
    return Status::invalid_argument(path + ": field 'metadata.config." + field + "': " + why);
  };
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(run.metadata.config_json);
  } catch (const nlohmann::json::exception&) {
    return Status::invalid_argument(path + ": field 'metadata.config': not a JSON object");
  }
  if (!config.is_object() || !config.contains("plan") || !config["plan"].is_object()) {
    return bad("plan", "missing: replay needs a trace recorded with the plan (clustertwin run nestpipe --trace)");
  }
  auto plan = models::plan_from_json(config["plan"].dump(), path + " (metadata.config.plan)");
  if (!plan.is_ok()) return plan.status();
  run.plan = std::move(*plan);
  for (const char* field : {"runner_steps", "prologue_steps"}) {
    if (!config.contains(field) || !config[field].is_number_integer() || config[field].get<int64_t>() < 0 ||
        config[field].get<int64_t>() > 1'000'000) {
      return bad(field, "missing or not a step count");
    }
  }
  run.runner_steps = config["runner_steps"].get<int>();
  run.prologue_steps = config["prologue_steps"].get<int>();
  if (config.contains("step_spans_us")) {
    const nlohmann::json& ranks = config["step_spans_us"];
    auto is_span = [](const nlohmann::json& s) {
      return s.is_array() && s.size() == 2 && s[0].is_number() && s[1].is_number() &&
             s[1].get<double>() >= s[0].get<double>();
    };
    auto is_rank = [&](const nlohmann::json& r) {
      return r.is_object() && r.contains("spans") && r["spans"].is_array() &&
             r["spans"].size() == static_cast<size_t>(run.runner_steps) &&
             std::all_of(r["spans"].begin(), r["spans"].end(), is_span);
    };
    if (!ranks.is_array() || ranks.empty() || !std::all_of(ranks.begin(), ranks.end(), is_rank))
      return bad("step_spans_us", "not a list of ranks' {spans: one [start, end] (end >= start) per runner step}");
    for (const nlohmann::json& r : ranks) {
      run.step_spans.emplace_back();
      for (const nlohmann::json& s : r["spans"])
        run.step_spans.back().emplace_back(s[0].get<double>() * 1e-6, s[1].get<double>() * 1e-6);
    }
  }
  if (run.metadata.world_size < 1) {
    return Status::invalid_argument(path + ": field 'metadata.world_size': " + std::to_string(run.metadata.world_size) +
                                    " must be >= 1");
  }
  for (size_t i = 0; i < run.events.size(); ++i) {
    const traces::Event& e = run.events[i];
    if (!e.task_id || *e.task_id < 0 || *e.task_id >= static_cast<int64_t>(run.plan.tasks.size()) || !e.step) {
      return Status::invalid_argument(path + ": event " + std::to_string(i) +
                                      ": no task of the recorded plan (field 'task_id' or 'step' missing or out of "
                                      "range)");
    }
  }
  return run;
}

StatusOr<double> recorded_step_time(const RecordedRun& run, int first_step, int last_step) {
  if (!run.step_spans.empty() && first_step >= 0 && last_step >= first_step && last_step < run.runner_steps) {
    double slowest = 0;
    for (const auto& spans : run.step_spans) {
      slowest = std::max(slowest,
                         spans[static_cast<size_t>(last_step)].second - spans[static_cast<size_t>(first_step)].first);
    }
    return slowest / (last_step - first_step + 1);
  }
  if (first_step < 1 || last_step < first_step || last_step >= run.runner_steps) {
    return Status::invalid_argument(run.path + ": measured steps [" + std::to_string(first_step) + ", " +
                                    std::to_string(last_step) + "] do not fit the run's " +
                                    std::to_string(run.runner_steps) + " runner steps with one before them");
  }
  std::vector<double> end(run.runner_steps, 0.0);
  for (const traces::Event& e : run.events) {
    if (*e.step >= 0 && *e.step < run.runner_steps) end[*e.step] = std::max(end[*e.step], e.end_us() * 1e-6);
  }
  return (end[last_step] - end[first_step - 1]) / (last_step - first_step + 1);
}

}  // namespace clustertwin::calibrators
