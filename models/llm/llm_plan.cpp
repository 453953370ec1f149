#include "models/llm/llm_plan.h"

#include <algorithm>
#include <cmath>

namespace clustertwin::models::llm {

using transformer::Transformer;

std::vector<PipelineOp> stage_order(const Split& s, int stage) {
  const int64_t p = s.pp, v = s.virtual_stages, total = micro_batches(s) * v;
  // The k-th forward (or backward) of the stage: Megatron-LM's interleaved order, plain micro-batch order for V = 1.
  auto op_at = [&](int64_t k, bool forward) {
    if (v == 1) return PipelineOp{forward, 0, k};
    const int group_chunk = static_cast<int>(k / p % v);
    return PipelineOp{forward, forward ? group_chunk : static_cast<int>(v - 1 - group_chunk), k / (p * v) * p + k % p};
  };
  int64_t warm = std::min(p - stage - 1, total);
  if (s.schedule == Schedule::kGpipe) warm = total;
  if (v > 1) warm = std::min((p - stage - 1) * 2 + (v - 1) * p, total);
  std::vector<PipelineOp> order;
  order.reserve(static_cast<size_t>(2 * total));
  for (int64_t k = 0; k < warm; ++k)
    order.push_back(op_at(k, true));
  for (int64_t i = 0; i < total - warm; ++i) {
    order.push_back(op_at(warm + i, true));
    order.push_back(op_at(i, false));
  }
  for (int64_t k = total - warm; k < total; ++k)
    order.push_back(op_at(k, false));
  return order;
}

namespace {

// Parameters of one chunk's layers on one GPU: what its backward produces gradients for layer by layer.
double chunk_layer_parameters(const Transformer& m, const Split& s) {
  return static_cast<double>(chunk_layers(m, s)) * static_cast<double>(transformer::layer_parameters(m)) / s.tp;
}

// bf16 values of one micro-batch's activations: micro_batch x seq x hidden.
double activation_values(const Transformer& m, const Split& s) {
  return static_cast<double>(s.micro_batch) * static_cast<double>(m.seq) * static_cast<double>(m.hidden);
}

}  // namespace

int gradient_buckets(const Transformer& m, const Split& s) {
  if (!s.overlap_grad_reduce) return 1;
  const double bucket = std::max(40e6, 1e6 * s.dp);
  const double buckets = std::ceil(chunk_layer_parameters(m, s) / bucket);
  return static_cast<int>(std::clamp<double>(buckets, 1, static_cast<double>(chunk_layers(m, s))));
}

std::map<std::string, double> step_costs(const Transformer& m, const Split& s, const transformer::DeviceRates& d) {
  const double tokens = static_cast<double>(s.micro_batch) * static_cast<double>(m.seq);
  const int64_t layers = chunk_layers(m, s);
  const transformer::PassSeconds body = transformer::layer_seconds(m, layers, tokens, s.tp, s.sequence_parallel, d);
  const transformer::PassSeconds head = transformer::head_seconds(m, tokens, s.tp, d);
  double backward = body.backward;
  if (s.recompute == Recompute::kFull) backward += body.forward;
  if (s.recompute == Recompute::kSelective)
    backward += transformer::attention_forward_seconds(m, layers, tokens, s.tp, d);
  const int buckets = gradient_buckets(m, s);
  std::map<std::string, double> costs{{"llm/forward", body.forward},
                                      {"llm/backward", backward},
                                      {"llm/forward_head", body.forward + head.forward},
                                      {"llm/backward_head", backward + head.backward},
                                      {"llm/backward_bucket", backward / buckets},
                                      {"llm/backward_head_bucket", (backward + head.backward) / buckets}};
  for (int p = 0; p < s.pp; ++p) {
    const double parameters = stage_parameters(m, s, p);
    costs["llm/optimizer/stage" + std::to_string(p)] =
        transformer::adam_seconds(s.zero == 1 ? parameters / s.dp : parameters, d);
  }
  return costs;
}

namespace {

enum Stream { kCompute, kRecvForward, kRecvBackward, kSendForward, kSendBackward, kDataParallel };

// Builds one stage's tasks of the step plan.
class StageBuilder {
 public:
  StageBuilder(const Transformer& m, const Split& s, int stage, Plan* plan) : m_(m), s_(s), stage_(stage), plan_(plan) {
    const int stage_ranks = s.tp * s.dp;
    ranks_ = {RankRange{stage * stage_ranks, (stage + 1) * stage_ranks}};
    // The next stage (p + 1) mod PP and the previous one (p - 1) mod PP, as rank offsets.
    next_offset_ = stage < s.pp - 1 ? stage_ranks : -(s.pp - 1) * stage_ranks;
    previous_offset_ = stage > 0 ? -stage_ranks : (s.pp - 1) * stage_ranks;
  }

  void build() {
    for (const PipelineOp& op : stage_order(s_, stage_)) {
      if (op.forward) {
        forward(op);
      } else {
        backward(op);
      }
    }
    if (!s_.overlap_grad_reduce) {
      for (int c = 0; c < s_.virtual_stages; ++c)
        reduce(c, 0, 1, last_);
    }
    optimizer();
  }

 private:
  int virtual_stage(int chunk) const { return chunk * s_.pp + stage_; }
  int last_virtual_stage() const { return s_.pp * s_.virtual_stages - 1; }
  std::string label(const char* what, const PipelineOp& op) const {
    return "s" + std::to_string(stage_) + " " + what + " c" + std::to_string(op.chunk) + " m" +
           std::to_string(op.micro_batch);
  }
  // The tag of the message that reaches virtual stage `q` for micro-batch `mb` (0: activations, 1: gradients).
  int tag(int q, int64_t mb, int direction) const {
    return static_cast<int>(((q * micro_batches(s_) + mb) * 2 + direction) + 1);
  }

  int add(std::string name, TaskKind kind, int stream, std::vector<int> deps) {
    Task t;
    t.id = static_cast<int>(plan_->tasks.size());
    t.name = std::move(name);
    t.kind = kind;
    t.stream = stream;
    t.deps = std::move(deps);
    t.ranks = ranks_;
    if (kind == TaskKind::kCompute) t.dtype = s_.precision;
    plan_->tasks.push_back(std::move(t));
    return plan_->tasks.back().id;
  }
  int compute(std::string name, const std::string& key, std::vector<int> deps, int64_t micro_batch) {
    const int id = add(std::move(name), TaskKind::kCompute, kCompute, std::move(deps));
    plan_->tasks[id].cost_key = key;
    plan_->tasks[id].micro_batch = static_cast<int>(micro_batch);
    if (first_compute_ < 0) first_compute_ = id;
    return id;
  }
  int collective(std::string name, int stream, CollectiveOp op, GroupSpec group, double bytes, std::vector<int> deps,
                 int peer_offset = 0, int tag = 0) {
    const int id = add(std::move(name), TaskKind::kCollective, stream, std::move(deps));
    plan_->tasks[id].cost_key = stream == kCompute        ? kTensorParallelKey
                                : stream == kDataParallel ? kDataParallelKey
                                                          : kPipelineKey;
    plan_->tasks[id].bytes = std::llround(bytes);
    plan_->tasks[id].collective = Collective{op, group, Algorithm::kAuto, 0, peer_offset, tag, {}};
    return id;
  }
  // The tensor-parallel all-reduce of `exchanges` per layer after a pass; `after` when TP is 1.
  int tensor_parallel(std::string name, int exchanges, int after) {
    if (s_.tp == 1) return after;
    const double bytes = 2.0 * exchanges * chunk_layers(m_, s_) * activation_values(m_, s_);
    return collective(std::move(name), kCompute, CollectiveOp::kAllReduce, GroupSpec{GroupSpec::Kind::kBlock, s_.tp},
                      bytes, {after});
  }
  double message_bytes() const { return 2.0 * activation_values(m_, s_) / s_.tp; }

  void forward(const PipelineOp& op) {
    const int q = virtual_stage(op.chunk);
    std::vector<int> deps;
    if (q > 0) {
      deps.push_back(collective(label("recv F", op), kRecvForward, CollectiveOp::kRecv, GroupSpec{}, message_bytes(),
                                {}, previous_offset_, tag(q, op.micro_batch, 0)));
    }
    const bool head = q == last_virtual_stage();
    const int f = compute(label("F", op), head ? "llm/forward_head" : "llm/forward", deps, op.micro_batch);
    last_ = tensor_parallel(label("TP F", op), 2, f);
    if (!head) {
      collective(label("send F", op), kSendForward, CollectiveOp::kSend, GroupSpec{}, message_bytes(), {last_},
                 next_offset_, tag(q + 1, op.micro_batch, 0));
    }
  }

  void backward(const PipelineOp& op) {
    const int q = virtual_stage(op.chunk);
    const bool head = q == last_virtual_stage();
    std::vector<int> deps;
    if (!head) {
      deps.push_back(collective(label("recv B", op), kRecvBackward, CollectiveOp::kRecv, GroupSpec{}, message_bytes(),
                                {}, next_offset_, tag(q, op.micro_batch, 1)));
    }
    const bool last_micro_batch = op.micro_batch == micro_batches(s_) - 1;
    const int buckets = last_micro_batch ? gradient_buckets(m_, s_) : 1;
    const std::string key = head ? "llm/backward_head" : "llm/backward";
    int b = -1;
    if (buckets == 1) {
      b = compute(label("B", op), key, deps, op.micro_batch);
    } else {
      for (int j = 0; j < buckets; ++j) {
        b = compute(label("B", op) + " part " + std::to_string(j), key + "_bucket", j == 0 ? deps : std::vector<int>{},
                    op.micro_batch);
        reduce(op.chunk, j, buckets, b);
      }
    }
    last_ = tensor_parallel(label("TP B", op), s_.recompute == Recompute::kFull ? 4 : 2, b);
    if (buckets == 1 && last_micro_batch && s_.overlap_grad_reduce) reduce(op.chunk, 0, 1, last_);
    if (q > 0) {
      collective(label("send B", op), kSendBackward, CollectiveOp::kSend, GroupSpec{}, message_bytes(), {last_},
                 previous_offset_, tag(q - 1, op.micro_batch, 1));
    }
  }

  // Part `part` of `parts` of chunk `chunk`'s fp32 gradients reduced over the stage's data-parallel group after
  // `after`.
  void reduce(int chunk, int part, int parts, int after) {
    if (s_.dp == 1) return;
    const double bytes = gradient_bytes(s_) * chunk_parameters(m_, s_, virtual_stage(chunk)) / parts;
    const CollectiveOp op = s_.zero == 1 ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce;
    reductions_.push_back(
        collective("s" + std::to_string(stage_) + " DP c" + std::to_string(chunk) + " part " + std::to_string(part),
                   kDataParallel, op, data_parallel_group(), bytes, {after}));
  }
  GroupSpec data_parallel_group() const { return GroupSpec{GroupSpec::Kind::kStride, s_.tp, s_.tp * s_.dp}; }

  void optimizer() {
    std::vector<int> deps = reductions_;
    deps.push_back(last_);
    const int adam =
        compute("s" + std::to_string(stage_) + " optimizer", "llm/optimizer/stage" + std::to_string(stage_), deps, -1);
    if (s_.zero == 1 && s_.dp > 1) {
      const double weights = 2.0 * stage_parameters(m_, s_, stage_);
      const int gather = collective("s" + std::to_string(stage_) + " DP weights", kDataParallel,
                                    CollectiveOp::kAllGather, data_parallel_group(), weights, {adam});
      plan_->tasks[first_compute_].prev_step_deps.push_back(gather);
    }
  }

  const Transformer& m_;
  const Split& s_;
  int stage_;
  Plan* plan_;
  std::vector<RankRange> ranks_;
  int next_offset_ = 0, previous_offset_ = 0;
  int first_compute_ = -1;
  int last_ = -1;  // the last task of the compute stream so far
  std::vector<int> reductions_;
};

}  // namespace

Plan step_plan(const Transformer& m, const Split& s) {
  Plan plan;
  plan.system = "llm";
  plan.variant = std::string(schedule_name(s.schedule));
  plan.streams = {"compute", "recv_fwd", "recv_bwd", "send_fwd", "send_bwd", "dp"};
  for (int stage = 0; stage < s.pp; ++stage)
    StageBuilder(m, s, stage, &plan).build();
  return plan;
}

}  // namespace clustertwin::models::llm
