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

// The rates of the profile's fitted entries over the defaults; true when it has any.
bool apply_fitted(const cluster::ClusterProfile& profile, bool fp8, DeviceRates* d) {
  const std::map<std::string, double> fitted = llm_fitted_values(profile);
  auto value = [&](const char* name, double* out) {
    if (auto v = fitted.find(name); v != fitted.end()) *out = v->second;
  };
  value(fp8 ? "gemm_fp8" : "gemm", &d->gemm_efficiency);
  value("attention", &d->attention_efficiency);
  value("overhead", &d->layer_overhead_s);
  return !fitted.empty();
}

}  // namespace

std::map<std::string, double> llm_fitted_values(const cluster::ClusterProfile& profile) {
  std::map<std::string, double> values;
  auto share = [&](const char* key, const char* dtype, const char* name) {
    auto cost = profile.costs.find(key);
    if (cost != profile.costs.end() && cost->second.flop_rate > 0 && peak_of(profile, dtype) > 0)
      values[name] = cost->second.flop_rate / peak_of(profile, dtype);
  };
  share(kGemmKey, "bf16", "gemm");
  share(kGemmFp8Key, "fp8", "gemm_fp8");
  share(kAttentionKey, "bf16", "attention");
  if (auto layer = profile.costs.find(kLayerKey); layer != profile.costs.end())
    values["overhead"] = layer->second.latency;
  return values;
}

cluster::ClusterProfile with_llm_values(const cluster::ClusterProfile& base,
                                        const std::map<std::string, double>& values) {
  cluster::ClusterProfile p = base;
  auto rate = [&](const char* key, const char* dtype, const char* name) {
    auto v = values.find(name);
    if (v == values.end() || peak_of(base, dtype) <= 0) return;
    cluster::CostModel cost;
    cost.flop_rate = v->second * peak_of(base, dtype);
    p.costs[key] = cost;
  };
  rate(kGemmKey, "bf16", "gemm");
  rate(kGemmFp8Key, "fp8", "gemm_fp8");
  rate(kAttentionKey, "bf16", "attention");
  if (auto v = values.find("overhead"); v != values.end()) {
    cluster::CostModel cost;
    cost.latency = v->second;
    p.costs[kLayerKey] = cost;
  }
  return p;
}

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
