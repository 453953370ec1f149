#include "real/flexmarl/worker.h"

#include <algorithm>

#include "common/hash.h"
#include "models/flexmarl/math_task.h"
#include "models/flexmarl/orchestrator.h"
#include "real/core/device.h"
#include "real/flexmarl/host_device.h"

namespace clustertwin::real::flexmarl {
namespace {

// Reads int64/float64 payloads front to back.
class Reader {
 public:
  explicit Reader(const at::Tensor& t) : t_(t), n_(t.defined() ? t.numel() : 0) {}
  bool has(int64_t k) const { return at_ + k <= n_; }
  at::Tensor take(int64_t k) {
    at::Tensor out = t_.slice(0, at_, at_ + k);
    at_ += k;
    return out;
  }
  int64_t next_long() { return t_[at_++].item<int64_t>(); }
  double next_double() { return t_[at_++].item<double>(); }

 private:
  at::Tensor t_;
  int64_t n_ = 0, at_ = 0;
};

Status malformed(const Message& m) {
  return Status::internal(std::string("flexmarl worker: malformed ") + kind_name(m.kind) + " message for agent " +
                          std::to_string(m.agent));
}

const std::string& agent_name(int64_t agent) {
  return clustertwin::models::flexmarl::task_agent_name(static_cast<int>(agent));
}

}  // namespace

ByteLmOptions task_model_options(const clustertwin::models::flexmarl::TaskSpec& task, int agent) {
  const clustertwin::models::flexmarl::TaskModelDims& d = task.dims.at(static_cast<size_t>(agent));
  ByteLmOptions o;
  o.vocab = clustertwin::models::flexmarl::kTaskVocab;
  o.context = task.context;
  o.d_model = d.d_model, o.layers = d.layers, o.heads = d.heads, o.d_ff = d.d_ff;
  return o;
}

StatusOr<ByteLm> make_task_model(const clustertwin::models::flexmarl::TaskSpec& task, int agent, uint64_t seed,
                                 at::Device device) {
  auto model = make_byte_lm(task_model_options(task, agent), mix64(seed ^ (0xa9e17ull + static_cast<uint64_t>(agent))));
  if (!model.is_ok()) return model.status();
  (*model)->to(at::kDouble);
  if (!device.is_cpu()) (*model)->to(device);
  return *model;
}

Status Worker::load(const Message& m) {
  Inference& inf = inference_[m.agent];
  if (!inf.model) {
    auto model = make_task_model(options_.task, static_cast<int>(m.agent), options_.seed, device());
    if (!model.is_ok()) return model.status();
    inf.model = *model;
    inf.version = 0;  // the seeded policy every rank builds is version 0
  }
  if (options_.fault_late_publish && !faulted_ && m.version >= 1 && comm_.rank() == 1) {
    // The deliberate late publish: keep the older weights (version 0 when
    // this worker never held the agent: the balancer decides who serves it)
    // and report their version with the rollouts.
    faulted_ = true;
    return Status::ok();
  }
  CT_RETURN_IF_ERROR(load_flat_params(inf.model, to_device(m.f64, device())));
  job_bytes_ = m.f64.numel() * 8;
  inf.version = m.version;
  return Status::ok();
}

Status Worker::generate(const Message& m, Message* reply) {
  auto it = inference_.find(m.agent);
  if (it == inference_.end() || !it->second.model) {
    return Status::internal("flexmarl worker " + std::to_string(comm_.rank()) + ": asked to generate for " +
                            agent_name(m.agent) + " without its weights");
  }
  Reader in(m.i64);
  std::vector<RolloutRequest> requests(static_cast<size_t>(m.count));
  for (RolloutRequest& r : requests) {
    if (!in.has(4)) return malformed(m);
    r.key = static_cast<uint64_t>(in.next_long());
    r.budget = static_cast<int>(in.next_long());
    r.stops_at_end = in.next_long() != 0;
    const int64_t p = in.next_long();
    if (p < 1 || !in.has(p)) return malformed(m);
    const at::Tensor prompt = in.take(p);
    r.prompt.assign(prompt.data_ptr<int64_t>(), prompt.data_ptr<int64_t>() + p);
  }
  auto results = ::clustertwin::real::flexmarl::generate(it->second.model, requests, options_.rollout);
  if (!results.is_ok()) return results.status();
  // What the engine computed, padding included (the orchestrator's formula:
  // the process twin prices the same positions).
  std::vector<int64_t> prompts, responses;
  for (size_t i = 0; i < requests.size(); ++i) {
    prompts.push_back(static_cast<int64_t>(requests[i].prompt.size()));
    responses.push_back(static_cast<int64_t>((*results)[i].response.size()));
  }
  job_flops_ =
      2 *
      static_cast<double>(clustertwin::models::flexmarl::task_linear_params(options_.task, static_cast<int>(m.agent))) *
      static_cast<double>(clustertwin::models::flexmarl::generate_positions(prompts, responses));
  std::vector<at::Tensor> longs, doubles;
  for (const RolloutResult& r : *results) {
    longs.push_back(at::tensor(std::vector<int64_t>{static_cast<int64_t>(r.response.size())}, at::kLong));
    longs.push_back(at::tensor(r.response, at::kLong));
    longs.push_back(r.topk_ids.reshape(-1));
    doubles.push_back(r.logp);
    doubles.push_back(r.topk_logp.reshape(-1));
  }
  reply->kind = Kind::kGenerated;
  reply->agent = m.agent;
  reply->version = it->second.version;
  reply->count = m.count;
  reply->i64 = at::cat(longs);
  reply->f64 = at::cat(doubles);
  return Status::ok();
}

Status Worker::train(const Message& m, Message* reply) {
  auto it = trainers_.find(m.agent);
  if (it == trainers_.end()) {
    return Status::internal("flexmarl worker " + std::to_string(comm_.rank()) + ": asked to train " +
                            agent_name(m.agent) + " without its state");
  }
  const int64_t k = m.arg1;
  // Host data: the trainer builds its padded batch on the host and uploads it whole.
  Reader longs(m.i64), doubles(to_host(m.f64));
  std::vector<TrainSample> micro(static_cast<size_t>(m.count));
  for (TrainSample& s : micro) {
    if (!longs.has(3)) return malformed(m);
    const int64_t t = longs.next_long();
    s.prompt_tokens = longs.next_long();
    s.id = static_cast<uint64_t>(longs.next_long());
    if (t < 2 || !longs.has(t + (t - 1) * k) || !doubles.has(1 + (t - 1) * (k + 1))) return malformed(m);
    s.tokens = longs.take(t).clone();
    s.topk_ids = longs.take((t - 1) * k).view({t - 1, k}).clone();
    s.advantage = doubles.next_double();
    s.logp_old = doubles.take(t - 1).clone();
    s.topk_logp_old = doubles.take((t - 1) * k).view({t - 1, k}).clone();
  }
  std::vector<int64_t> lengths;
  for (const TrainSample& s : micro)
    lengths.push_back(s.tokens.size(0));
  job_flops_ =
      6 *
      static_cast<double>(clustertwin::models::flexmarl::task_linear_params(options_.task, static_cast<int>(m.agent))) *
      static_cast<double>(clustertwin::models::flexmarl::train_positions(lengths));
  // Totals of 1: the step scales the summed gradient by the batch's real
  // count, known only once the whole batch is rolled out.
  auto loss = it->second->accumulate(micro, BatchTotals{1, 1});
  if (!loss.is_ok()) return loss.status();
  reply->kind = Kind::kTrained;
  reply->agent = m.agent;
  reply->count = m.count;
  reply->f64 = at::full({1}, *loss, at::kDouble);
  return Status::ok();
}

Status Worker::step(const Message& m, Message* reply) {
  auto it = trainers_.find(m.agent);
  if (it == trainers_.end() || !m.f64.defined() || m.f64.numel() != 1) return malformed(m);
  std::vector<int> members;
  for (int r = 0; r < 63; ++r) {
    if (m.arg1 & (int64_t{1} << r)) members.push_back(r);
  }
  Group* group = nullptr;
  if (members.size() > 1) {
    auto g = comm_.group(members, 1);
    if (!g.is_ok()) return g.status();
    group = *g;
  }
  CT_RETURN_IF_ERROR(it->second->step(&comm_, group, m.f64[0].item<double>()));
  if (group != nullptr) job_bytes_ = static_cast<int64_t>(it->second->last_gradient().numel()) * 8;  // all-reduced
  reply->agent = m.agent;
  reply->version = it->second->version();
  if (members.empty() || members.front() == comm_.rank()) {
    reply->kind = Kind::kPublished;
    // The new weights, then the gradient that made them (for checks), then
    // when asked the whole new state (the host's copy, flexmarl variants).
    std::vector<at::Tensor> parts = {flat_params(it->second->model()), it->second->last_gradient()};
    if (m.count == 1) parts.push_back(it->second->pack_state());
    reply->f64 = ready_to_send(links_, at::cat(parts));
  } else {
    reply->kind = Kind::kDone;
  }
  return Status::ok();
}

Status Worker::swap_in(const Message& m) {
  auto model = make_task_model(options_.task, static_cast<int>(m.agent), options_.seed, device());
  if (!model.is_ok()) return model.status();
  auto trainer = std::make_unique<AgentTrainer>(*model, options_.adam, options_.loss);
  // Host (pinned) -> device in one copy, then unpacked on the device.
  CT_RETURN_IF_ERROR(trainer->unpack_state(to_device(m.f64, device())));
  job_bytes_ = m.f64.numel() * 8;
  trainers_[m.agent] = std::move(trainer);
  return Status::ok();
}

Status Worker::swap_out(const Message& m, Message* reply) {
  auto it = trainers_.find(m.agent);
  if (it == trainers_.end()) return malformed(m);
  reply->kind = Kind::kState;
  reply->agent = m.agent;
  reply->version = it->second->version();
  // Packed on the device, then device -> host (pinned) in one copy.
  reply->f64 = ready_to_send(links_, it->second->pack_state());
  job_bytes_ = reply->f64.numel() * 8;
  trainers_.erase(it);
  return Status::ok();
}

Status Worker::run() {
  for (;;) {
    Message m;
    CT_RETURN_IF_ERROR(recv_message(comm_, links_, 0, &m));
    if (m.kind == Kind::kStop) {
      aborted_ = m.arg1 != 0;
      Message reply;
      reply.kind = Kind::kStopped;
      reply.f64 = at::tensor(
          std::vector<double>{totals_.cpu_s, totals_.busy_s, totals_.swap_s, static_cast<double>(totals_.swap_bytes)},
          at::kDouble);
      return send_message(comm_, links_, 0, reply);
    }
    if (m.kind == Kind::kCheckpoint) {
      if (!options_.checkpoint) return malformed(m);
      CT_RETURN_IF_ERROR(options_.checkpoint(m.arg2, state_dump()));
      continue;
    }
    if (m.agent < 0 || m.agent >= clustertwin::models::flexmarl::kTaskTurns) return malformed(m);
    kill_at_step(options_.hooks, m.arg2);
    job_flops_ = 0;
    job_bytes_ = 0;
    const double t0 = tracer_.now_us(), cpu0 = Tracer::thread_cpu_us();
    Message reply;
    reply.kind = Kind::kDone;
    reply.agent = m.agent;
    switch (m.kind) {
      case Kind::kLoad:
        CT_RETURN_IF_ERROR(load(m));
        break;
      case Kind::kGenerate:
        CT_RETURN_IF_ERROR(generate(m, &reply));
        break;
      case Kind::kTrain:
        CT_RETURN_IF_ERROR(train(m, &reply));
        break;
      case Kind::kStep:
        CT_RETURN_IF_ERROR(step(m, &reply));
        break;
      case Kind::kSwapIn:
        CT_RETURN_IF_ERROR(swap_in(m));
        break;
      case Kind::kSwapOut:
        CT_RETURN_IF_ERROR(swap_out(m, &reply));
        break;
      default:
        return malformed(m);
    }
    // The job's kernels run asynchronously on a GPU: its end is when the
    // device is done, not when the last launch returned (a no-op on the CPU).
    real::synchronize(device());
    const double t1 = tracer_.now_us();
    const double cpu = Tracer::thread_cpu_us() - cpu0;
    totals_.cpu_s += cpu / 1e6;
    totals_.busy_s += (t1 - t0) / 1e6;
    if (m.kind == Kind::kSwapIn || m.kind == Kind::kSwapOut) {
      totals_.swap_s += (t1 - t0) / 1e6;
      totals_.swap_bytes += job_bytes_;
    }
    traces::Event e;
    e.name = std::string(kind_name(m.kind)) + " " + agent_name(m.agent);
    e.category = m.kind == Kind::kLoad || m.kind == Kind::kSwapIn || m.kind == Kind::kSwapOut
                     ? traces::Category::kCopy
                     : traces::Category::kCompute;
    e.ts_us = t0;
    e.dur_us = t1 - t0;
    e.step = m.arg2;
    e.cost_key = std::string("flexmarl/") + kind_name(m.kind) + "/" + agent_name(m.agent);
    e.cpu_us = cpu;
    if (job_flops_ > 0) e.flops = job_flops_;
    if (job_bytes_ > 0) e.bytes = job_bytes_;
    tracer_.record(std::move(e));
    CT_RETURN_IF_ERROR(send_message(comm_, links_, 0, reply));
  }
}

}  // namespace clustertwin::real::flexmarl
