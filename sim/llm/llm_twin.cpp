#include "sim/llm/llm_twin.h"

#include <algorithm>
#include <utility>

#include "common/text.h"
#include "models/cluster/device_profile.h"
#include "models/llm/llm_plan.h"
#include "sim/core/simulator.h"

namespace clustertwin::sim::llm {

using models::llm::Split;
using models::transformer::DeviceRates;

namespace {

// The device's peak for `dtype`, or 0.
double peak_of(const cluster::ClusterProfile& profile, const std::string& dtype) {
  auto peak = profile.device.peak_flops.find(dtype);
  return peak == profile.device.peak_flops.end() ? 0.0 : peak->second;
}

// A fitted rate of the profile's costs as a share of `peak`, or -1 when the profile has none.
double fitted_share(const cluster::ClusterProfile& profile, const char* key, double peak) {
  auto cost = profile.costs.find(key);
  if (cost == profile.costs.end() || cost->second.flop_rate <= 0 || peak <= 0) return -1;
  return cost->second.flop_rate / peak;
}

// The rates of the profile's fitted entries over the defaults; true when it has any.
bool apply_fitted(const cluster::ClusterProfile& profile, bool fp8, DeviceRates* d) {
  const double gemm = fitted_share(profile, fp8 ? kGemmFp8Key : kGemmKey, fp8 ? d->gemm_peak_flops : d->peak_flops);
  const double attention = fitted_share(profile, kAttentionKey, d->peak_flops);
  auto layer = profile.costs.find(kLayerKey);
  if (gemm > 0) d->gemm_efficiency = gemm;
  if (attention > 0) d->attention_efficiency = attention;
  if (layer != profile.costs.end()) d->layer_overhead_s = layer->second.latency;
  return gemm > 0 || attention > 0 || layer != profile.costs.end();
}

}  // namespace

StatusOr<DeviceRates> llm_device_rates(const LlmSetup& setup, const cluster::ClusterProfile& profile,
                                       std::string* source) {
  const std::string& precision = setup.split.precision;
  const bool fp8 = precision == "fp8";
  DeviceRates d;
  d.peak_flops = peak_of(profile, fp8 ? "bf16" : precision);
  if (fp8) d.gemm_peak_flops = peak_of(profile, "fp8");
  if (d.peak_flops <= 0 || (fp8 && d.gemm_peak_flops <= 0)) {
    return Status::invalid_argument("precision '" + precision + "': device '" + profile.device.name + "' of profile '" +
                                    profile.name + "' has no " + (fp8 ? "fp8 and bf16" : precision) +
                                    " peak (field 'device.peak_flops')");
  }
  d.memory_bandwidth = profile.device.memory_bandwidth * profile.device.memory_efficiency;
  if (d.memory_bandwidth <= 0) {
    return Status::invalid_argument("profile '" + profile.name +
                                    "': field 'device.memory_bandwidth' is needed to price the elementwise kernels");
  }
  std::string from = apply_fitted(profile, fp8, &d) ? "fitted: profile " + profile.name + "'s llm/* costs" : "assumed";
  if (!setup.device_profile.empty()) {
    auto device = cluster::load_device_profile(setup.device_profile);
    if (!device.is_ok()) return device.status();
    d.gemm_curve = device->gemm;
    d.attention_curve = device->attention;
    from = "device profile " + device->name + " (" + device->software_stack + ")";
  }
  if (source != nullptr) *source = from;
  return d;
}

Status check_llm(const LlmSetup& setup, const cluster::ClusterProfile& profile, int workers) {
  CT_RETURN_IF_ERROR(cluster::check_worker_count(profile, workers));
  CT_RETURN_IF_ERROR(models::llm::check_split(setup.model, setup.split, workers));
  CT_RETURN_IF_ERROR(llm_device_rates(setup, profile).status());
  const models::llm::GpuMemory memory = models::llm::gpu_memory(setup.model, setup.split);
  const double capacity = profile.device.memory_bytes;
  if (capacity > 0 && memory.total() > capacity) {
    return Status::invalid_argument("micro_batch " + std::to_string(setup.split.micro_batch) +
                                    ": a GPU of the first stage needs " + format_number("%.1f", memory.total() / kGiB) +
                                    " GiB (weights " + format_number("%.1f", memory.weights / kGiB) + ", gradients " +
                                    format_number("%.1f", memory.gradients / kGiB) + ", optimizer " +
                                    format_number("%.1f", memory.optimizer / kGiB) + ", activations " +
                                    format_number("%.1f", memory.activations / kGiB) + "), more than the " +
                                    format_number("%.1f", capacity / kGiB) + " GiB of device '" + profile.device.name +
                                    "' of profile '" + profile.name + "'; raise tp or pp, recompute, or zero 1");
  }
  return Status::ok();
}

SimOptions llm_sim_options(int workers) {
  SimOptions o;
  o.workers = workers;
  o.steps = 1;
  o.warmup_steps = 0;
  o.drain_steps = 0;
  return o;
}

namespace {

std::vector<BreakdownLayer> llm_breakdown_layers(const Split& split) {
  BreakdownLayer compute{"compute", {}};
  for (const char* key : models::llm::kPassKeys)
    compute.cost_keys.emplace_back(key);
  BreakdownLayer optimizer{"optimizer", {}};
  for (int p = 0; p < split.pp; ++p)
    optimizer.cost_keys.push_back("llm/optimizer/stage" + std::to_string(p));
  return {compute,
          {"tp", {models::llm::kTensorParallelKey}},
          optimizer,
          {"dp", {models::llm::kDataParallelKey}},
          {"pp", {models::llm::kPipelineKey}}};
}

}  // namespace

StatusOr<std::unique_ptr<PlanJob>> make_llm_job(const LlmSetup& setup, const cluster::ClusterProfile& profile,
                                                const SimOptions& options) {
  auto rates = llm_device_rates(setup, profile);
  if (!rates.is_ok()) return rates.status();
  cluster::ClusterProfile costed = profile;
  for (const auto& [key, seconds] : models::llm::step_costs(setup.model, setup.split, *rates)) {
    cluster::CostModel cost;
    cost.latency = seconds;
    costed.costs[key] = cost;
  }
  SimOptions o = options;
  o.breakdown = llm_breakdown_layers(setup.split);
  return PlanJob::make(models::llm::step_plan(setup.model, setup.split), std::move(costed), std::move(o),
                       "llm/" + std::string(models::llm::schedule_name(setup.split.schedule)));
}

StatusOr<LlmResult> simulate_llm(const LlmSetup& setup, const cluster::ClusterProfile& profile,
                                 const SimOptions& options) {
  CT_RETURN_IF_ERROR(check_llm(setup, profile, options.workers));
  std::string source;
  CT_RETURN_IF_ERROR(llm_device_rates(setup, profile, &source).status());
  auto job = make_llm_job(setup, profile, options);
  if (!job.is_ok()) return job.status();
  auto sim = simulate_plan((*job)->plan(), (*job)->profile(), (*job)->options());
  if (!sim.is_ok()) return sim.status();
  LlmResult result = llm_result(setup, profile, std::move(sim).value());
  result.rates_source = std::move(source);
  return result;
}

LlmResult llm_result(const LlmSetup& setup, const cluster::ClusterProfile& profile, SimResult sim) {
  LlmResult r;
  r.step_s = sim.step_time_s;
  const double tokens = static_cast<double>(setup.split.global_batch) * static_cast<double>(setup.model.seq);
  r.model_flops = models::transformer::model_flops_per_step(setup.model, setup.split.global_batch);
  const double peak = peak_of(profile, "bf16") > 0 ? peak_of(profile, "bf16") : peak_of(profile, "fp16");
  if (r.step_s > 0) {
    r.tokens_per_s = tokens / r.step_s;
    if (peak > 0) r.mfu = r.model_flops / (sim.workers * peak * r.step_s);
  }
  double exposed = 0;
  for (const LayerMetrics& layer : sim.breakdown) {
    if (layer.name == "compute") r.breakdown.compute_s = layer.exposed_s;
    if (layer.name == "tp") r.breakdown.exposed_tp_s = layer.exposed_s;
    if (layer.name == "optimizer") r.breakdown.optimizer_s = layer.exposed_s;
    if (layer.name == "dp") r.breakdown.exposed_dp_s = layer.exposed_s;
    if (layer.name != "pp") exposed += layer.exposed_s;
  }
  r.breakdown.bubble_s = std::max(0.0, r.step_s - exposed);
  r.memory = models::llm::gpu_memory(setup.model, setup.split);
  r.memory_capacity = profile.device.memory_bytes;
  r.sim = std::move(sim);
  return r;
}

}  // namespace clustertwin::sim::llm
