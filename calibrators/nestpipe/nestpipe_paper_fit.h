#pragma once

// Calibrating the twin's TorchRec baseline to the figures the NestPipe paper
// gives for it, so that everything NestPipe-specific then follows from the
// plans alone (../shared/papers/nestpipe.md: "calibrate the baseline, not
// NestPipe's own result").

#include <string>
#include <vector>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "sim/nestpipe/nestpipe_twin.h"

namespace clustertwin::calibrators {

/// The paper's TorchRec figures: the step at the large scale, and the shares
/// of step time that embedding lookup and All2All take at both scales.
/// large_workers 0: shares at one scale only (no step time, no growth).
struct PaperBaseline {
  int small_workers = 128;
  int large_workers = 1536;
  double large_step_s = 5.79383;      // TorchRec's step at 1,536 NPUs: 5,793.83 ms
  double lookup_share_small = 0.244;  // 24.4% at 128
  double lookup_share_large = 0.496;  // 49.6% at 1,536
  double a2a_share_small = 0.092;     // 9.2% at 128
  double a2a_share_large = 0.205;     // 20.5% at 1,536
};

/// The baseline on the paper's 128 GPUs: the paper reports only NestPipe's
/// 1.36x there. Assumption: TorchRec's lookup and All2All shares at 128 GPUs
/// are the ones it reports at 128 NPUs (24.4% and 9.2%). With one scale and
/// no step time, the network stays the profile's (no All2All factor, no
/// per-request term) and the All2All share sets the step: dense compute and
/// the lookup's byte rate are fitted to it.
PaperBaseline gpu_128_assumed_baseline();

/// The fitted parameters, and how close the twin's TorchRec came.
struct BaselineFit {
  double dense_flop_rate = 0;        // dense_fwd / dense_bwd, FLOP/s
  double lookup_byte_rate = 0;       // lookup_gather, bytes/s of rows read
  double lookup_per_request_s = 0;   // lookup_gather, seconds per requester list served on its own
  double a2a_efficiency = 1;         // collectives.alltoall.efficiency
  double a2a_congestion_peers = 0;   // collectives.alltoall.congestion_peers
  double dense_call_overhead_s = 0;  // not fitted: the setup's, priced into dense_fwd/dense_bwd's latency
  int iterations = 0;
  // The twin's TorchRec with the fitted profile.
  double small_step_s = 0, large_step_s = 0;
  double lookup_share_small = 0, lookup_share_large = 0;
  double a2a_share_small = 0, a2a_share_large = 0;
  double max_error = 0;            // the largest relative miss of step and shares
  std::vector<std::string> notes;  // clamps and what they mean
};

/// Fits, from `base` (a datasheet profile), the five parameters the
/// baseline's figures determine:
///
///   dense compute  one FLOP rate for dense_fwd and dense_bwd: the step's
///                  remainder after lookup and All2All at the large scale
///                  (each call also pays the setup's fixed kernel-launch
///                  time, nestpipe_dense_call_overhead: not fitted)
///   lookup         lookup_gather = rows x row bytes / byte_rate
///                  + requests x per_request. Under weak scaling the rows an
///                  owner serves stay flat (key_stats.h), so the lookup's
///                  growth from 24.4% to 49.6% can only come from serving W
///                  requesters one by one: two scales, two unknowns
///   All2All        efficiency and congestion_peers of the profile's
///                  'collectives.alltoall' (sim/platforms/README.md): its
///                  share grows 9.2% -> 20.5% at a flat per-worker volume
///                  (the profile's per_peer setup is kept, not fitted)
///
/// by running the twin's torchrec plan at both scales and solving for the
/// targets, a few rounds (each round's small-scale step depends on the dense
/// rate). The embedding update (host work, no roofline) is priced at three
/// passes over its rows at the host memory bandwidth share of one device.
/// NestPipe's own figures are never used. `report` (optional) gets the fit.
StatusOr<cluster::ClusterProfile> calibrate_nestpipe_baseline(const cluster::ClusterProfile& base,
                                                              const sim::nestpipe::NestPipeSetup& setup,
                                                              const PaperBaseline& paper, BaselineFit* report);

/// The fit as a JSON object (for --json and the study's output).
std::string baseline_fit_json(const BaselineFit& fit);

/// The profile NestPipe's twin runs on: `platform` (a shipped name or a YAML
/// file) with NestPipe's default costs, or, when `calibration` asks ("paper";
/// "auto" on npu-1536 and gpu-128), with the TorchRec baseline fitted to the
/// paper's figures on the paper's workload (its model and the default data
/// settings; `setup` is then a what-if on that cluster) (`*fit` and
/// `*fit_json` describe the fit). InvalidArgument
/// naming --calibration for another word. Used by sim nestpipe and plan nestpipe.
StatusOr<cluster::ClusterProfile> nestpipe_profile(const std::string& platform, const std::string& calibration,
                                                   const sim::nestpipe::NestPipeSetup& setup, std::string* fit_json,
                                                   BaselineFit* fit);

}  // namespace clustertwin::calibrators
