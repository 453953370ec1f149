// What the three modes of run flowtrain share (worker.h): the model on the
// rank's device, the samples' tensors, the traced tasks, the gradients'
// all-reduce and the optimizer's step.

#include "real/flowtrain/worker.h"

#include <algorithm>
#include <chrono>

#include "common/check.h"
#include "real/core/device.h"

namespace clustertwin::real::flowtrain {

namespace pf = ::clustertwin::models::flowtrain;

namespace {

// The facts of the model the sizes and FLOPs need: its options and parameter counts.
pf::TinyFacts tiny_facts(TinyVlm& model) {
  const TinyVlmOptions& o = model->options();
  pf::TinyFacts f;
  f.tokens_per_image = o.tokens_per_image();
  f.max_images = o.max_images;
  f.context = o.context;
  f.text_scale = o.text_scale;
  f.patch = o.patch;
  f.d_vision = o.d_vision;
  f.enc_layers = o.enc_layers;
  f.d_model = o.d_model;
  f.layers = o.layers;
  f.vocab = o.vocab;
  for (const torch::Tensor& p : model->encoder_parameters())
    f.encoder_params += static_cast<double>(p.numel());
  for (const auto& item : model->named_parameters()) {
    const std::string& name = item.key();
    if (name.rfind("backbone.", 0) != 0) continue;
    if (name.find("token") != std::string::npos || name.find("position") != std::string::npos) continue;
    f.backbone_params += static_cast<double>(item.value().numel());
  }
  return f;
}

// The gradients travel as float32 whatever the parameters' dtype: Gloo in libtorch 1.13 has no bfloat16
// ("Invalid scalar type" from ProcessGroupGloo's allreduce), so a bfloat16 model all-reduces a float32 copy of its
// gradients, which also sums them without bfloat16's rounding. The copy goes in buckets of at most this many
// elements, so that a billion-parameter side needs 256 MB beside its gradients, not a second copy of them; a
// parameter larger than a bucket is a bucket of its own. The tiny model's gradients are one bucket.
constexpr int64_t kBucketElements = int64_t{1} << 26;

// params split into buckets of consecutive parameters, each of at most kBucketElements elements (or one parameter).
std::vector<std::vector<torch::Tensor>> buckets(const std::vector<torch::Tensor>& params) {
  std::vector<std::vector<torch::Tensor>> out;
  int64_t filled = kBucketElements;
  for (const torch::Tensor& p : params) {
    if (filled + p.numel() > kBucketElements) {
      out.emplace_back();
      filled = 0;
    }
    out.back().push_back(p);
    filled += p.numel();
  }
  return out;
}

torch::Tensor flatten_grads(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> parts;
  for (const torch::Tensor& p : params) {
    parts.push_back(p.grad().defined() ? p.grad().reshape({-1}).to(torch::kFloat)
                                       : torch::zeros({p.numel()}, p.options().dtype(torch::kFloat)));
  }
  return torch::cat(parts);
}

void unflatten_grads(const torch::Tensor& flat, const std::vector<torch::Tensor>& params) {
  int64_t offset = 0;
  for (const torch::Tensor& p : params) {
    torch::Tensor g = flat.slice(0, offset, offset + p.numel()).view_as(p);
    if (p.grad().defined()) {
      p.mutable_grad().copy_(g);
    } else {
      p.mutable_grad() = g.to(p.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
    }
    offset += p.numel();
  }
}

// The values as one float32 vector (what a bfloat16 model's values are exactly, and what Gloo can send).
torch::Tensor flatten_values(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> parts;
  for (const torch::Tensor& p : params)
    parts.push_back(p.detach().reshape({-1}).to(torch::kFloat));
  return torch::cat(parts);
}

// The names of `params` in the model, in their order (each parameter is in the model once).
std::vector<std::string> side_parameter_names(TinyVlm& model, const std::vector<torch::Tensor>& params) {
  std::vector<std::string> names;
  for (const torch::Tensor& p : params) {
    for (const auto& item : model->named_parameters()) {
      if (item.value().unsafeGetTensorImpl() == p.unsafeGetTensorImpl()) names.push_back(item.key());
    }
  }
  CT_CHECK(names.size() == params.size()) << names.size() << " names for " << params.size() << " parameters";
  return names;
}

torch::Tensor on_cpu(const torch::Tensor& t) {
  return t.detach().to(torch::kCPU).clone();
}

}  // namespace

Worker::Worker(const FlowTrainRunArgs& a, Mode mode, Communicator& comm, Group& world, Tracer& tracer, TinyVlm model)
    : a_(a),
      mode_(mode),
      comm_(comm),
      world_(world),
      tracer_(tracer),
      device_(comm.device()),
      model_(std::move(model)) {
  // Before the optimizer takes the parameters: Module::to moves them in place, so the lists below are the device's.
  // One parameter at a time, so a float32 model made on the host needs no second copy of itself to change dtype.
  model_->to(device_, compute_dtype(a_));
  o_ = model_->options();
  facts_ = tiny_facts(model_);
  const int n = comm_.world_size();
  encoders_ = mode_ == Mode::kMonolithic ? 0 : encoder_count(a_, n);
  rank_ = comm_.rank();
  if (mode_ == Mode::kMonolithic) {
    params_ = model_->parameters();
  } else {
    params_ = is_encoder() ? model_->encoder_parameters() : model_->backbone_parameters();
  }
  param_names_ = side_parameter_names(model_, params_);
  optimizer_.emplace(params_, torch::optim::SGDOptions(a_.lr).momentum(0.9));
}

Status Worker::setup_pools() {
  if (mode_ != Mode::kFlowTrain) return Status::ok();
  PoolLayout layout;
  layout.base = "/ct_ft_" + std::to_string(comm_.env().master_port) + "_";
  layout.encoders = encoders_;
  layout.embedding_slots = a_.pool_slots;
  layout.gradient_slots = a_.global_batch;
  layout.slot_bytes = static_cast<size_t>(o_.max_images * o_.tokens_per_image() * o_.d_model) * sizeof(float);
  auto pools = FlowPools::connect(comm_, world_, layout, a_.pool_transfer);
  if (!pools.is_ok()) return pools.status();
  pools_ = std::move(*pools);
  return Status::ok();
}

StatusOr<double> Worker::step(int step) {
  step_ = step;
  samples_.clear();
  shapes_.clear();
  for (const pf::TinySample& shape : pf::tiny_step(facts_, a_.seed, step, a_.global_batch)) {
    StepSample s;
    s.shape = shape;
    samples_.push_back(std::move(s));
    shapes_.push_back(shape);
  }
  optimizer_->zero_grad();
  loss_sum_ = 0;
  Status s = mode_ == Mode::kMonolithic ? monolithic() : mode_ == Mode::kDisaggSync ? disagg_sync() : flowtrain();
  CT_RETURN_IF_ERROR(s);
  CT_RETURN_IF_ERROR(all_reduce_and_step());
  return loss_sum_;
}

// Each side's gradient sum over its workers, then the step.
Status Worker::all_reduce_and_step() {
  const double start = tracer_.now_us(), cpu = Tracer::thread_cpu_us();
  Group* side = &world_;
  if (mode_ != Mode::kMonolithic) {
    std::vector<int> members;
    for (int r = is_encoder() ? 0 : encoders_; r < (is_encoder() ? encoders_ : comm_.world_size()); ++r)
      members.push_back(r);
    auto g = comm_.group(members, is_encoder() ? 1 : 2);
    if (!g.is_ok()) return g.status();
    side = *g;
  }
  int64_t elements = 0;
  for (const std::vector<torch::Tensor>& bucket : buckets(params_)) {
    torch::Tensor flat = flatten_grads(bucket);
    CT_RETURN_IF_ERROR(comm_.all_reduce(*side, flat));
    unflatten_grads(flat, bucket);
    elements += flat.numel();
  }
  record("allreduce", "flowtrain/allreduce", start, cpu, 0, elements * 4);
  const double opt_start = tracer_.now_us(), opt_cpu = Tracer::thread_cpu_us();
  optimizer_->step();
  int64_t param_bytes = 0;
  for (const torch::Tensor& p : params_)
    param_bytes += p.numel() * p.element_size();
  record("optimizer", "flowtrain/optimizer", opt_start, opt_cpu, 0, param_bytes);
  return Status::ok();
}

StatusOr<std::vector<std::pair<std::string, torch::Tensor>>> Worker::gather_parameters() {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  if (mode_ == Mode::kMonolithic) {
    for (const auto& item : model_->named_parameters())
      out.emplace_back(item.key(), on_cpu(item.value()));
    return out;
  }
  const std::vector<torch::Tensor> backbone = model_->backbone_parameters();
  if (rank_ == encoders_) {
    torch::Tensor flat = flatten_values(backbone).contiguous();
    CT_RETURN_IF_ERROR(comm_.send(world_, flat, 0, 7));
    return out;
  }
  if (rank_ != 0) return out;
  int64_t elements = 0;
  for (const torch::Tensor& p : backbone)
    elements += p.numel();
  torch::Tensor flat = torch::empty({elements}, floats());
  CT_RETURN_IF_ERROR(comm_.recv(world_, flat, encoders_, 7));
  int64_t offset = 0;
  for (const auto& item : model_->named_parameters()) {
    if (item.key().rfind("backbone.", 0) == 0) {
      const int64_t n = item.value().numel();
      out.emplace_back(item.key(), on_cpu(flat.slice(0, offset, offset + n).view_as(item.value())));
      offset += n;
    } else {
      out.emplace_back(item.key(), on_cpu(item.value()));
    }
  }
  return out;
}

double Worker::step_model_flops() const {
  double f = 0;
  for (const StepSample& s : samples_)
    f += s.shape.encoder_flops + s.shape.backbone_flops;
  return f;
}

void Worker::record(const std::string& name, const std::string& cost_key, double start_us, double cpu_start_us,
                    double flops, int64_t bytes) {
  // The tracer reads host clocks, and on a GPU a task's kernels are only queued when its host code returns: the
  // device is synchronised before the end time is read, so an event spans its work on the device. That serialises
  // host and device at every task (the next task's kernels are not queued while this one's run), and the trace
  // shows that honestly: it is the price of timing each task, as the twin's cost fits need.
  if (device_.is_cuda()) synchronize(device_);
  traces::Event e;
  e.name = name;
  const bool comm = name == "allreduce" || name.rfind("pool-", 0) == 0 || name.rfind("send", 0) == 0;
  e.category = comm ? traces::Category::kComm : traces::Category::kCompute;
  if (name == "allreduce") e.collective = "allreduce";
  e.stream = comm ? 1 : 0;
  e.ts_us = start_us;
  e.dur_us = std::max(0.0, tracer_.now_us() - start_us);
  e.step = step_;
  e.cost_key = cost_key;
  if (flops > 0) e.flops = flops;
  if (bytes > 0) e.bytes = bytes;
  e.cpu_us = Tracer::thread_cpu_us() - cpu_start_us;
  tracer_.record(std::move(e));
}

// The sample's tensors, made the first time this rank needs them (a data loader's work, traced).
const TinyVlmSample& Worker::load(const StepSample& s) {
  if (!s.loaded) {
    const double start = tracer_.now_us(), cpu = Tracer::thread_cpu_us();
    TinyVlmSample d = tiny_vlm_sample(o_, a_.seed, s.shape.id);
    d.images = upload(d.images);
    d.text = upload(d.text);
    s.data = std::move(d);
    s.loaded = true;
    record("data", "flowtrain/data", start, cpu, 0, pf::tiny_sample_bytes(facts_, s.shape));
  }
  return s.data;
}

// Host data to the device: through pinned memory, so that the copy runs asynchronously on the current stream.
torch::Tensor Worker::upload(const torch::Tensor& host) const {
  if (device_.is_cpu()) return host;
  torch::Tensor pinned = torch::empty(host.sizes(), host.options().pinned_memory(true));
  pinned.copy_(host);
  return pinned.to(device_, /*non_blocking=*/true);
}

// The backbone's part of one sample; `image_tokens` undefined for a text-only sample.
torch::Tensor Worker::backbone_sample(const StepSample& s, const torch::Tensor& image_tokens) {
  const double start = tracer_.now_us(), cpu = Tracer::thread_cpu_us();
  torch::Tensor loss = model_->sample_loss(image_tokens, load(s).text) / a_.global_batch;
  loss.backward();
  loss_sum_ += loss.item<double>() * a_.global_batch;
  record("backbone", "flowtrain/backbone", start, cpu, s.shape.backbone_flops);
  return loss;
}

torch::Tensor Worker::encode(const StepSample& s, bool with_graph) {
  const double start = tracer_.now_us(), cpu = Tracer::thread_cpu_us();
  torch::Tensor e;
  if (with_graph) {
    e = model_->encode(load(s).images);
  } else {
    torch::NoGradGuard no_grad;
    e = model_->encode(load(s).images);
  }
  record("encoder", "flowtrain/encoder", start, cpu, s.shape.encoder_flops / 3);
  return e;
}

void Worker::encoder_backward(const StepSample& s, const torch::Tensor& tokens, const torch::Tensor& grad) {
  const double start = tracer_.now_us(), cpu = Tracer::thread_cpu_us();
  tokens.backward(grad);
  record("encoder-backward", "flowtrain/encoder_backward", start, cpu, 2 * s.shape.encoder_flops / 3);
}

torch::Tensor Worker::token_buffer(const StepSample& s) const {
  return torch::empty({s.shape.images, o_.tokens_per_image(), o_.d_model}, floats());
}

double measured_matmul_rate(c10::Device device, c10::ScalarType dtype, int64_t width) {
  torch::NoGradGuard no_grad;
  // Large enough on a GPU that the kernel, not its launch, sets the rate. On the CPU, where a small matmul runs at a
  // fraction of a large one's rate (bf16 on two cores: 17 GFLOP/s at 256, 90 at 2048), the model's own width.
  const int64_t n = device.is_cuda() ? 4096 : std::clamp<int64_t>(width, 256, 2048);
  const auto options = torch::TensorOptions().dtype(dtype).device(device);
  torch::Tensor a = torch::randn({n, n}, options), b = torch::randn({n, n}, options);
  torch::Tensor c = torch::mm(a, b);  // warm-up
  synchronize(device);
  int reps = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < 0.3) {
    c = torch::mm(a, b);
    synchronize(device);
    ++reps;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return reps * 2.0 * n * n * n / elapsed;
}

}  // namespace clustertwin::real::flowtrain
