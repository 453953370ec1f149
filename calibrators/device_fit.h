#pragma once

// Fitting a device profile (models/cluster/device_profile.h) to a
// kernel-benchmark trace (traces/KERNELS.md): `clustertwin calibrate device`.
//
// The model, per curve:
//   gemm            the trace's gemm records: size = one GEMM's training FLOPs
//                   (6 T K N), efficiency = FLOPs / time / peak_flops
//   attention       attention records with causal = true: size = sequence length
//   attention_full  attention records with causal = false (absent when none)
//   decode_bandwidth_share
//                   decode records (bytes per token, with the trace's
//                   memory_bandwidth): the best bytes / time / bandwidth over
//                   them, the share a token reaches where bandwidth binds
//                   (a larger batch adds compute, priced apart by the twins)
// Each record's efficiency is its measured FLOPs over its measured time over
// the trace's peak. Records of equal size are pooled; then, in order of size,
// a record whose efficiency is below the one before is pooled with it
// (pool-adjacent-violators, weighted by measured time), until the pooled
// efficiencies never fall as the size grows. A pool's efficiency is its
// FLOPs over its time over the peak (the time-weighted mean of its records'
// efficiencies); its size is the time-weighted geometric mean of theirs. The
// pools are the curve's knots (efficiency_curve.h: log-linear between knots,
// clamped beyond). So the fit is monotone, deterministic and exact at every
// record that needed no pooling; each record's residual (fitted minus
// measured efficiency, and the time the fit predicts against the measured)
// is reported.
//
// Why monotone: a bigger GEMM or a longer sequence keeps the device's units
// busier, and a curve that dips between two measured shapes would reward a
// layout for hitting a lucky shape the benchmark measured once. Records of
// other kinds (layer, hstu, embedding, copies) are other twins' inputs:
// counted, not fitted.

#include <string>
#include <vector>

#include "common/status.h"
#include "models/cluster/device_profile.h"
#include "traces/kernel_trace.h"

namespace clustertwin::calibrators {

struct DeviceFitOptions {
  std::string name;            // the profile's name (required)
  std::string dtype = "bf16";  // only records of this data type are fitted
  std::string trace_name;      // provenance "trace": the trace's file name
};

/// One fitted record: its measured and fitted efficiency.
struct DeviceFitPoint {
  std::string curve;  // gemm, attention, attention_full
  std::string name;   // the record's name
  double size = 0;
  double time_s = 0;    // measured
  double measured = 0;  // FLOPs / time / peak
  double fitted = 0;    // the curve at size
  double residual() const { return fitted - measured; }
  /// The fit's time for the record's FLOPs over the measured time, minus 1.
  double time_error() const { return measured / fitted - 1; }
};

/// A whole layer the trace timed (kind layer, with tokens, hidden, heads,
/// kv_heads, head_dim, mlp, gated_mlp, seq_len, batch, causal) against what
/// the fitted curves price of it: its GEMMs (QKV, output projection, the MLP's
/// two or, gated, three matrices) each at the gemm curve for its size, its
/// attention at the curve for its length (full attention without an
/// attention_full curve at the causal one's, as the twins do). A check, not a
/// fit input: what the curves leave unpriced (norms, activations, rotary, the
/// curves' own error) is the rest of the measured time.
struct DeviceFitLayerCheck {
  std::string name;
  double measured_s = 0;
  double gemm_s = 0, attention_s = 0;  // priced by the fitted curves
  /// The share of the measured time the curves do not price (negative: they price more than was measured).
  double unpriced_share() const { return 1 - (gemm_s + attention_s) / measured_s; }
};

struct DeviceFit {
  cluster::DeviceProfile profile;
  std::vector<DeviceFitPoint> points;       // every fitted record, in the trace's order
  std::vector<DeviceFitLayerCheck> layers;  // every layer record with a full shape
  /// Every decode record's batch and bandwidth share (bytes / time / bandwidth), in the trace's order.
  std::vector<std::pair<double, double>> decode_shares;
  std::vector<std::pair<std::string, int>> not_fitted_kinds;  // other kinds and their counts, in first-seen order
};

/// The knots of a monotone fit of (size, efficiency, weight) points, as
/// described above. Exposed for tests. Points need not be sorted; sizes > 0.
struct WeightedPoint {
  double size = 0, efficiency = 0, weight = 0;
};
std::vector<device::EfficiencyKnot> monotone_knots(std::vector<WeightedPoint> points);

/// Fits `trace`. InvalidArgument naming the trace when it has no gemm or no
/// causal attention record of options.dtype, or options.name is empty.
StatusOr<DeviceFit> fit_device_profile(const traces::KernelTrace& trace, const DeviceFitOptions& options);

/// The profile file's text: a header saying how it was made, then the profile.
std::string device_fit_yaml(const DeviceFit& fit);
/// The fit for people: the provenance, each curve's knots, each record's residual.
std::string device_fit_report(const DeviceFit& fit);
/// The same as JSON (profile name, knots, points with measured, fitted, residual).
std::string device_fit_json(const DeviceFit& fit);

}  // namespace clustertwin::calibrators
