// The FlowTrain twin's rows as JSON, CSV and a table; the last step as a trace.

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <tuple>

#include "common/text.h"
#include "common/version.h"
#include "sim/flowtrain/flowtrain_model.h"
#include "sim/flowtrain/flowtrain_twin.h"
#include "traces/trace_writer.h"

namespace clustertwin::sim::flowtrain {

namespace detail {

nlohmann::json row_to_json(const FlowTrainRow& r, bool with_intervals) {
  nlohmann::ordered_json j;
  j["mode"] = r.mode;
  j["model"] = r.model;
  j["workers"] = r.workers;
  j["encoder_workers"] = r.encoder_workers;
  j["encoder_tp"] = r.encoder_tp;
  j["backbone_tp"] = r.backbone_tp;
  j["backbone_pp"] = r.backbone_pp;
  j["step_s"] = r.step_s;
  j["samples_per_s"] = r.samples_per_s;
  j["mfu"] = r.mfu;
  j["speedup"] = r.speedup;
  j["allocator_samples_per_s"] = r.allocator_rate;
  j["micro_batch_imbalance"] = r.micro_batch_imbalance;
  j["step_times_s"] = r.step_times_s;
  if (with_intervals) {
    nlohmann::json list = nlohmann::json::array();
    for (const FlowTrainInterval& b : r.last_step)
      list.push_back({b.first_device, b.devices, b.start_s, b.end_s, b.kind});
    j["last_step"] = list;
  }
  return j;
}

FlowTrainRow row_from_json(const nlohmann::json& j) {
  FlowTrainRow r;
  r.mode = j.at("mode");
  r.model = j.at("model");
  r.workers = j.at("workers");
  r.encoder_workers = j.at("encoder_workers");
  r.encoder_tp = j.at("encoder_tp");
  r.backbone_tp = j.at("backbone_tp");
  r.backbone_pp = j.at("backbone_pp");
  r.step_s = j.at("step_s");
  r.samples_per_s = j.at("samples_per_s");
  r.mfu = j.at("mfu");
  r.allocator_rate = j.at("allocator_samples_per_s");
  r.micro_batch_imbalance = j.at("micro_batch_imbalance");
  r.step_times_s = j.at("step_times_s").get<std::vector<double>>();
  for (const auto& b : j.at("last_step"))
    r.last_step.push_back({b[0], b[1], b[2], b[3], b[4]});
  return r;
}

}  // namespace detail

using detail::row_to_json;

std::string flowtrain_rows_json(const std::vector<FlowTrainRow>& rows, const std::string& extra) {
  nlohmann::ordered_json j = extra.empty() ? nlohmann::ordered_json::object() : nlohmann::ordered_json::parse(extra);
  j["rows"] = nlohmann::json::array();
  for (const FlowTrainRow& r : rows)
    j["rows"].push_back(nlohmann::ordered_json(row_to_json(r, false)));
  return j.dump(2) + "\n";
}

std::string flowtrain_rows_csv(const std::vector<FlowTrainRow>& rows) {
  std::string out =
      "mode,model,workers,encoder_workers,encoder_tp,backbone_tp,backbone_pp,step_s,samples_per_s,mfu,speedup,"
      "allocator_samples_per_s,micro_batch_imbalance\n";
  for (const FlowTrainRow& r : rows) {
    out += r.mode + "," + r.model + "," + std::to_string(r.workers) + "," + std::to_string(r.encoder_workers) + "," +
           std::to_string(r.encoder_tp) + "," + std::to_string(r.backbone_tp) + "," + std::to_string(r.backbone_pp) +
           "," + format_number("%.6g", r.step_s) + "," + format_number("%.6g", r.samples_per_s) + "," +
           format_number("%.6g", r.mfu) + "," + format_number("%.6g", r.speedup) + "," +
           format_number("%.6g", r.allocator_rate) + "," + format_number("%.6g", r.micro_batch_imbalance) + "\n";
  }
  return out;
}

std::string flowtrain_rows_table(const std::vector<FlowTrainRow>& rows) {
  char line[256];
  std::snprintf(line, sizeof line, "%-12s %7s %8s %13s %9s %10s %7s %8s %8s\n", "mode", "workers", "encoder", "layout",
                "step_s", "samples/s", "mfu", "speedup", "mb_cost");
  std::string out = line;
  for (const FlowTrainRow& r : rows) {
    const std::string layout = "TP" + std::to_string(r.backbone_tp) + " PP" + std::to_string(r.backbone_pp) +
                               (r.encoder_workers > 0 ? " /TP" + std::to_string(r.encoder_tp) : "");
    std::snprintf(line, sizeof line, "%-12s %7d %8d %13s %9.3f %10.1f %6.1f%% %8s %8.4f\n", r.mode.c_str(), r.workers,
                  r.encoder_workers, layout.c_str(), r.step_s, r.samples_per_s, 100 * r.mfu,
                  ratio_or_dash(r.speedup).c_str(), r.micro_batch_imbalance);
    out += line;
  }
  return out;
}

Status write_flowtrain_trace(const FlowTrainRow& row, const std::string& platform, const std::string& path) {
  traces::Metadata m;
  m.source = traces::Source::kSim;
  m.system = "flowtrain";
  m.variant = row.mode;
  m.world_size = row.workers;
  m.hardware = platform;
  m.model = row.model;
  m.config_json = nlohmann::ordered_json{{"encoder_workers", row.encoder_workers}}.dump();
  m.clustertwin_version = std::string(version());
  m.streams = {"compute", "comm"};
  auto writer = traces::TraceWriter::create(path, m);
  if (!writer.is_ok()) return writer.status();
  std::vector<FlowTrainInterval> sorted = row.last_step;
  std::stable_sort(sorted.begin(), sorted.end(), [](const FlowTrainInterval& a, const FlowTrainInterval& b) {
    return std::tie(a.first_device, a.start_s) < std::tie(b.first_device, b.start_s);
  });
  for (const FlowTrainInterval& b : sorted) {
    if (!(b.end_s >= b.start_s)) continue;
    traces::Event e;
    e.name = b.kind;
    const bool comm = b.kind == "reduce-scatter" || b.kind == "pool-read";
    e.category = comm ? traces::Category::kComm : traces::Category::kCompute;
    if (b.kind == "reduce-scatter") e.collective = "reducescatter";
    e.rank = b.first_device;
    e.stream = comm ? 1 : 0;
    e.ts_us = b.start_s * 1e6;
    e.dur_us = (b.end_s - b.start_s) * 1e6;
    e.group_size = b.devices;
    (*writer)->write(e);
  }
  return (*writer)->close();
}

}  // namespace clustertwin::sim::flowtrain
