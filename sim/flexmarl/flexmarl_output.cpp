// The FlexMARL twin's rows as JSON, CSV and a table; a device timeline; the
// last step as a trace.

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <tuple>

#include "common/text.h"
#include "common/version.h"
#include "sim/flexmarl/flexmarl_model.h"
#include "sim/flexmarl/flexmarl_twin.h"
#include "traces/trace_writer.h"

namespace clustertwin::sim::flexmarl {

namespace detail {

nlohmann::json row_to_json(const FlexMarlRow& r, bool with_intervals) {
  nlohmann::json j = {{"framework", r.framework},
                      {"workload", r.workload},
                      {"agents", r.agents},
                      {"devices", r.devices},
                      {"step_s", r.step_s},
                      {"rollout_s", r.rollout_s},
                      {"tokens_per_s", r.tokens_per_s},
                      {"utilization", r.utilization},
                      {"speedup", r.speedup},
                      {"utilization_gain", r.utilization_gain},
                      {"reassignments_per_step", r.reassignments},
                      {"migrations_per_step", r.migrations},
                      {"step_times_s", r.step_times_s}};
  if (with_intervals) {
    nlohmann::json list = nlohmann::json::array();
    for (const BusyInterval& b : r.last_step) {
      list.push_back({b.first_device, b.devices, b.start_s, b.end_s, b.agent, b.kind});
    }
    j["last_step"] = std::move(list);
    nlohmann::json decisions = nlohmann::json::array();
    for (const models::flexmarl::Decision& d : r.decisions)
      decisions.push_back({static_cast<int>(d.kind), d.agent, d.size});
    j["decisions"] = std::move(decisions);
  }
  return j;
}

FlexMarlRow row_from_json(const nlohmann::json& j) {
  FlexMarlRow r;
  r.framework = j.at("framework");
  r.workload = j.at("workload");
  r.agents = j.at("agents");
  r.devices = j.at("devices");
  r.step_s = j.at("step_s");
  r.rollout_s = j.at("rollout_s");
  r.tokens_per_s = j.at("tokens_per_s");
  r.utilization = j.at("utilization");
  r.reassignments = j.at("reassignments_per_step");
  r.migrations = j.at("migrations_per_step");
  r.step_times_s = j.at("step_times_s").get<std::vector<double>>();
  for (const auto& b : j.at("last_step")) {
    r.last_step.push_back({b[0], b[1], b[2], b[3], b[4], b[5]});
  }
  if (j.contains("decisions")) {
    for (const auto& d : j.at("decisions"))
      r.decisions.push_back({static_cast<models::flexmarl::Decision::Kind>(d[0].get<int>()), d[1], d[2]});
  }
  return r;
}

}  // namespace detail

using detail::row_to_json;

std::string flexmarl_rows_json(const std::vector<FlexMarlRow>& rows, const std::string& extra) {
  nlohmann::json list = nlohmann::json::array();
  for (const FlexMarlRow& r : rows)
    list.push_back(row_to_json(r, false));
  nlohmann::json doc = extra.empty() ? nlohmann::json::object() : nlohmann::json::parse(extra);
  doc["rows"] = std::move(list);
  return doc.dump(2) + "\n";
}

std::string flexmarl_rows_csv(const std::vector<FlexMarlRow>& rows) {
  std::string out =
      "framework,workload,agents,devices,step_s,rollout_s,tokens_per_s,utilization,speedup,utilization_gain,"
      "reassignments_per_step,migrations_per_step\n";
  for (const FlexMarlRow& r : rows) {
    out += r.framework + "," + r.workload + "," + std::to_string(r.agents) + "," + std::to_string(r.devices) + "," +
           format_number("%.6g", r.step_s) + "," + format_number("%.6g", r.rollout_s) + "," +
           format_number("%.6g", r.tokens_per_s) + "," + format_number("%.6g", r.utilization) + "," +
           format_number("%.6g", r.speedup) + "," + format_number("%.6g", r.utilization_gain) + "," +
           std::to_string(r.reassignments) + "," + std::to_string(r.migrations) + "\n";
  }
  return out;
}

std::string flexmarl_rows_table(const std::vector<FlexMarlRow>& rows) {
  char line[256];
  std::snprintf(line, sizeof line, "%-20s %-10s %7s %9s %9s %10s %7s %8s %8s\n", "framework", "workload", "devices",
                "step_s", "rollout_s", "tokens/s", "util", "speedup", "util_x");
  std::string out = line;
  for (const FlexMarlRow& r : rows) {
    std::snprintf(line, sizeof line, "%-20s %-10s %7d %9.1f %9.1f %10.0f %6.1f%% %8s %8s\n", r.framework.c_str(),
                  r.workload.c_str(), r.devices, r.step_s, r.rollout_s, r.tokens_per_s, 100 * r.utilization,
                  ratio_or_dash(r.speedup).c_str(), ratio_or_dash(r.utilization_gain).c_str());
    out += line;
  }
  return out;
}

std::string flexmarl_timeline_csv(const FlexMarlRow& row, int bins) {
  double end = 0;
  for (const BusyInterval& b : row.last_step)
    end = std::max(end, b.end_s);
  const double width = end > 0 ? end / bins : 1;
  std::vector<std::vector<double>> busy(static_cast<size_t>(row.devices), std::vector<double>(bins, 0.0));
  for (const BusyInterval& b : row.last_step) {
    if (b.kind != "decode" && b.kind != "train" && b.kind != "optimizer") continue;
    for (int k = 0; k < bins; ++k) {
      const double overlap = std::min(b.end_s, (k + 1) * width) - std::max(b.start_s, k * width);
      if (overlap <= 0) continue;
      for (int dev = b.first_device; dev < b.first_device + b.devices && dev < row.devices; ++dev) {
        busy[dev][k] += overlap / width;
      }
    }
  }
  std::string out = "device,time_s,busy\n";
  for (int dev = 0; dev < row.devices; ++dev) {
    for (int k = 0; k < bins; ++k) {
      out += std::to_string(dev) + "," + format_number("%.4g", (k + 0.5) * width) + "," +
             format_number("%.4g", std::min(1.0, busy[dev][k])) + "\n";
    }
  }
  return out;
}

Status write_flexmarl_trace(const FlexMarlRow& row, const std::string& platform, const std::string& path) {
  traces::Metadata m;
  m.source = traces::Source::kSim;
  m.system = "flexmarl";
  m.variant = row.framework;
  m.world_size = row.devices;
  m.hardware = platform;
  m.config_json = nlohmann::ordered_json{{"workload", row.workload}, {"agents", row.agents}}.dump();
  m.clustertwin_version = std::string(version());
  m.streams = {"compute", "copy", "comm"};
  auto writer = traces::TraceWriter::create(path, m);
  if (!writer.is_ok()) return writer.status();
  std::vector<BusyInterval> sorted = row.last_step;
  std::stable_sort(sorted.begin(), sorted.end(), [](const BusyInterval& a, const BusyInterval& b) {
    return std::tie(a.first_device, a.start_s) < std::tie(b.first_device, b.start_s);
  });
  // A group's job (a trainer group, a multi-device instance) is drawn on
  // each of its devices, as a collective is on each rank.
  std::vector<traces::Event> events;
  for (const BusyInterval& b : sorted) {
    traces::Event e;
    e.name = b.kind + " agent" + std::to_string(b.agent);
    const bool copy = b.kind == "swap" || b.kind == "reload";
    e.category = copy                  ? traces::Category::kCopy
                 : b.kind == "publish" ? traces::Category::kComm
                                       : traces::Category::kCompute;
    e.stream = copy ? 1 : b.kind == "publish" ? 2 : 0;
    e.ts_us = b.start_s * 1e6;
    e.dur_us = (b.end_s - b.start_s) * 1e6;
    e.group_size = b.devices;
    for (int d = b.first_device; d < b.first_device + b.devices && d < row.devices; ++d) {
      e.rank = d;
      events.push_back(e);
    }
  }
  std::stable_sort(events.begin(), events.end(), [](const traces::Event& a, const traces::Event& b) {
    return std::tie(a.rank, a.ts_us) < std::tie(b.rank, b.ts_us);
  });
  for (const traces::Event& e : events)
    (*writer)->write(e);
  return (*writer)->close();
}

}  // namespace clustertwin::sim::flexmarl
