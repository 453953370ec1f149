#pragma once

// A kernel-benchmark trace: one record per measured kernel (a GEMM, an
// attention call, a whole layer, a decode step, an embedding lookup, a copy)
// with its shape, data type, FLOPs or bytes and measured time, under a header
// saying where and how it was measured. The format is traces/KERNELS.md;
// `clustertwin calibrate device` fits a device profile from it
// (calibrators/device_fit.h), and scripts/device-check/kernel_bench.py
// writes one on a GPU machine (scripts/device-check.sh).

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace clustertwin::traces {

struct KernelRecord {
  std::string kind;  // gemm, attention, layer, decode, hstu, embedding, host-gather, copy, ...
  std::string name;  // what it is, for people
  std::string dtype;
  std::string pass;                     // "forward+backward" or "forward"
  std::map<std::string, double> shape;  // kind-specific sizes; booleans as 0 / 1
  double flops = 0;                     // the model FLOPs of the timed call (0: a bandwidth record)
  double bytes = 0;                     // bytes moved (0: a compute record)
  double time_s = 0;                    // measured, mean over `iterations`
  int iterations = 0;
  std::string note;

  /// shape[key], which the reader has checked to exist for the record's kind.
  double dim(const std::string& key) const { return shape.at(key); }
};

struct KernelTrace {
  std::string source;  // the file read, for messages
  /// device, driver, torch, cuda, software_stack, date, method, ...: as written, in the file's order.
  std::vector<std::pair<std::string, std::string>> provenance;
  double peak_flops = 0;        // FLOP/s: efficiencies are FLOPs / time / this
  double memory_bandwidth = 0;  // bytes/s (0 when not given)
  std::vector<KernelRecord> records;

  std::string provenance_of(const std::string& key) const;
};

/// The training FLOPs of a GEMM's forward and backward: 3 GEMMs of 2 T K N.
double gemm_training_flops(double tokens, double in, double out);
/// Attention's forward and backward, counted as 3 forwards of 4 b h s^2 d
/// (halved when causal).
double attention_training_flops(double seq_len, double batch, double heads, double head_dim, bool causal);

/// Parses a kernel-benchmark trace. InvalidArgument naming `source`, the field
/// (records[3].time_s) and its value: not JSON, an unknown format or
/// version, a missing header field, a record without kind, time or a
/// positive FLOPs or bytes, a gemm or attention record without its shape's
/// sizes or whose flops disagree with them (more than 0.1%).
StatusOr<KernelTrace> parse_kernel_trace(const std::string& text, const std::string& source);
/// Reads and parses the file at `path` (.json, or .json.gz).
StatusOr<KernelTrace> read_kernel_trace(const std::string& path);

inline constexpr const char* kKernelTraceFormat = "clustertwin-kernel-benchmark";
inline constexpr int kKernelTraceVersion = 1;

}  // namespace clustertwin::traces
