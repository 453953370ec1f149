#pragma once

// A device profile: how close a device's kernels come to its peak, per
// kernel shape, under one software stack. `clustertwin calibrate device`
// fits it from a kernel-benchmark trace (traces/KERNELS.md,
// calibrators/device_fit.h); the twins' device models read it (the transformer model's rates:
// models/transformer/stack_cost.h, which the LLM and FlowTrain twins price with). Shipped profiles are YAML files in
// sim/platforms/devices/ (schema: sim/platforms/README.md), embedded in the
// library like the cluster profiles.
//
// A profile describes a software stack as much as a device: the same H200
// under Transformer Engine or torch.compile reaches other efficiencies, so
// the stack is part of the provenance every user of the profile prints.

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "models/device/efficiency_curve.h"

namespace clustertwin::cluster {

struct DeviceProfile {
  std::string name;            // "h200"
  std::string description;     // one line: the device and the stack
  std::string software_stack;  // "torch 2.11.0+cu130 eager, bf16, ...": what the efficiencies describe
  /// Where the measurements come from, as the trace's header gives it
  /// (device, driver, torch, cuda, date, method, ...), in the trace's order.
  std::vector<std::pair<std::string, std::string>> provenance;
  double peak_flops = 0;  // FLOP/s: the efficiencies are shares of this rate
  /// GEMM forward + backward, by the training FLOPs of one GEMM (6 T K N).
  device::EfficiencyCurve gemm;
  /// Causal attention forward + backward, by sequence length (tokens).
  device::EfficiencyCurve attention;
  /// Full (non-causal) attention by sequence length; empty when none was
  /// measured (the twins then use `attention`).
  device::EfficiencyCurve attention_full;
  /// The share of memory bandwidth a decode token reaches where bandwidth
  /// binds (weights read once per token): the best over the trace's decode
  /// records; 0 when the trace measured none. Larger batches only add
  /// compute, which the twins price apart.
  double decode_bandwidth_share = 0;

  /// One line for a report: "h200 (fitted from TRACE): DEVICE, STACK; measured DATE".
  std::string provenance_line() const;
  /// The provenance value of `key`, or "" when absent.
  std::string provenance_of(const std::string& key) const;
};

/// Parses a device profile. Errors name `source`, the field and the value.
StatusOr<DeviceProfile> parse_device_profile(const std::string& yaml_text, const std::string& source);

/// A shipped device profile by name ("h200"), or a path to a YAML file.
/// InvalidArgument naming the field that holds it for neither:
/// "device_profile 'h300': no shipped device profile of that name ...".
StatusOr<DeviceProfile> load_device_profile(const std::string& name_or_path);

/// The names of the shipped device profiles.
std::vector<std::string> shipped_device_profile_names();

/// `profile` as YAML in the schema parse_device_profile reads, numbers in
/// their shortest exact form: parse(write(p)) == p, byte-identical output for
/// the same profile. `header` (comment lines, each starting with "# ") goes first.
std::string device_profile_yaml(const DeviceProfile& profile, const std::string& header = "");

bool operator==(const DeviceProfile& a, const DeviceProfile& b);

}  // namespace clustertwin::cluster
