#include "models/torch/byte_lm.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <sstream>

#include "common/file_io.h"
#include "models/torch/init.h"

namespace clustertwin::models::nets {
namespace {

const char* const kOptionNames[] = {"vocab", "context", "d_model", "layers", "heads", "d_ff"};

std::vector<int64_t> option_values(const ByteLmOptions& o) {
  return {o.vocab, o.context, o.d_model, o.layers, o.heads, o.d_ff};
}

}  // namespace

Status check_byte_lm_options(const ByteLmOptions& o) {
  const std::vector<int64_t> values = option_values(o);
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] < 1 || values[i] > (int64_t{1} << 24)) {
      return Status::invalid_argument(std::string(kOptionNames[i]) + " " + std::to_string(values[i]) +
                                      " must be in [1, 2^24]");
    }
  }
  if (o.d_model % o.heads != 0) {
    return Status::invalid_argument("heads " + std::to_string(o.heads) + " must divide d_model " +
                                    std::to_string(o.d_model));
  }
  return Status::ok();
}

ByteLmBlockImpl::ByteLmBlockImpl(const ByteLmOptions& o) : heads_(o.heads), context_(o.context) {
  ln1_ = register_module("ln1", layer_norm(o.d_model));
  q_ = register_module("q", linear(o.d_model, o.d_model));
  k_ = register_module("k", linear(o.d_model, o.d_model));
  v_ = register_module("v", linear(o.d_model, o.d_model));
  out_ = register_module("out", linear(o.d_model, o.d_model));
  ln2_ = register_module("ln2", layer_norm(o.d_model));
  fc1_ = register_module("fc1", linear(o.d_model, o.d_ff));
  fc2_ = register_module("fc2", linear(o.d_ff, o.d_model));
}

torch::Tensor ByteLmBlockImpl::forward(const torch::Tensor& x, const LinearTap& tap, KvCache* cache) {
  const int64_t b = x.size(0), t = x.size(1), d = x.size(2), dh = d / heads_;
  auto apply = [&](const char* name, torch::nn::Linear& layer, const torch::Tensor& input) {
    if (tap) tap(name, input);
    return layer->forward(input);
  };
  const torch::Tensor h = ln1_->forward(x);
  auto split = [&](const torch::Tensor& y) { return y.view({b, t, heads_, dh}).transpose(1, 2); };  // [B,H,T,dh]
  const torch::Tensor q = split(apply("q", q_, h));
  torch::Tensor k = split(apply("k", k_, h));
  torch::Tensor v = split(apply("v", v_, h));
  int64_t past = 0;
  if (cache != nullptr) {
    // Written in place: growing by concatenation would copy the whole cache for every byte.
    if (!cache->k.defined()) {
      cache->k = torch::empty({b, heads_, context_, dh}, k.options());
      cache->v = torch::empty({b, heads_, context_, dh}, v.options());
    }
    past = cache->length;
    TORCH_CHECK(past + t <= context_, "ByteLm: decoding past the context of ", context_);
    cache->k.slice(2, past, past + t).copy_(k);
    cache->v.slice(2, past, past + t).copy_(v);
    cache->length = past + t;
    k = cache->k.slice(2, 0, past + t);
    v = cache->v.slice(2, 0, past + t);
  }
  torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(dh));
  // Query i (position past + i) sees keys 0..past + i.
  const torch::Tensor future =
      torch::ones({t, past + t}, torch::TensorOptions().dtype(torch::kBool).device(q.device())).triu(1 + past);
  scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
  const torch::Tensor attended = torch::matmul(torch::softmax(scores, -1), v).transpose(1, 2).reshape({b, t, d});
  torch::Tensor y = x + apply("out", out_, attended);
  const torch::Tensor hidden = torch::gelu(apply("fc1", fc1_, ln2_->forward(y)));
  return y + apply("fc2", fc2_, hidden);
}

std::vector<std::pair<std::string, torch::nn::Linear>> ByteLmBlockImpl::linears() const {
  return {{"q", q_}, {"k", k_}, {"v", v_}, {"out", out_}, {"fc1", fc1_}, {"fc2", fc2_}};
}

ByteLmImpl::ByteLmImpl(ByteLmOptions options) : options_(options) {
  TORCH_CHECK(check_byte_lm_options(options_).is_ok(), "ByteLm: ", check_byte_lm_options(options_).message());
  token_ = register_module("token", torch::nn::Embedding(options_.vocab, options_.d_model));
  position_ = register_module("position", torch::nn::Embedding(options_.context, options_.d_model));
  for (int64_t i = 0; i < options_.layers; ++i)
    blocks_.push_back(register_module("block" + std::to_string(i), ByteLmBlock(options_)));
  final_norm_ = register_module("final_norm", layer_norm(options_.d_model));
  head_ = register_module("head", linear(options_.d_model, options_.vocab));
}

torch::Tensor ByteLmImpl::embed(const torch::Tensor& bytes, int64_t offset) {
  TORCH_CHECK(bytes.dim() == 2 && offset >= 0 && offset + bytes.size(1) <= options_.context, "ByteLm: input of shape ",
              bytes.sizes(), " at position ", offset, ", expected [batch, T] with ", offset,
              " + T <= ", options_.context);
  const torch::Tensor positions =
      torch::arange(offset, offset + bytes.size(1), torch::TensorOptions().dtype(torch::kLong).device(bytes.device()));
  return token_->forward(bytes) + position_->forward(positions).unsqueeze(0);
}

torch::Tensor ByteLmImpl::logits(const torch::Tensor& hidden) {
  return head_->forward(final_norm_->forward(hidden));
}

torch::Tensor ByteLmImpl::forward(const torch::Tensor& bytes) {
  torch::Tensor x = embed(bytes);
  for (ByteLmBlock& block : blocks_)
    x = block->forward(x);
  return logits(x);
}

torch::Tensor ByteLmImpl::decode(const torch::Tensor& bytes, DecodeState& state) {
  torch::Tensor x = embed(bytes, state.length);
  state.blocks.resize(blocks_.size());
  for (size_t i = 0; i < blocks_.size(); ++i)
    x = blocks_[i]->forward(x, nullptr, &state.blocks[i]);
  state.length += bytes.size(1);
  return logits(x);
}

StatusOr<ByteLm> make_byte_lm(const ByteLmOptions& options, uint64_t seed) {
  CT_RETURN_IF_ERROR(check_byte_lm_options(options));
  ByteLm model(options);
  init_gpt2(*model, seed, "ByteLm");
  return model;
}

int64_t byte_lm_params(const ByteLmOptions& o) {
  const int64_t d = o.d_model;
  const int64_t block = 2 * (2 * d) + 4 * (d * d + d) + (d * o.d_ff + o.d_ff) + (o.d_ff * d + d);
  return o.vocab * d + o.context * d + o.layers * block + 2 * d + (d * o.vocab + o.vocab);
}

Status save_byte_lm(ByteLm& model, const std::string& meta_json, const std::string& path) {
  torch::serialize::OutputArchive archive;
  const std::vector<int64_t> values = option_values(model->options());
  archive.write("clustertwin_byte_lm_options", torch::tensor(values, torch::TensorOptions().dtype(torch::kLong)));
  archive.write("clustertwin_byte_lm_meta", c10::IValue(meta_json));
  model->save(archive);
  std::ostringstream bytes;
  try {
    archive.save_to(bytes);
  } catch (const c10::Error& e) {
    return Status::io_error(path + ": could not serialise the model: " + e.what_without_backtrace());
  }
  return write_file_atomically(path, bytes.str());
}

StatusOr<ByteLmCheckpoint> load_byte_lm(const std::string& path) {
  StatusOr<std::string> bytes = read_file(path);
  if (!bytes.is_ok()) return bytes.status();
  auto bad = [&](const std::string& why) {
    return Status::invalid_argument(path + ": not a clustertwin byte-LM checkpoint: " + why);
  };
  torch::serialize::InputArchive archive;
  try {
    std::istringstream in(*bytes);
    archive.load_from(in);
  } catch (const c10::Error&) {
    return bad("not a torch archive");
  }
  torch::Tensor values;
  c10::IValue meta;
  if (!archive.try_read("clustertwin_byte_lm_options", values) || values.dim() != 1 || values.size(0) != 6 ||
      values.scalar_type() != torch::kLong) {
    return bad("field 'clustertwin_byte_lm_options' missing or not 6 integers");
  }
  if (!archive.try_read("clustertwin_byte_lm_meta", meta) || !meta.isString()) {
    return bad("field 'clustertwin_byte_lm_meta' missing or not text");
  }
  ByteLmOptions o;
  int64_t* fields[] = {&o.vocab, &o.context, &o.d_model, &o.layers, &o.heads, &o.d_ff};
  for (int i = 0; i < 6; ++i)
    *fields[i] = values[i].item<int64_t>();
  if (Status s = check_byte_lm_options(o); !s.is_ok()) return bad("options: " + s.message());
  ByteLmCheckpoint checkpoint;
  checkpoint.model = ByteLm(o);
  checkpoint.meta_json = meta.toStringRef();
  try {
    checkpoint.model->load(archive);
  } catch (const c10::Error& e) {
    return bad(std::string("parameters: ") + e.what_without_backtrace());
  }
  return checkpoint;
}

}  // namespace clustertwin::models::nets
