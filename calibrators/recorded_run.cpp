// Reading a recorded run from its trace (the plan and step counts in the
// metadata's config, the events checked against the plan) and the step time
// it took over the measured steps.
#include "calibrators/recorded_run.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "models/plan/plan_json.h"
#include "traces/trace_reader.h"

namespace clustertwin::calibrators {

namespace {

// Each rank's step spans (config.step_spans_us, a profiler trace's): [start, end] per runner step, in seconds.
Status read_step_spans(const std::string& path, const nlohmann::json& ranks, RecordedRun* run) {
  auto is_span = [](const nlohmann::json& s) {
    return s.is_array() && s.size() == 2 && s[0].is_number() && s[1].is_number() &&
           s[1].get<double>() >= s[0].get<double>();
  };
  auto is_rank = [&](const nlohmann::json& r) {
    return r.is_object() && r.contains("spans") && r["spans"].is_array() &&
           r["spans"].size() == static_cast<size_t>(run->runner_steps) &&
           std::all_of(r["spans"].begin(), r["spans"].end(), is_span);
  };
  if (!ranks.is_array() || ranks.empty() || !std::all_of(ranks.begin(), ranks.end(), is_rank)) {
    return Status::invalid_argument(path + ": field 'metadata.config.step_spans_us': " +
                                    "not a list of ranks' {spans: one [start, end] (end >= start) per runner step}");
  }
  for (const nlohmann::json& r : ranks) {
    run->step_span_ranks.push_back(r.contains("rank") && r["rank"].is_number_integer()
                                       ? r["rank"].get<int64_t>()
                                       : static_cast<int64_t>(run->step_span_ranks.size()));
    run->step_spans.emplace_back();
    for (const nlohmann::json& s : r["spans"])
      run->step_spans.back().emplace_back(s[0].get<double>() * 1e-6, s[1].get<double>() * 1e-6);
  }
  return Status::ok();
}

// Every event names a task of the plan and a step.
Status check_events_in_plan(const std::string& path, const RecordedRun& run) {
  for (size_t i = 0; i < run.events.size(); ++i) {
    const traces::Event& e = run.events[i];
    if (!e.task_id || *e.task_id < 0 || *e.task_id >= static_cast<int64_t>(run.plan.tasks.size()) || !e.step) {
      return Status::invalid_argument(path + ": event " + std::to_string(i) +
                                      ": no task of the recorded plan (field 'task_id' or 'step' missing or out of "
                                      "range)");
    }
  }
  return Status::ok();
}

}  // namespace

StatusOr<SystemTrace> read_system_trace(const std::string& path, const std::string& system) {
  auto trace = traces::read_trace(path);
  if (!trace.is_ok()) return trace.status();
  SystemTrace t;
  t.path = path;
  t.metadata = trace->metadata;
  t.events = std::move(trace->events);
  if (t.metadata.system != system) {
    return Status::invalid_argument(path + ": field 'metadata.system': '" + t.metadata.system +
                                    "' is not the system asked for ('" + system + "')");
  }
  try {
    t.config = nlohmann::json::parse(t.metadata.config_json);
  } catch (const nlohmann::json::exception&) {
    return Status::invalid_argument(path + ": field 'metadata.config': not a JSON object");
  }
  if (!t.config.is_object()) return Status::invalid_argument(path + ": field 'metadata.config': not a JSON object");
  return t;
}

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
  if (config.contains("step_spans_us")) CT_RETURN_IF_ERROR(read_step_spans(path, config["step_spans_us"], &run));
  if (run.metadata.world_size < 1) {
    return Status::invalid_argument(path + ": field 'metadata.world_size': " + std::to_string(run.metadata.world_size) +
                                    " must be >= 1");
  }
  CT_RETURN_IF_ERROR(check_events_in_plan(path, run));
  return run;
}

namespace {

// Each step's time in [first_step, last_step], as the host and the device paced it. With step spans, on the
// rank whose measured steps take the longest (recorded_step_time): the host's is its span (the spans tile the
// window), the device's its last device event's end less the step before's (the first step's: less its span's
// start). Without spans there is one pace, a step's end (its last event) less the previous step's, in both.
struct StepTimes {
  std::vector<double> host, device;
};

StepTimes step_times(const RecordedRun& run, int first_step, int last_step) {
  StepTimes out;
  if (!run.step_spans.empty()) {
    std::map<std::pair<int64_t, int64_t>, double> device_end;  // (rank, step) -> its device events' last end
    for (const traces::Event& e : run.events) {
      if (e.category != traces::Category::kCompute && e.category != traces::Category::kComm &&
          e.category != traces::Category::kCopy)
        continue;
      double& end = device_end[{e.rank, *e.step}];
      end = std::max(end, e.end_us() * 1e-6);
    }
    double longest = -1;
    for (size_t r = 0; r < run.step_spans.size(); ++r) {
      const auto& spans = run.step_spans[r];
      const int64_t rank = r < run.step_span_ranks.size() ? run.step_span_ranks[r] : static_cast<int64_t>(r);
      StepTimes own;
      double host_total = 0, device_total = 0;
      for (int s = first_step; s <= last_step; ++s) {
        const auto& span = spans[static_cast<size_t>(s)];
        own.host.push_back((s < last_step ? spans[static_cast<size_t>(s + 1)].first : span.second) - span.first);
        auto end = device_end.find({rank, s});
        auto before = device_end.find({rank, s - 1});
        own.device.push_back(
            end == device_end.end() ? 0.0 : end->second - (before != device_end.end() ? before->second : span.first));
        host_total += own.host.back();
        device_total += own.device.back();
      }
      if (std::max(host_total, device_total) > longest) {
        longest = std::max(host_total, device_total);
        out = std::move(own);
      }
    }
    return out;
  }
  std::vector<double> end(run.runner_steps, 0.0);
  for (const traces::Event& e : run.events) {
    if (*e.step >= 0 && *e.step < run.runner_steps) end[*e.step] = std::max(end[*e.step], e.end_us() * 1e-6);
  }
  for (int s = first_step; s <= last_step; ++s)
    out.host.push_back(end[s] - end[s - 1]);
  out.device = out.host;
  return out;
}

bool has_step_spans(const RecordedRun& run, int first_step, int last_step) {
  return !run.step_spans.empty() && first_step >= 0 && last_step >= first_step && last_step < run.runner_steps;
}

}  // namespace

std::set<int> stalled_steps(const RecordedRun& run, int first_step, int last_step) {
  if (last_step - first_step + 1 < 3) return {};
  if (!has_step_spans(run, first_step, last_step) && (first_step < 1 || last_step >= run.runner_steps)) return {};
  const std::vector<double> times = step_times(run, first_step, last_step).host;
  auto median_of = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  const double median = median_of(times);
  std::vector<double> deviations;
  for (double t : times)
    deviations.push_back(std::abs(t - median));
  const double mad = median_of(deviations);
  std::set<int> stalled;
  for (size_t i = 0; i < times.size(); ++i) {
    if (median > 0 && times[i] > kStallFactor * median && times[i] - median > kStallMads * mad) {
      // The step after catches up (work queued behind the stall runs back to back): short, as the stall is long.
      stalled.insert(first_step + static_cast<int>(i));
      if (i + 1 < times.size()) stalled.insert(first_step + static_cast<int>(i) + 1);
    }
  }
  return stalled;
}

StatusOr<double> recorded_step_time(const RecordedRun& run, int first_step, int last_step) {
  if (!has_step_spans(run, first_step, last_step) &&
      (first_step < 1 || last_step < first_step || last_step >= run.runner_steps)) {
    return Status::invalid_argument(run.path + ": measured steps [" + std::to_string(first_step) + ", " +
                                    std::to_string(last_step) + "] do not fit the run's " +
                                    std::to_string(run.runner_steps) + " runner steps with one before them");
  }
  const StepTimes times = step_times(run, first_step, last_step);
  const std::set<int> stalled = stalled_steps(run, first_step, last_step);
  double host = 0, device = 0;
  int kept = 0;
  for (size_t i = 0; i < times.host.size(); ++i) {
    if (stalled.count(first_step + static_cast<int>(i)) > 0) continue;
    host += times.host[i];
    device += times.device[i];
    ++kept;
  }
  // The slower pace over the window: the loop cannot run faster than either.
  return std::max(host, device) / kept;
}

}  // namespace clustertwin::calibrators
