// clustertwin run flowtrain: one rank's work (flowtrain_command.h). The
// command line (cli/real_command.cpp) only parses; this file checks the
// flags, connects, trains the tiny VLM in the chosen mode and reports.

#include "real/flowtrain/flowtrain_command.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <optional>

#include "models/common/state_dump.h"
#include "models/flowtrain/tiny_plan.h"
#include "models/torch/tiny_vlm.h"
#include "real/core/communicator.h"
#include "real/core/dist_env.h"
#include "real/core/tracer.h"
#include "real/flowtrain/memory_pool.h"
#include "traces/json_text.h"

namespace clustertwin::real::flowtrain {
namespace {

namespace tm = clustertwin::torch_models;
namespace pf = clustertwin::flowtrain;

enum class Mode { kMonolithic, kDisaggSync, kFlowTrain };

std::string number(double value) {
  std::string out;
  traces::append_json_number(&out, value);
  return out;
}

int encoder_count(const FlowTrainRunArgs& a, int world) {
  return a.encoder_workers > 0 ? a.encoder_workers : std::max(1, world / 4);
}

Status check_args(const FlowTrainRunArgs& a, int world, Mode* mode) {
  if (a.mode == "monolithic") {
    *mode = Mode::kMonolithic;
  } else if (a.mode == "disagg-sync") {
    *mode = Mode::kDisaggSync;
  } else if (a.mode == "flowtrain") {
    *mode = Mode::kFlowTrain;
  } else {
    return Status::invalid_argument("--mode '" + a.mode + "': unknown (allowed: monolithic, disagg-sync, flowtrain)");
  }
  if (a.steps < 1) return Status::invalid_argument("--steps " + std::to_string(a.steps) + ": must be at least 1");
  if (a.global_batch < 1) {
    return Status::invalid_argument("--global-batch " + std::to_string(a.global_batch) + ": must be >= 1");
  }
  const tm::TinyVlmOptions o;
  if (a.micro_batch_tokens < o.context) {
    return Status::invalid_argument("--micro-batch-tokens " + std::to_string(a.micro_batch_tokens) +
                                    ": must hold the longest sample (" + std::to_string(o.context) + " tokens)");
  }
  if (a.pool_slots < 1) {
    return Status::invalid_argument("--pool-slots " + std::to_string(a.pool_slots) +
                                    ": smaller than one sample (a slot holds one sample's embeddings)");
  }
  if (!(a.lr > 0) || !std::isfinite(a.lr)) return Status::invalid_argument("--lr " + number(a.lr) + ": must be > 0");
  if (a.threads < 1) return Status::invalid_argument("--threads " + std::to_string(a.threads) + ": must be >= 1");
  if (!(a.timeout_s > 0)) return Status::invalid_argument("--timeout " + number(a.timeout_s) + ": must be > 0");
  if (a.backend != "gloo" && a.backend != "auto") {
    return Status::invalid_argument("--backend '" + a.backend +
                                    "': run flowtrain keeps its tensors on the CPU (allowed: gloo, auto)");
  }
  if (*mode != Mode::kMonolithic) {
    const int e = encoder_count(a, world);
    if (a.encoder_workers < 0 || e >= world) {
      return Status::invalid_argument("--encoder-workers " + std::to_string(a.encoder_workers) + " of " +
                                      std::to_string(world) + " ranks: each side needs at least one worker (1.." +
                                      std::to_string(world - 1) + "; launch --nproc 2 or more)");
    }
  }
  return Status::ok();
}

// ---- the samples and what they cost -----------------------------------------------------------------------------

struct StepSample {
  pf::TinySample shape;  // sizes and model FLOPs (models/flowtrain/tiny_plan.h)
  // Made when a rank first needs them (Run::load): a cache, so a const sample can fill it.
  mutable tm::TinyVlmSample data;
  mutable bool loaded = false;
};

// The facts of the model the sizes and FLOPs need: its options and parameter counts.
pf::TinyFacts tiny_facts(tm::TinyVlm& model) {
  const tm::TinyVlmOptions& o = model->options();
  pf::TinyFacts f;
  f.tokens_per_image = o.tokens_per_image();
  f.max_images = o.max_images;
  f.context = o.context;
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

std::vector<StepSample> step_samples(const pf::TinyFacts& f, uint64_t seed, int step, int batch) {
  std::vector<StepSample> out;
  for (const pf::TinySample& shape : pf::tiny_step(f, seed, step, batch)) {
    StepSample s;
    s.shape = shape;
    out.push_back(std::move(s));
  }
  return out;
}

// ---- tensors --------------------------------------------------------------------------------------------------

torch::Tensor flatten_grads(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> parts;
  for (const torch::Tensor& p : params)
    parts.push_back(p.grad().defined() ? p.grad().reshape({-1}) : torch::zeros({p.numel()}));
  return torch::cat(parts);
}

void unflatten_grads(const torch::Tensor& flat, const std::vector<torch::Tensor>& params) {
  int64_t offset = 0;
  for (const torch::Tensor& p : params) {
    torch::Tensor g = flat.slice(0, offset, offset + p.numel()).view_as(p);
    if (p.grad().defined()) {
      p.mutable_grad().copy_(g);
    } else {
      p.mutable_grad() = g.clone();
    }
    offset += p.numel();
  }
}

torch::Tensor flatten_values(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> parts;
  for (const torch::Tensor& p : params)
    parts.push_back(p.detach().reshape({-1}));
  return torch::cat(parts);
}

// This machine's matrix-multiply rate on one thread, FLOP/s: the MFU's peak.
double measured_matmul_rate() {
  torch::NoGradGuard no_grad;
  const int64_t n = 256;
  torch::Tensor a = torch::randn({n, n}), b = torch::randn({n, n});
  torch::Tensor c = torch::mm(a, b);  // warm-up
  int reps = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < 0.3) {
    c = torch::mm(a, b);
    ++reps;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return reps * 2.0 * n * n * n / elapsed;
}

// ---- one rank's run -----------------------------------------------------------------------------------------------

class Run {
 public:
  Run(const FlowTrainRunArgs& a, Mode mode, Communicator& comm, Group& world, Tracer& tracer, tm::TinyVlm model)
      : a_(a), mode_(mode), comm_(comm), world_(world), tracer_(tracer), model_(std::move(model)) {
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
    optimizer_.emplace(params_, torch::optim::SGDOptions(a_.lr).momentum(0.9));
  }

  const pf::TinyFacts& facts() const { return facts_; }
  bool is_encoder() const { return mode_ != Mode::kMonolithic && rank_ < encoders_; }
  int backbones() const { return comm_.world_size() - encoders_; }
  int encoders() const { return encoders_; }

  // Each encoder worker creates its pools (embedding slots, and a whole step's gradient slots) and the backbone
  // workers open every encoder's: a producer waits only on its own slots, which its earlier samples hold, so the
  // smallest sample not yet consumed can always be made and taken (a pool shared by all producers could fill with
  // later samples while an earlier one waits).
  Status setup_pools() {
    if (mode_ != Mode::kFlowTrain) return Status::ok();
    const size_t slot = static_cast<size_t>(o_.max_images * o_.tokens_per_image() * o_.d_model) * sizeof(float);
    const std::string base = "/ct_ft_" + std::to_string(comm_.env().master_port) + "_";
    embeddings_.resize(encoders_);
    gradients_.resize(encoders_);
    if (is_encoder()) {
      auto e = SharedPool::create(base + "emb" + std::to_string(rank_), a_.pool_slots, slot);
      if (!e.is_ok()) return e.status();
      auto g = SharedPool::create(base + "grad" + std::to_string(rank_), a_.global_batch, slot);
      if (!g.is_ok()) return g.status();
      embeddings_[rank_] = std::move(*e);
      gradients_[rank_] = std::move(*g);
    }
    CT_RETURN_IF_ERROR(comm_.barrier(world_));
    if (!is_encoder()) {
      for (int e = 0; e < encoders_; ++e) {
        auto emb = SharedPool::open(base + "emb" + std::to_string(e));
        if (!emb.is_ok()) return emb.status();
        auto grad = SharedPool::open(base + "grad" + std::to_string(e));
        if (!grad.is_ok()) return grad.status();
        embeddings_[e] = std::move(*emb);
        gradients_[e] = std::move(*grad);
      }
    }
    return comm_.barrier(world_);
  }

  // One step; returns this rank's loss sum (the backbone's).
  StatusOr<double> step(int step) {
    step_ = step;
    samples_ = step_samples(facts_, a_.seed, step, a_.global_batch);
    shapes_.clear();
    for (const StepSample& s : samples_)
      shapes_.push_back(s.shape);
    optimizer_->zero_grad();
    loss_sum_ = 0;
    Status s = mode_ == Mode::kMonolithic ? monolithic() : mode_ == Mode::kDisaggSync ? disagg_sync() : flowtrain();
    CT_RETURN_IF_ERROR(s);
    // Each side's gradient sum over its workers, then the step.
    const double start = tracer_.now_us(), cpu = Tracer::thread_cpu_us();
    torch::Tensor flat = flatten_grads(params_);
    Group* side = &world_;
    if (mode_ != Mode::kMonolithic) {
      std::vector<int> members;
      for (int r = is_encoder() ? 0 : encoders_; r < (is_encoder() ? encoders_ : comm_.world_size()); ++r)
        members.push_back(r);
      auto g = comm_.group(members, is_encoder() ? 1 : 2);
      if (!g.is_ok()) return g.status();
      side = *g;
    }
    CT_RETURN_IF_ERROR(comm_.all_reduce(*side, flat));
    unflatten_grads(flat, params_);
    record("allreduce", "flowtrain/allreduce", start, cpu, 0, static_cast<int64_t>(flat.numel() * 4));
    const double opt_start = tracer_.now_us(), opt_cpu = Tracer::thread_cpu_us();
    optimizer_->step();
    int64_t param_bytes = 0;
    for (const torch::Tensor& p : params_)
      param_bytes += p.numel() * 4;
    record("optimizer", "flowtrain/optimizer", opt_start, opt_cpu, 0, param_bytes);
    return loss_sum_;
  }

  /// Every parameter in model order, gathered at rank 0 (the backbone's from rank E in the split modes).
  StatusOr<std::vector<std::pair<std::string, torch::Tensor>>> gather_parameters() {
    std::vector<std::pair<std::string, torch::Tensor>> out;
    if (mode_ == Mode::kMonolithic) {
      for (const auto& item : model_->named_parameters())
        out.emplace_back(item.key(), item.value().detach().clone());
      return out;
    }
    const std::vector<torch::Tensor> backbone = model_->backbone_parameters();
    if (rank_ == encoders_) {
      torch::Tensor flat = flatten_values(backbone).contiguous();
      CT_RETURN_IF_ERROR(comm_.send(world_, flat, 0, 7));
      return out;
    }
    if (rank_ != 0) return out;
    torch::Tensor flat = flatten_values(backbone).contiguous().clone();
    CT_RETURN_IF_ERROR(comm_.recv(world_, flat, encoders_, 7));
    int64_t offset = 0;
    for (const auto& item : model_->named_parameters()) {
      if (item.key().rfind("backbone.", 0) == 0) {
        const int64_t n = item.value().numel();
        out.emplace_back(item.key(), flat.slice(0, offset, offset + n).view_as(item.value()).clone());
        offset += n;
      } else {
        out.emplace_back(item.key(), item.value().detach().clone());
      }
    }
    return out;
  }

  double step_model_flops() const {
    double f = 0;
    for (const StepSample& s : samples_)
      f += s.shape.encoder_flops + s.shape.backbone_flops;
    return f;
  }

  void release_pools() {
    embeddings_.clear();
    gradients_.clear();
  }

 private:
  void record(const std::string& name, const std::string& cost_key, double start_us, double cpu_start_us, double flops,
              int64_t bytes = 0) {
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
  const tm::TinyVlmSample& load(const StepSample& s) {
    if (!s.loaded) {
      const double start = tracer_.now_us(), cpu = Tracer::thread_cpu_us();
      s.data = tm::tiny_vlm_sample(o_, a_.seed, s.shape.id);
      s.loaded = true;
      record("data", "flowtrain/data", start, cpu, 0, pf::tiny_sample_bytes(facts_, s.shape));
    }
    return s.data;
  }

  // The backbone's part of one sample; `image_tokens` undefined for a text-only sample.
  torch::Tensor backbone_sample(const StepSample& s, const torch::Tensor& image_tokens) {
    const double start = tracer_.now_us(), cpu = Tracer::thread_cpu_us();
    torch::Tensor loss = model_->sample_loss(image_tokens, load(s).text) / a_.global_batch;
    loss.backward();
    loss_sum_ += loss.item<double>() * a_.global_batch;
    record("backbone", "flowtrain/backbone", start, cpu, s.shape.backbone_flops);
    return loss;
  }

  torch::Tensor encode(const StepSample& s, bool with_graph) {
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

  void encoder_backward(const StepSample& s, const torch::Tensor& tokens, const torch::Tensor& grad) {
    const double start = tracer_.now_us(), cpu = Tracer::thread_cpu_us();
    tokens.backward(grad);
    record("encoder-backward", "flowtrain/encoder_backward", start, cpu, 2 * s.shape.encoder_flops / 3);
  }

  // ---- monolithic: encoder and backbone on every rank --------------------------------------------------------
  Status monolithic() {
    for (size_t i = static_cast<size_t>(rank_); i < samples_.size(); i += static_cast<size_t>(comm_.world_size())) {
      const StepSample& s = samples_[i];
      if (s.shape.images == 0) {
        backbone_sample(s, torch::Tensor());
        continue;
      }
      // The backward split at the image tokens (the same gradients as one backward, tiny_vlm_test), so that the
      // trace times the encoder's backward apart from the backbone's.
      torch::Tensor tokens = encode(s, true);
      torch::Tensor detached = tokens.detach().requires_grad_(true);
      backbone_sample(s, detached);
      encoder_backward(s, tokens, detached.grad());
    }
    return Status::ok();
  }

  torch::Tensor token_buffer(const StepSample& s) const {
    return torch::empty({s.shape.images, o_.tokens_per_image(), o_.d_model});
  }

  // ---- disagg-sync: lock-step rounds over c10d send/recv ------------------------------------------------------
  Status disagg_sync() {
    auto plan = pf::plan_step(shapes_, encoders_, backbones(), a_.micro_batch_tokens, false);
    if (!plan.is_ok()) return plan.status();
    const pf::StepPlan& as = *plan;
    const size_t rounds = as.bins.size() / static_cast<size_t>(backbones());
    for (size_t r = 0; r < rounds; ++r) {
      std::vector<int64_t> round;  // the round's samples, bin by bin
      for (size_t j = r * backbones(); j < (r + 1) * backbones(); ++j)
        round.insert(round.end(), as.bins[j].begin(), as.bins[j].end());
      if (is_encoder()) {
        std::vector<std::pair<int64_t, torch::Tensor>> mine;
        std::vector<PendingSend> sends;
        std::vector<torch::Tensor> keep;
        for (int64_t i : round) {
          if (as.encoder_of[i] != rank_) continue;
          torch::Tensor tokens = encode(samples_[i], true);
          torch::Tensor out = tokens.detach().contiguous();
          const double start = tracer_.now_us(), cpu = Tracer::thread_cpu_us();
          auto w = comm_.send_async(world_, out, as.backbone_of[i], static_cast<int>(i));
          if (!w.is_ok()) return w.status();
          record("send-embedding", "flowtrain/transfer", start, cpu, 0, out.numel() * 4);
          sends.push_back(*w);
          keep.push_back(out);
          mine.emplace_back(i, tokens);
        }
        for (auto& [i, tokens] : mine) {
          torch::Tensor grad = token_buffer(samples_[i]);
          CT_RETURN_IF_ERROR(comm_.recv(world_, grad, as.backbone_of[i], static_cast<int>(i)));
          encoder_backward(samples_[i], tokens, grad);
        }
        for (const auto& w : sends)
          CT_RETURN_IF_ERROR(comm_.wait_send(w));
      } else {
        std::vector<PendingSend> sends;
        std::vector<torch::Tensor> keep;
        for (int64_t i : round) {
          if (as.backbone_of[i] != rank_) continue;
          const StepSample& s = samples_[i];
          if (s.shape.images == 0) {
            backbone_sample(s, torch::Tensor());
            continue;
          }
          torch::Tensor tokens = token_buffer(s);
          CT_RETURN_IF_ERROR(comm_.recv(world_, tokens, as.encoder_of[i], static_cast<int>(i)));
          tokens.requires_grad_(true);
          backbone_sample(s, tokens);
          torch::Tensor grad = tokens.grad().contiguous();
          auto w = comm_.send_async(world_, grad, as.encoder_of[i], static_cast<int>(i));
          if (!w.is_ok()) return w.status();
          sends.push_back(*w);
          keep.push_back(grad);
        }
        for (const auto& w : sends)
          CT_RETURN_IF_ERROR(comm_.wait_send(w));
      }
    }
    return Status::ok();
  }

  // ---- flowtrain: decoupled through the pool -------------------------------------------------------------------
  Status flowtrain() {
    auto plan = pf::plan_step(shapes_, encoders_, backbones(), a_.micro_batch_tokens, true);
    if (!plan.is_ok()) return plan.status();
    const pf::StepPlan& as = *plan;
    if (is_encoder()) {
      std::vector<uint64_t> wanted;
      std::map<uint64_t, int> sample_of;
      for (int i : as.order) {
        if (as.encoder_of[i] != rank_) continue;
        // No graph kept: the backward recomputes the forward when the gradient comes.
        torch::Tensor tokens = encode(samples_[i], false).contiguous();
        const uint64_t key = pool_key(step_, i);
        const double start = tracer_.now_us(), cpu = Tracer::thread_cpu_us();
        Status put = embeddings_[rank_]->put(key, tokens.data_ptr<float>(), static_cast<size_t>(tokens.numel()) * 4,
                                             a_.timeout_s);
        if (!put.is_ok()) return pool_error("put an embedding", put);
        record("pool-put", "flowtrain/pool_put", start, cpu, 0, tokens.numel() * 4);
        wanted.push_back(key);
        sample_of[key] = i;
      }
      std::sort(wanted.begin(), wanted.end());
      std::vector<float> buffer(static_cast<size_t>(o_.max_images * o_.tokens_per_image() * o_.d_model));
      while (!wanted.empty()) {
        const double start = tracer_.now_us(), cpu = Tracer::thread_cpu_us();
        auto taken = gradients_[rank_]->take_any(wanted, buffer.data(), buffer.size() * 4, a_.timeout_s);
        if (!taken.is_ok()) return pool_error("take a gradient", taken.status());
        record("pool-take", "flowtrain/pool_take", start, cpu, 0, static_cast<int64_t>(taken->bytes));
        wanted.erase(std::find(wanted.begin(), wanted.end(), taken->key));
        const StepSample& s = samples_[sample_of[taken->key]];
        torch::Tensor grad =
            torch::from_blob(buffer.data(), {s.shape.images, o_.tokens_per_image(), o_.d_model}).clone();
        torch::Tensor tokens = encode(s, true);
        encoder_backward(s, tokens, grad);
      }
      return Status::ok();
    }
    for (size_t j = static_cast<size_t>(rank_ - encoders_); j < as.bins.size(); j += backbones()) {
      for (int64_t i : as.bins[j]) {
        const StepSample& s = samples_[i];
        if (s.shape.images == 0) {
          backbone_sample(s, torch::Tensor());
          continue;
        }
        torch::Tensor tokens = token_buffer(s);
        const uint64_t key = pool_key(step_, i);
        const double start = tracer_.now_us(), cpu = Tracer::thread_cpu_us();
        Status take = embeddings_[as.encoder_of[i]]->take(key, tokens.data_ptr<float>(),
                                                          static_cast<size_t>(tokens.numel()) * 4, a_.timeout_s);
        if (!take.is_ok()) return pool_error("take an embedding", take);
        record("pool-take", "flowtrain/pool_take", start, cpu, 0, tokens.numel() * 4);
        tokens.requires_grad_(true);
        backbone_sample(s, tokens);
        torch::Tensor grad = tokens.grad().contiguous();
        const double put_start = tracer_.now_us(), put_cpu = Tracer::thread_cpu_us();
        Status put = gradients_[as.encoder_of[i]]->put(key, grad.data_ptr<float>(),
                                                       static_cast<size_t>(grad.numel()) * 4, a_.timeout_s);
        if (!put.is_ok()) return pool_error("put a gradient", put);
        record("pool-put", "flowtrain/pool_put", put_start, put_cpu, 0, grad.numel() * 4);
      }
    }
    return Status::ok();
  }

  Status pool_error(const std::string& what, const Status& s) const {
    return Status::internal("run flowtrain: rank " + std::to_string(rank_) + " could not " + what + " in step " +
                            std::to_string(step_) + ": " + s.message());
  }

  const FlowTrainRunArgs& a_;
  Mode mode_;
  Communicator& comm_;
  Group& world_;
  Tracer& tracer_;
  tm::TinyVlm model_;
  tm::TinyVlmOptions o_;
  pf::TinyFacts facts_;
  std::vector<pf::TinySample> shapes_;
  int encoders_ = 0, rank_ = 0, step_ = 0;
  std::vector<torch::Tensor> params_;
  std::optional<torch::optim::SGD> optimizer_;
  std::vector<StepSample> samples_;
  double loss_sum_ = 0;
  std::vector<std::unique_ptr<SharedPool>> embeddings_, gradients_;  // per encoder worker
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::string options_json(const FlowTrainRunArgs& a, int world, int encoders, const pf::TinyFacts& f,
                         double matmul_rate) {
  std::string o = "{\"mode\":";
  traces::append_json_string(&o, a.mode);
  o += ",\"world_size\":" + std::to_string(world) + ",\"encoder_workers\":" + std::to_string(encoders) +
       ",\"steps\":" + std::to_string(a.steps) + ",\"global_batch\":" + std::to_string(a.global_batch) +
       ",\"micro_batch_tokens\":" + std::to_string(a.micro_batch_tokens) +
       ",\"pool_slots\":" + std::to_string(a.pool_slots) + ",\"lr\":" + number(a.lr) +
       ",\"seed\":" + std::to_string(a.seed) + ",\"threads\":" + std::to_string(a.threads) +
       ",\"matmul_flops_per_s\":" + number(matmul_rate) + ",\"model\":{\"encoder_params\":" + number(f.encoder_params) +
       ",\"backbone_params\":" + number(f.backbone_params) +
       ",\"tokens_per_image\":" + std::to_string(f.tokens_per_image) +
       ",\"max_images\":" + std::to_string(f.max_images) + ",\"context\":" + std::to_string(f.context) +
       ",\"text_scale\":" + number(f.text_scale) + ",\"d_vision\":" + std::to_string(f.d_vision) +
       ",\"enc_layers\":" + std::to_string(f.enc_layers) + ",\"d_model\":" + std::to_string(f.d_model) +
       ",\"layers\":" + std::to_string(f.layers) + ",\"vocab\":" + std::to_string(f.vocab) + "}}";
  return o;
}

}  // namespace

Status run_flowtrain(const FlowTrainRunArgs& a) {
  auto env = read_dist_env();
  if (!env.is_ok()) return env.status();
  Mode mode = Mode::kFlowTrain;
  CT_RETURN_IF_ERROR(check_args(a, env->world_size, &mode));
  at::set_num_threads(a.threads);
  auto comm = connect_for_run(*env, "cpu", a.backend, a.timeout_s);
  if (!comm.is_ok()) return comm.status();
  auto world = (*comm)->world(0);
  if (!world.is_ok()) return world.status();

  auto model = tm::make_tiny_vlm(tm::TinyVlmOptions{}, a.seed);
  if (!model.is_ok()) return model.status();
  Tracer tracer((*comm)->rank());
  Run run(a, mode, **comm, **world, tracer, *model);
  CT_RETURN_IF_ERROR(run.setup_pools());
  const double matmul_rate = (*comm)->rank() == 0 ? measured_matmul_rate() : 0;
  CT_RETURN_IF_ERROR((*comm)->barrier(**world));
  tracer.start();

  std::vector<double> step_s, losses;
  double flops = 0;
  for (int s = 0; s < a.steps; ++s) {
    const auto start = std::chrono::steady_clock::now();
    const double start_us = tracer.now_us();
    auto loss = run.step(s);
    if (!loss.is_ok()) return loss.status();
    // The step ends on every rank at once: the loss sum over the ranks doubles as the barrier.
    torch::Tensor total = torch::full({1}, *loss, torch::kFloat64);
    CT_RETURN_IF_ERROR((*comm)->all_reduce(**world, total));
    step_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if ((*comm)->rank() == 0) {
      traces::Event e;
      e.name = "step";
      e.category = traces::Category::kCompute;
      e.stream = 2;
      e.ts_us = start_us;
      e.dur_us = tracer.now_us() - start_us;
      e.step = s;
      e.cost_key = "flowtrain/step";
      tracer.record(std::move(e));
    }
    losses.push_back(total.item<double>() / a.global_batch);
    flops += run.step_model_flops();
  }
  const int encoders = mode == Mode::kMonolithic ? 0 : run.encoders();
  if (!a.trace.empty()) {
    traces::Metadata metadata = real_run_metadata(
        **comm, "flowtrain", a.mode, options_json(a, env->world_size, encoders, run.facts(), matmul_rate), a.seed);
    metadata.streams = {"compute", "comm", "step"};
    CT_RETURN_IF_ERROR(tracer.gather_and_write(**comm, **world, metadata, a.trace));
  }
  auto params = run.gather_parameters();
  if (!params.is_ok()) return params.status();
  CT_RETURN_IF_ERROR((*comm)->barrier(**world));
  run.release_pools();
  if ((*comm)->rank() != 0) return Status::ok();

  if (!a.dump_params.empty()) {
    StateDump dump;
    dump.rank = 0;
    dump.world = env->world_size;
    for (const auto& [name, t] : *params) {
      DumpTensor d;
      d.name = name;
      d.type = DumpTensor::Type::kFloat64;
      const torch::Tensor w = t.to(torch::kFloat64).contiguous();
      d.shape = {w.numel()};
      d.bytes.assign(reinterpret_cast<const char*>(w.data_ptr<double>()), static_cast<size_t>(w.numel()) * 8);
      dump.tensors.push_back(std::move(d));
    }
    CT_RETURN_IF_ERROR(write_state_dump(a.dump_params, dump));
  }
  const double total_s = std::accumulate(step_s.begin(), step_s.end(), 0.0);
  const double median_s = median(step_s);
  const double samples_per_s = a.global_batch / median_s;
  const double mfu = flops / (total_s * env->world_size * matmul_rate);
  if (a.json) {
    std::string out = "{\"mode\":";
    traces::append_json_string(&out, a.mode);
    out += ",\"world_size\":" + std::to_string(env->world_size) + ",\"encoder_workers\":" + std::to_string(encoders) +
           ",\"steps\":" + std::to_string(a.steps) + ",\"global_batch\":" + std::to_string(a.global_batch) +
           ",\"step_s\":" + number(median_s) + ",\"step_times\":[";
    for (size_t i = 0; i < step_s.size(); ++i)
      out += (i ? "," : "") + number(step_s[i]);
    out += "],\"samples_per_s\":" + number(samples_per_s) + ",\"mfu\":" + number(mfu) +
           ",\"matmul_flops_per_s\":" + number(matmul_rate) + ",\"loss\":[";
    for (size_t i = 0; i < losses.size(); ++i)
      out += (i ? "," : "") + number(losses[i]);
    out += "]}\n";
    std::fputs(out.c_str(), stdout);
  } else {
    std::printf("# clustertwin run flowtrain: %d ranks (%s), tiny VLM, %d samples a step; %s\n", env->world_size,
                (*comm)->backend().c_str(), a.global_batch,
                mode == Mode::kMonolithic ? "every rank runs encoder and backbone"
                                          : (std::to_string(encoders) + " encoder and " +
                                             std::to_string(env->world_size - encoders) + " backbone workers")
                                                .c_str());
    std::printf("  %-12s %5s %15s %10s %7s %12s\n", "mode", "steps", "median step (s)", "samples/s", "mfu",
                "loss (last)");
    std::printf("  %-12s %5d %15.4f %10.1f %6.2f%% %12.4f\n", a.mode.c_str(), a.steps, median_s, samples_per_s,
                100 * mfu, losses.back());
    std::printf(
        "# MFU: the tiny VLM's model FLOPs over ranks x this machine's measured matmul rate (%.1f GFLOP/s, "
        "one thread)\n",
        matmul_rate / 1e9);
    if (!a.trace.empty()) std::printf("# trace: %s\n", a.trace.c_str());
    if (!a.dump_params.empty()) std::printf("# final parameters: %s\n", state_dump_path(a.dump_params, 0).c_str());
  }
  std::fflush(stdout);
  return Status::ok();
}

}  // namespace clustertwin::real::flowtrain
