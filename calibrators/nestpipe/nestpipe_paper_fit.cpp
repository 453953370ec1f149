#include "calibrators/nestpipe/nestpipe_paper_fit.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <thread>

#include "sim/core/simulator.h"

namespace clustertwin::calibrators {

using sim::LayerMetrics;
using sim::SimOptions;
using sim::SimResult;
using sim::nestpipe::add_nestpipe_default_costs;
using sim::nestpipe::nestpipe_sim_options;
using sim::nestpipe::NestPipeSetup;
namespace {

// What the twin's torchrec plan shows at one scale.
struct Observed {
  double step = 0;
  double compute = 0;  // dense forward and backward, busy
  double lookup = 0;   // lookup layer, busy (gather, copy)
  double gather = 0;   // lookup_gather alone
  double a2a = 0;      // All2All layer, busy
  double gather_bytes = 0;
  double gather_requests = 0;
};

double busy(const SimResult& r, const std::string& layer) {
  for (const LayerMetrics& l : r.breakdown) {
    if (l.name == layer) return l.busy_s;
  }
  return 0;
}

StatusOr<Observed> observe(const models::Plan& plan, const cluster::ClusterProfile& profile, int workers) {
  SimOptions o = nestpipe_sim_options();
  o.workers = workers;
  auto r = simulate_plan(plan, profile, o);
  if (!r.is_ok()) return r.status();
  Observed out;
  out.step = r->step_time_s;
  out.compute = busy(*r, "compute");
  out.lookup = busy(*r, "lookup");
  out.a2a = busy(*r, "all2all");
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    if (plan.tasks[i].cost_key == "lookup_gather") {
      out.gather = r->tasks[i].mean_s;
      out.gather_bytes = static_cast<double>(plan.tasks[i].bytes);
      out.gather_requests = static_cast<double>(plan.tasks[i].requests);
    }
  }
  return out;
}

// The dense call overhead is split as the FLOPs are (backward twice forward): assumption, the backward
// launching about twice the forward's kernels.
void set_fit(const BaselineFit& f, cluster::ClusterProfile* p) {
  p->costs["dense_fwd"] = cluster::CostModel{f.dense_call_overhead_s / 3, f.dense_flop_rate, 0, 0, 0, 0};
  p->costs["dense_bwd"] = cluster::CostModel{2 * f.dense_call_overhead_s / 3, f.dense_flop_rate, 0, 0, 0, 0};
  p->costs["lookup_gather"] = cluster::CostModel{0, 0, f.lookup_byte_rate, f.lookup_per_request_s, 0, 0};
  // The profile's per-peer overhead (a property of the network stack, not fitted) is kept.
  cluster::CollectiveFactor& a2a = p->collectives["alltoall"];
  a2a.efficiency = f.a2a_efficiency;
  a2a.congestion_peers = f.a2a_congestion_peers;
  a2a.fit.clear();
}

// All2Alls of a plan (their fixed per-peer time does not scale with the byte factor).
int all_to_alls(const models::Plan& plan) {
  int count = 0;
  for (const models::Task& t : plan.tasks)
    count += t.collective && t.collective->op == models::CollectiveOp::kAllToAll ? 1 : 0;
  return count;
}

// TorchRec's plans at the paper's two scales (the large one empty without it), built side by side: each is one
// core's work.
StatusOr<std::pair<models::Plan, models::Plan>> torchrec_plans(const NestPipeSetup& setup, const PaperBaseline& paper) {
  // The fit prices the cluster, not how a run simulates the All2Alls' skew: it always uses the reduction
  // (NestPipeSetup::exact_skew), so that an exact run is compared with a reduced one on the same profile.
  NestPipeSetup fit_setup = setup;
  fit_setup.exact_skew = false;
  StatusOr<models::Plan> large_plan = models::Plan{};
  std::thread large_thread;
  if (paper.large_workers > 0) {
    large_thread = std::thread(
        [&] { large_plan = nestpipe_plan(fit_setup, models::nestpipe::Variant::kTorchRec, paper.large_workers); });
  }
  auto small_plan = nestpipe_plan(fit_setup, models::nestpipe::Variant::kTorchRec, paper.small_workers);
  if (large_thread.joinable()) large_thread.join();
  if (!small_plan.is_ok()) return small_plan.status();
  if (!large_plan.is_ok()) return large_plan.status();
  return std::make_pair(std::move(small_plan).value(), std::move(large_plan).value());
}

// The fit's first guess: dense compute at the profile's roofline, the lookup at the host memory's bandwidth.
StatusOr<BaselineFit> starting_fit(const cluster::ClusterProfile& p, const NestPipeSetup& setup) {
  BaselineFit f;
  auto peak = p.device.peak_flops.find(p.default_dtype);
  f.dense_flop_rate = (peak == p.device.peak_flops.end() ? 1e14 : peak->second) * p.device.compute_efficiency;
  f.lookup_byte_rate = p.host_memory_bandwidth / p.devices_per_node;
  auto overhead = sim::nestpipe::nestpipe_dense_call_overhead(setup);
  if (!overhead.is_ok()) return overhead.status();
  f.dense_call_overhead_s = *overhead;
  return f;
}

// The paper's figures the fit aims at, derived once.
struct BaselineTargets {
  std::string where;  // the error messages' start
  PaperBaseline paper;
  bool two_scales = false;
  double ws = 0, wl = 0;
  double target_large = 0, lookup_large = 0, a2a_large = 0, rest_large = 0;
  double rest_share_small = 0;
  double fixed_small = 0, fixed_large = 0;  // the All2Alls' per-peer seconds at each scale
};

StatusOr<BaselineTargets> baseline_targets(const std::string& where, const PaperBaseline& paper,
                                           const cluster::ClusterProfile& p, const models::Plan& small_plan,
                                           const models::Plan& large_plan) {
  BaselineTargets t;
  t.where = where;
  t.paper = paper;
  const double per_peer = p.collectives.count("alltoall") ? p.collectives.at("alltoall").per_peer : 0;
  t.fixed_small =
      all_to_alls(small_plan) * cluster::CollectiveFactor{1, 0, {}, per_peer}.peer_seconds(paper.small_workers);
  t.fixed_large =
      all_to_alls(large_plan) * cluster::CollectiveFactor{1, 0, {}, per_peer}.peer_seconds(paper.large_workers);
  t.ws = paper.small_workers;
  t.wl = paper.large_workers;
  t.target_large = paper.large_step_s;
  t.lookup_large = paper.lookup_share_large * t.target_large;
  t.a2a_large = paper.a2a_share_large * t.target_large;
  t.rest_large = t.target_large - t.lookup_large - t.a2a_large;
  t.rest_share_small = 1 - paper.lookup_share_small - paper.a2a_share_small;
  if ((paper.large_workers > 0 && t.rest_large <= 0) || t.rest_share_small <= 0) {
    return Status::invalid_argument(where + "lookup and All2All shares leave no time for the rest of the step");
  }
  // One scale (the paper gives shares only): lookup bytes and All2All
  // efficiency alone, dense compute from the profile's roofline.
  t.two_scales = paper.large_workers > 0;
  return t;
}

// Both scales simulated on `p` side by side (the large one all zeros on one scale).
StatusOr<std::pair<Observed, Observed>> observe_scales(const models::Plan& small_plan, const models::Plan& large_plan,
                                                       const cluster::ClusterProfile& p, const BaselineTargets& t) {
  StatusOr<Observed> large = Observed{};
  std::thread observer;
  if (t.two_scales) observer = std::thread([&] { large = observe(large_plan, p, t.paper.large_workers); });
  auto s = observe(small_plan, p, t.paper.small_workers);
  if (observer.joinable()) observer.join();
  if (!s.is_ok()) return s.status();
  if (!large.is_ok()) return large.status();
  return std::make_pair(*s, *large);
}

// Round `round`'s shares into `f`, and its largest miss of the paper's figures.
void score_round(const Observed& s, const Observed& l, const BaselineTargets& t, int round, BaselineFit* f) {
  const PaperBaseline& paper = t.paper;
  f->iterations = round + 1;
  f->small_step_s = s.step;
  f->lookup_share_small = s.lookup / s.step;
  f->a2a_share_small = s.a2a / s.step;
  f->max_error = std::max(std::abs(f->lookup_share_small - paper.lookup_share_small) / paper.lookup_share_small,
                          std::abs(f->a2a_share_small - paper.a2a_share_small) / paper.a2a_share_small);
  if (t.two_scales) {
    f->large_step_s = l.step;
    f->lookup_share_large = l.lookup / l.step;
    f->a2a_share_large = l.a2a / l.step;
    f->max_error = std::max({f->max_error, std::abs(l.step / t.target_large - 1),
                             std::abs(f->lookup_share_large - paper.lookup_share_large) / paper.lookup_share_large,
                             std::abs(f->a2a_share_large - paper.a2a_share_large) / paper.a2a_share_large});
  }
}

// Dense compute: the large step's remainder, the small one moving with it. On one scale, the step is the
// one whose All2All share is the paper's, with the profile's network as it is. Returns the factor the dense
// compute's time grew by.
StatusOr<double> refit_dense(const Observed& s, const Observed& l, const BaselineTargets& t, BaselineFit* f) {
  double dense_scale = 1;
  if (!t.two_scales) {
    const double step_target = s.a2a / t.paper.a2a_share_small;
    const double dense_target = s.compute + (step_target * t.rest_share_small - (s.step - s.lookup - s.a2a));
    if (dense_target <= 0) {
      return Status::invalid_argument(t.where + "the All2All share " + std::to_string(t.paper.a2a_share_small) +
                                      " leaves less time than the plan needs besides dense compute");
    }
    dense_scale = (dense_target - f->dense_call_overhead_s) / (s.compute - f->dense_call_overhead_s);
    f->dense_flop_rate /= dense_scale;
  } else {
    const double rest_l = l.step - l.lookup - l.a2a;
    const double dense_target = l.compute + (t.rest_large - rest_l);
    if (dense_target <= 0) {
      return Status::invalid_argument(t.where + "the step's remainder (" + std::to_string(t.rest_large) +
                                      " s) is shorter than what the plan does besides dense compute");
    }
    dense_scale = (dense_target - f->dense_call_overhead_s) / (l.compute - f->dense_call_overhead_s);
    f->dense_flop_rate /= dense_scale;
  }
  return dense_scale;
}

// Lookup: two scales, two unknowns (seconds per byte, seconds per request); one scale, bytes alone.
Status refit_lookup(const Observed& s, const Observed& l, const BaselineTargets& t, double target_small,
                    BaselineFit* f) {
  const double gs = t.paper.lookup_share_small * target_small - (s.lookup - s.gather);
  double per_byte = gs / s.gather_bytes, per_request = 0;
  if (t.two_scales) {
    const double gl = t.lookup_large - (l.lookup - l.gather);
    const double det = s.gather_bytes * l.gather_requests - l.gather_bytes * s.gather_requests;
    if (det == 0) return Status::internal(t.where + "the lookup's bytes and requests do not separate the scales");
    per_byte = (gs * l.gather_requests - gl * s.gather_requests) / det;
    per_request = (s.gather_bytes * gl - l.gather_bytes * gs) / det;
  }
  if (per_byte <= 0 || per_request < 0) {
    return Status::invalid_argument(t.where + "no positive lookup cost fits shares " +
                                    std::to_string(t.paper.lookup_share_small) + " and " +
                                    std::to_string(t.paper.lookup_share_large));
  }
  f->lookup_byte_rate = 1 / per_byte;
  f->lookup_per_request_s = per_request;
  return Status::ok();
}

// All2All, on two scales: factor f(W) = (1 + (W-1)/P) / E on the network's own time.
Status refit_all_to_all(const Observed& s, const Observed& l, const BaselineTargets& t, double target_small,
                        BaselineFit* f) {
  const cluster::CollectiveFactor now{f->a2a_efficiency, f->a2a_congestion_peers, {}};
  const double fs = (t.paper.a2a_share_small * target_small - t.fixed_small) /
                    ((s.a2a - t.fixed_small) / now.byte_factor(t.paper.small_workers));
  f->notes.clear();
  f->a2a_congestion_peers = 0;
  const double fl = (t.a2a_large - t.fixed_large) / ((l.a2a - t.fixed_large) / now.byte_factor(t.paper.large_workers));
  const double ratio = fl / fs;
  if (ratio > 1 + 1e-9) {
    f->a2a_congestion_peers = ((t.wl - 1) - ratio * (t.ws - 1)) / (ratio - 1);
    if (f->a2a_congestion_peers <= 0) {
      return Status::invalid_argument(t.where + "the All2All share grows faster than congestion can explain");
    }
  } else {
    f->notes.push_back("the All2All share does not grow faster than the network's own time: no congestion");
  }
  const double congestion = f->a2a_congestion_peers > 0 ? 1 + (t.ws - 1) / f->a2a_congestion_peers : 1;
  f->a2a_efficiency = congestion / fs;
  if (f->a2a_efficiency > 1) {
    f->notes.push_back("the All2All is faster than the profile's network allows: efficiency clamped to 1");
    f->a2a_efficiency = 1;
  }
  return Status::ok();
}

}  // namespace

PaperBaseline gpu_128_assumed_baseline() {
  PaperBaseline b;
  b.small_workers = 128;
  b.large_workers = 0;
  b.large_step_s = 0;
  b.lookup_share_large = 0;
  b.a2a_share_large = 0;
  return b;
}

StatusOr<cluster::ClusterProfile> calibrate_nestpipe_baseline(const cluster::ClusterProfile& base,
                                                              const NestPipeSetup& setup, const PaperBaseline& paper,
                                                              BaselineFit* report) {
  const std::string where = "calibrating '" + base.name + "' to the paper's TorchRec: ";
  if (base.host_memory_bandwidth <= 0) {
    return Status::invalid_argument(where + "the profile has no host_memory_bandwidth");
  }
  CT_RETURN_IF_ERROR(cluster::check_worker_count(base, paper.small_workers));
  if (paper.large_workers > 0) CT_RETURN_IF_ERROR(cluster::check_worker_count(base, paper.large_workers));
  auto plans = torchrec_plans(setup, paper);
  if (!plans.is_ok()) return plans.status();
  const auto& [small_plan, large_plan] = *plans;

  cluster::ClusterProfile p = base;
  add_nestpipe_default_costs(&p);
  auto start = starting_fit(p, setup);
  if (!start.is_ok()) return start.status();
  BaselineFit f = *start;
  auto targets = baseline_targets(where, paper, p, small_plan, large_plan);
  if (!targets.is_ok()) return targets.status();
  const BaselineTargets& t = *targets;
  for (int round = 0; round < 8; ++round) {
    set_fit(f, &p);
    auto seen = observe_scales(small_plan, large_plan, p, t);
    if (!seen.is_ok()) return seen.status();
    const auto& [s, l] = *seen;
    score_round(s, l, t, round, &f);
    if (f.max_error < 1e-3) break;
    auto dense_scale = refit_dense(s, l, t, &f);
    if (!dense_scale.is_ok()) return dense_scale.status();
    const double rest_s = (s.step - s.lookup - s.a2a) + (s.compute - f.dense_call_overhead_s) * (*dense_scale - 1);
    const double target_small = rest_s / t.rest_share_small;
    CT_RETURN_IF_ERROR(refit_lookup(s, l, t, target_small, &f));
    if (t.two_scales) CT_RETURN_IF_ERROR(refit_all_to_all(s, l, t, target_small, &f));
  }
  if (f.max_error > 0.01) {
    return Status::internal(where + "did not converge (largest miss " + std::to_string(100 * f.max_error) + "%)");
  }
  set_fit(f, &p);
  p.description += " [TorchRec baseline calibrated to the NestPipe paper]";
  if (report != nullptr) *report = f;
  return p;
}

std::string baseline_fit_json(const BaselineFit& f) {
  nlohmann::ordered_json j;
  j["dense_flop_rate"] = f.dense_flop_rate;
  j["lookup_byte_rate"] = f.lookup_byte_rate;
  j["lookup_per_request_s"] = f.lookup_per_request_s;
  j["a2a_efficiency"] = f.a2a_efficiency;
  j["a2a_congestion_peers"] = f.a2a_congestion_peers;
  j["dense_call_overhead_s"] = f.dense_call_overhead_s;
  j["iterations"] = f.iterations;
  j["torchrec_small_step_s"] = f.small_step_s;
  j["torchrec_large_step_s"] = f.large_step_s;
  j["lookup_share_small"] = f.lookup_share_small;
  j["lookup_share_large"] = f.lookup_share_large;
  j["a2a_share_small"] = f.a2a_share_small;
  j["a2a_share_large"] = f.a2a_share_large;
  j["max_error"] = f.max_error;
  j["notes"] = f.notes;
  return j.dump();
}

// The workload the paper's figures were measured on, to fit the cluster to: its model (HSTU on the 1,536 NPUs,
// FuXi on the 128 GPUs, as the study runs them) and the setup's defaults for the data; the setup's own choices
// (launch costs, seed, sampling) are kept. A what-if on another workload (--zipf 3, --batch 64, --model
// dlrm-criteo) then runs on the cluster the paper's run fits, rather than fitting the cluster to the paper's step
// at a workload the paper did not run (which absorbed the change, or did not converge).
sim::nestpipe::NestPipeSetup paper_workload(const sim::nestpipe::NestPipeSetup& setup, bool npu) {
  const sim::nestpipe::NestPipeSetup defaults;
  sim::nestpipe::NestPipeSetup out = setup;
  out.model = npu ? "hstu-industrial" : "fuxi-kuairand";
  out.batch_per_worker = defaults.batch_per_worker;
  out.micro_batches = defaults.micro_batches;
  out.zipf_exponent = defaults.zipf_exponent;
  out.batch_overlap = defaults.batch_overlap;
  out.samples_per_user = defaults.samples_per_user;
  out.user_shared_fraction = defaults.user_shared_fraction;
  return out;
}

StatusOr<cluster::ClusterProfile> nestpipe_profile(const std::string& platform, const std::string& calibration,
                                                   const sim::nestpipe::NestPipeSetup& setup, std::string* fit_json,
                                                   BaselineFit* fit) {
  auto profile = cluster::load_cluster_profile(platform);
  if (!profile.is_ok()) return profile.status();
  bool paper = false;
  if (calibration == "paper") {
    paper = true;
  } else if (calibration == "auto") {
    paper = profile->name == "npu-1536" || profile->name == "gpu-128";
  } else if (calibration != "none") {
    return Status::invalid_argument("calibration '" + calibration + "': unknown (allowed: auto, paper, none)");
  }
  if (!paper) {
    sim::nestpipe::add_nestpipe_default_costs(&*profile);
    return profile;
  }
  // The paper's figures are for its two clusters: 1,536 NPUs (step and shares at two scales) and 128 GPUs
  // (NestPipe's speedup only; TorchRec's shares assumed as at 128 NPUs).
  const bool npu = profile->devices() >= 1536;
  const PaperBaseline baseline = npu ? PaperBaseline{} : gpu_128_assumed_baseline();
  auto calibrated = calibrate_nestpipe_baseline(*profile, paper_workload(setup, npu), baseline, fit);
  if (calibrated.is_ok()) *fit_json = baseline_fit_json(*fit);
  return calibrated;
}

}  // namespace clustertwin::calibrators
