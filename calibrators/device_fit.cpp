#include "calibrators/device_fit.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "common/text.h"

namespace clustertwin::calibrators {
namespace {

struct Pool {
  double weight = 0, weighted_efficiency = 0, weighted_log_size = 0;
  double efficiency() const { return weighted_efficiency / weight; }
  void add(const Pool& o) {
    weight += o.weight;
    weighted_efficiency += o.weighted_efficiency;
    weighted_log_size += o.weighted_log_size;
  }
};

// Which curve a record belongs to, or "" when none.
std::string curve_of(const traces::KernelRecord& r) {
  if (r.kind == "gemm") return "gemm";
  if (r.kind == "attention") return r.dim("causal") != 0 ? "attention" : "attention_full";
  return "";
}

double size_of(const traces::KernelRecord& r) {
  return r.kind == "gemm" ? r.flops : r.dim("seq_len");
}

// What the fitted curves price of a layer record, or false when its shape lacks a size.
bool check_layer(const traces::KernelRecord& r, const cluster::DeviceProfile& p, DeviceFitLayerCheck* out) {
  for (const char* key :
       {"tokens", "hidden", "heads", "kv_heads", "head_dim", "mlp", "gated_mlp", "seq_len", "batch", "causal"}) {
    if (r.shape.count(key) == 0) return false;
  }
  const double t = r.dim("tokens"), h = r.dim("hidden"), q = r.dim("heads") * r.dim("head_dim");
  const double kv = r.dim("kv_heads") * r.dim("head_dim"), f = r.dim("mlp");
  std::vector<std::pair<double, double>> gemms = {{h, q + 2 * kv}, {q, h}, {f, h}};  // QKV, output, MLP down
  gemms.emplace_back(h, r.dim("gated_mlp") != 0 ? 2 * f : f);                        // MLP up (and gate)
  out->name = r.name;
  out->measured_s = r.time_s;
  for (const auto& [in, o] : gemms) {
    const double flops = traces::gemm_training_flops(t, in, o);
    out->gemm_s += flops / (p.peak_flops * p.gemm.at(flops));
  }
  const bool causal = r.dim("causal") != 0;
  const device::EfficiencyCurve& c = !causal && !p.attention_full.empty() ? p.attention_full : p.attention;
  out->attention_s =
      traces::attention_training_flops(r.dim("seq_len"), r.dim("batch"), r.dim("heads"), r.dim("head_dim"), causal) /
      (p.peak_flops * c.at(r.dim("seq_len")));
  return true;
}

}  // namespace

std::vector<device::EfficiencyKnot> monotone_knots(std::vector<WeightedPoint> points) {
  std::stable_sort(points.begin(), points.end(),
                   [](const WeightedPoint& a, const WeightedPoint& b) { return a.size < b.size; });
  std::vector<Pool> pools;
  for (size_t i = 0; i < points.size(); ++i) {
    const WeightedPoint& p = points[i];
    const Pool one{p.weight, p.weight * p.efficiency, p.weight * std::log(p.size)};
    if (i > 0 && p.size == points[i - 1].size) {
      pools.back().add(one);  // one size, one knot
    } else {
      pools.push_back(one);
    }
    while (pools.size() >= 2 && pools[pools.size() - 2].efficiency() > pools.back().efficiency()) {
      const Pool last = pools.back();
      pools.pop_back();
      pools.back().add(last);
    }
  }
  std::vector<device::EfficiencyKnot> knots;
  for (const Pool& pool : pools)
    knots.push_back({std::exp(pool.weighted_log_size / pool.weight), pool.efficiency()});
  // A pool of one point keeps the point's own size, not exp(log(size)) rounded.
  for (device::EfficiencyKnot& k : knots) {
    for (const WeightedPoint& p : points) {
      if (std::abs(k.size - p.size) <= 1e-12 * p.size) k.size = p.size;
    }
  }
  return knots;
}

namespace {

// The records of dtype o.dtype as points of their efficiency curves, by curve; `fit` gets each point, the
// decode records' bandwidth shares and the kinds not fitted.
std::map<std::string, std::vector<WeightedPoint>> points_by_curve(const traces::KernelTrace& trace,
                                                                  const DeviceFitOptions& o, DeviceFit* fit) {
  std::map<std::string, std::vector<WeightedPoint>> by_curve;
  for (const traces::KernelRecord& r : trace.records) {
    if (r.kind == "decode" && r.dtype == o.dtype && r.bytes > 0 && trace.memory_bandwidth > 0) {
      fit->decode_shares.emplace_back(r.dim("batch"), r.bytes / r.time_s / trace.memory_bandwidth);
      continue;
    }
    const std::string curve = curve_of(r);
    if (curve.empty() || r.dtype != o.dtype) {
      const std::string what = curve.empty() ? r.kind : r.kind + " (" + r.dtype + ")";
      auto seen = std::find_if(fit->not_fitted_kinds.begin(), fit->not_fitted_kinds.end(),
                               [&](const auto& k) { return k.first == what; });
      if (seen == fit->not_fitted_kinds.end()) {
        fit->not_fitted_kinds.emplace_back(what, 1);
      } else {
        ++seen->second;
      }
      continue;
    }
    DeviceFitPoint p;
    p.curve = curve;
    p.name = r.name;
    p.size = size_of(r);
    p.time_s = r.time_s;
    p.measured = r.flops / r.time_s / trace.peak_flops;
    fit->points.push_back(p);
    by_curve[curve].push_back({p.size, p.measured, r.time_s});
  }
  return by_curve;
}

// Each curve with points fitted into the profile's gemm, attention or attention_full curve.
Status fit_curves(const traces::KernelTrace& trace, const std::map<std::string, std::vector<WeightedPoint>>& by_curve,
                  cluster::DeviceProfile* p) {
  const std::string what = trace.source + ": the fitted ";
  for (auto& [curve, points] : by_curve) {
    if (points.empty()) continue;
    auto fitted = device::EfficiencyCurve::make(monotone_knots(points), what + curve + " curve");
    // An efficiency above 1 is a measurement the peak cannot explain: the trace's fault, named.
    if (!fitted.is_ok()) return fitted.status();
    (curve == "gemm" ? p->gemm : curve == "attention" ? p->attention : p->attention_full) = std::move(*fitted);
  }
  return Status::ok();
}

}  // namespace

StatusOr<DeviceFit> fit_device_profile(const traces::KernelTrace& trace, const DeviceFitOptions& o) {
  if (o.name.empty()) return Status::invalid_argument("name '': the profile needs a name (for example h200)");
  DeviceFit fit;
  std::map<std::string, std::vector<WeightedPoint>> by_curve = points_by_curve(trace, o, &fit);
  for (const char* needed : {"gemm", "attention"}) {
    if (by_curve[needed].empty()) {
      return Status::invalid_argument(trace.source + ": no " + std::string(needed) +
                                      (std::string(needed) == "attention" ? " record with causal true" : " record") +
                                      " of dtype " + o.dtype + ": a device profile needs at least one");
    }
  }
  cluster::DeviceProfile& p = fit.profile;
  p.name = o.name;
  p.description = trace.provenance_of("device");
  p.software_stack = trace.provenance_of("software_stack");
  p.provenance = trace.provenance;
  if (!o.trace_name.empty()) p.provenance.emplace_back("trace", o.trace_name);
  p.provenance.emplace_back("dtype", o.dtype);
  p.peak_flops = trace.peak_flops;
  CT_RETURN_IF_ERROR(fit_curves(trace, by_curve, &p));
  for (const auto& [batch, share] : fit.decode_shares) {
    if (share > 1) {
      return Status::invalid_argument(trace.source + ": a decode record at batch " + format_number("%g", batch) +
                                      " moves " + format_number("%.3f", share) +
                                      " of memory_bandwidth: above the device's bandwidth");
    }
    p.decode_bandwidth_share = std::max(p.decode_bandwidth_share, share);
  }
  for (DeviceFitPoint& point : fit.points) {
    const device::EfficiencyCurve& c = point.curve == "gemm"        ? p.gemm
                                       : point.curve == "attention" ? p.attention
                                                                    : p.attention_full;
    point.fitted = c.at(point.size);
  }
  for (const traces::KernelRecord& r : trace.records) {
    DeviceFitLayerCheck check;
    if (r.kind == "layer" && r.dtype == o.dtype && check_layer(r, p, &check)) fit.layers.push_back(check);
  }
  return fit;
}

std::string device_fit_yaml(const DeviceFit& fit) {
  const std::string trace = fit.profile.provenance_of("trace");
  const std::string header =
      "# Device profile " + fit.profile.name + ", fitted by `clustertwin calibrate device TRACE --name " +
      fit.profile.name + "` (calibrators/device_fit.h)\n# from the kernel-benchmark trace " +
      (trace.empty() ? std::string("given") : trace) +
      " (the shipped ones: traces/data/kernels/): refit rather than edit.\n"
      "# Measured, not assumed: each knot is FLOPs over measured time over peak_flops, pooled where needed to\n"
      "# keep the curve monotone. It describes the software stack below, not the device under any stack.\n"
      "# Schema: sim/platforms/README.md (device profiles).\n";
  return cluster::device_profile_yaml(fit.profile, header);
}

std::string device_fit_report(const DeviceFit& fit) {
  const cluster::DeviceProfile& p = fit.profile;
  std::string out = "# device profile " + p.provenance_line() + "\n";
  out +=
      "# peak " + format_number("%.1f", p.peak_flops / 1e12) + " TFLOP/s; method: " + p.provenance_of("method") + "\n";
  const auto knots = [&](const char* curve, const device::EfficiencyCurve& c, const char* unit) {
    if (c.empty()) return;
    out += "# " + std::string(curve) + " knots (" + unit + " -> efficiency):";
    for (const device::EfficiencyKnot& k : c.knots())
      out += " " + format_number("%.4g", k.size) + " -> " + format_number("%.3f", k.efficiency) + ";";
    out.back() = '\n';
  };
  knots("gemm", p.gemm, "GEMM training FLOPs");
  knots("attention", p.attention, "causal, sequence length");
  knots("attention_full", p.attention_full, "full, sequence length");
  if (!fit.decode_shares.empty()) {
    out += "# decode: share of memory bandwidth per batch:";
    for (const auto& [batch, share] : fit.decode_shares)
      out += " " + format_number("%g", batch) + " -> " + format_number("%.3f", share) + ";";
    out.back() = '\n';
    out += "# decode_bandwidth_share " + format_number("%.3f", p.decode_bandwidth_share) +
           " (the best: where bandwidth binds)\n";
  }
  out += "curve           size        time_ms  measured  fitted  residual  time_err  record\n";
  double worst = 0;
  for (const DeviceFitPoint& q : fit.points) {
    char line[512];
    std::snprintf(line, sizeof line, "%-14s %10.4g %10.3f %9.3f %7.3f %+9.3f %+8.1f%%  %s\n", q.curve.c_str(), q.size,
                  q.time_s * 1e3, q.measured, q.fitted, q.residual(), 100 * q.time_error(), q.name.c_str());
    out += line;
    worst = std::max(worst, std::abs(q.residual()));
  }
  out += "# residual: fitted minus measured efficiency (largest " + format_number("%.3f", worst) +
         "); time_err: the fit's time for the record's FLOPs against the measured time\n";
  for (const DeviceFitLayerCheck& l : fit.layers) {
    char line[512];
    std::snprintf(line, sizeof line,
                  "# layer check: %s: measured %.2f ms; the curves price %.2f ms of it (GEMMs %.2f, attention "
                  "%.2f): %+.0f%% unpriced\n",
                  l.name.c_str(), l.measured_s * 1e3, (l.gemm_s + l.attention_s) * 1e3, l.gemm_s * 1e3,
                  l.attention_s * 1e3, 100 * l.unpriced_share());
    out += line;
  }
  if (!fit.layers.empty()) {
    out +=
        "# (unpriced: norms, activations, rotary and the curves' error; negative: the curves price more than "
        "was measured)\n";
  }
  if (!fit.not_fitted_kinds.empty()) {
    out += "# not fitted (other twins' inputs):";
    for (const auto& [kind, n] : fit.not_fitted_kinds)
      out += " " + kind + " x" + std::to_string(n) + ",";
    out.back() = '\n';
  }
  return out;
}

std::string device_fit_json(const DeviceFit& fit) {
  nlohmann::ordered_json j;
  j["profile"] = fit.profile.name;
  j["provenance"] = fit.profile.provenance_line();
  j["peak_flops"] = fit.profile.peak_flops;
  const auto knots = [](const device::EfficiencyCurve& c) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const device::EfficiencyKnot& k : c.knots())
      list.push_back({{"size", k.size}, {"efficiency", k.efficiency}});
    return list;
  };
  j["gemm"] = knots(fit.profile.gemm);
  j["attention"] = knots(fit.profile.attention);
  if (!fit.profile.attention_full.empty()) j["attention_full"] = knots(fit.profile.attention_full);
  if (fit.profile.decode_bandwidth_share > 0) j["decode_bandwidth_share"] = fit.profile.decode_bandwidth_share;
  j["points"] = nlohmann::ordered_json::array();
  for (const DeviceFitPoint& q : fit.points) {
    j["points"].push_back({{"curve", q.curve},
                           {"name", q.name},
                           {"size", q.size},
                           {"time_s", q.time_s},
                           {"measured", q.measured},
                           {"fitted", q.fitted},
                           {"residual", q.residual()}});
  }
  j["layers"] = nlohmann::ordered_json::array();
  for (const DeviceFitLayerCheck& l : fit.layers) {
    j["layers"].push_back({{"name", l.name},
                           {"measured_s", l.measured_s},
                           {"gemm_s", l.gemm_s},
                           {"attention_s", l.attention_s},
                           {"unpriced_share", l.unpriced_share()}});
  }
  return j.dump(1) + "\n";
}

}  // namespace clustertwin::calibrators
