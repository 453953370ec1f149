#include "real/nestpipe/embedding_store.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/hash.h"
#include "common/parallel.h"

namespace clustertwin::real::nestpipe {
namespace {

std::string shape_of(const at::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

// Rows of `world` ranks, dealt round-robin: rank r holds keys r, r + W, ...
int64_t local_row_count(int64_t rows, int rank, int world) {
  return rows > rank ? (rows - rank + world - 1) / world : 0;
}

}  // namespace

StatusOr<EmbeddingStore> EmbeddingStore::create(const EmbeddingStoreOptions& o) {
  std::ostringstream bad;
  if (o.rows < 1)
    bad << "rows " << o.rows << " must be >= 1";
  else if (o.dim < 1)
    bad << "dim " << o.dim << " must be >= 1";
  else if (o.world < 1)
    bad << "world " << o.world << " must be >= 1";
  else if (o.rank < 0 || o.rank >= o.world)
    bad << "rank " << o.rank << " must be in [0, " << o.world << ")";
  else if (!(o.optimizer.lr > 0.f))
    bad << "lr " << o.optimizer.lr << " must be > 0";
  else if (!(o.optimizer.eps >= 0.f))
    bad << "eps " << o.optimizer.eps << " must be >= 0";
  else if (!(o.optimizer.initial_accumulator >= 0.f))
    bad << "initial_accumulator " << o.optimizer.initial_accumulator << " must be >= 0";
  if (!bad.str().empty()) return Status::invalid_argument("embedding store: " + bad.str());
  return EmbeddingStore(o);
}

float EmbeddingStore::initial_value(uint64_t seed, int64_t key, int64_t j, int64_t dim) {
  const uint64_t row = splitmix64(splitmix64(seed) ^ static_cast<uint64_t>(key));
  const uint64_t h = splitmix64(row + static_cast<uint64_t>(j));
  // 24 random bits: u is exact in a float, so 2u - 1 in [-1, 1) is too.
  const float u = static_cast<float>(h >> 40) * 0x1.0p-24f;
  const float bound = 1.f / std::sqrt(static_cast<float>(dim));
  return (2.f * u - 1.f) * bound;
}

EmbeddingStore::EmbeddingStore(const EmbeddingStoreOptions& options) : options_(options) {
  const int64_t n = local_row_count(options.rows, options.rank, options.world);
  const bool pinned = options.pinned && options.device.is_cpu();
  weights_ = at::empty({n, options.dim}, at::TensorOptions().dtype(at::kFloat).pinned_memory(pinned));
  float* w = weights_.data_ptr<float>();
  // Tables of several GB take seconds to fill on one core: blocks of rows in
  // parallel (each value depends on its key and column only).
  constexpr int64_t kBlock = 1 << 14;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  const int threads = blocks > 4 ? static_cast<int>(std::max(1u, std::thread::hardware_concurrency())) : 1;
  parallel_for(static_cast<size_t>(blocks), threads, [&](size_t block) {
    const int64_t end = std::min(n, (static_cast<int64_t>(block) + 1) * kBlock);
    for (int64_t i = static_cast<int64_t>(block) * kBlock; i < end; ++i) {
      const int64_t key = i * options.world + options.rank;
      for (int64_t j = 0; j < options.dim; ++j)
        w[i * options.dim + j] = initial_value(options.seed, key, j, options.dim);
    }
  });
  const bool adagrad = options.optimizer.kind == EmbeddingOptimizer::Kind::kRowWiseAdagrad;
  accumulators_ = at::full({n}, adagrad ? options.optimizer.initial_accumulator : 0.f, at::kFloat);
  if (!options.device.is_cpu()) {
    weights_ = weights_.to(options.device);
    accumulators_ = accumulators_.to(options.device);
  }
  versions_ = at::zeros({n}, at::kLong);
}

EmbeddingStore EmbeddingStore::clone() const {
  EmbeddingStore copy;
  copy.options_ = options_;
  copy.weights_ = weights_.clone();
  copy.accumulators_ = accumulators_.clone();
  copy.versions_ = versions_.clone();
  return copy;
}

Status EmbeddingStore::restore(const at::Tensor& weights, const at::Tensor& accumulators, const at::Tensor& versions) {
  const std::pair<const char*, std::pair<const at::Tensor*, const at::Tensor*>> parts[] = {
      {"weights", {&weights, &weights_}},
      {"accumulators", {&accumulators, &accumulators_}},
      {"versions", {&versions, &versions_}}};
  for (const auto& [name, tensors] : parts) {
    const at::Tensor& given = *tensors.first;
    const at::Tensor& mine = *tensors.second;
    if (!given.defined() || given.sizes() != mine.sizes() || given.scalar_type() != mine.scalar_type()) {
      std::ostringstream s;
      s << name << ": " << (given.defined() ? given.sizes() : at::IntArrayRef{}) << ", the " << describe() << " has "
        << mine.sizes() << " " << mine.scalar_type();
      return Status::invalid_argument(s.str());
    }
  }
  weights_.copy_(weights);
  accumulators_.copy_(accumulators);
  versions_.copy_(versions);
  return Status::ok();
}

std::string EmbeddingStore::describe() const {
  std::ostringstream s;
  s << "embedding store (rank " << options_.rank << " of world " << options_.world << ", " << options_.rows << " rows)";
  return s.str();
}

StatusOr<at::Tensor> EmbeddingStore::local_indices(const at::Tensor& keys, const char* what) const {
  if (keys.scalar_type() != at::kLong || keys.dim() != 1) {
    std::ostringstream s;
    s << describe() << ": " << what << " must be a 1-D int64 tensor, got " << keys.scalar_type() << " of shape "
      << shape_of(keys);
    return Status::invalid_argument(s.str());
  }
  at::Tensor k = keys.to(at::kCPU).contiguous();
  at::Tensor local = at::empty_like(k);
  const int64_t* kp = k.data_ptr<int64_t>();
  int64_t* lp = local.data_ptr<int64_t>();
  for (int64_t i = 0; i < k.numel(); ++i) {
    const int64_t key = kp[i];
    if (key < 0 || key >= options_.rows) {
      std::ostringstream s;
      s << describe() << ": " << what << "[" << i << "] = key " << key << " is out of range [0, " << options_.rows
        << ")";
      return Status::invalid_argument(s.str());
    }
    if (key % options_.world != options_.rank) {
      std::ostringstream s;
      s << describe() << ": " << what << "[" << i << "] = key " << key << " is owned by rank " << key % options_.world
        << " (key mod " << options_.world << "), not rank " << options_.rank;
      return Status::invalid_argument(s.str());
    }
    lp[i] = key / options_.world;
  }
  return local;
}

StatusOr<at::Tensor> EmbeddingStore::gather(const at::Tensor& keys) const {
  auto local = local_indices(keys, "keys");
  if (!local.is_ok()) return local.status();
  return weights_.index_select(0, local->to(weights_.device()));
}

StatusOr<at::Tensor> EmbeddingStore::versions(const at::Tensor& keys) const {
  auto local = local_indices(keys, "keys");
  if (!local.is_ok()) return local.status();
  return versions_.index_select(0, *local);
}

// The optimizers, per distinct row r with summed gradient g (dim D):
//   SGD:               w_r -= lr * g
//   row-wise Adagrad:  a_r += sum_j g_j^2 / D
//                      w_r -= (lr / (sqrt(a_r) + eps)) * g
// The row-wise rule is FBGEMM's `rowwise_adagrad` template
// (fbgemm_gpu/codegen/genscript/optimizers.py), which TorchRec runs for
// EmbOptimType.ROWWISE_ADAGRAD: one accumulator
// per row holding the running sum of the row's mean squared gradient, and the
// multiplier lr / (sqrt(a) + eps) computed first, then applied to g.
Status EmbeddingStore::apply_gradients(const at::Tensor& keys, const at::Tensor& grads) {
  auto local = local_indices(keys, "keys");
  if (!local.is_ok()) return local.status();
  const int64_t n = local->numel();
  const int64_t dim = options_.dim;
  if (grads.dim() != 2 || grads.size(0) != n || grads.size(1) != dim) {
    std::ostringstream s;
    s << describe() << ": grads has shape " << shape_of(grads) << ", expected [" << n << ", " << dim << "] (keys has "
      << n << " elements, dim " << dim << ")";
    return Status::invalid_argument(s.str());
  }
  if (grads.scalar_type() != at::kFloat) {
    std::ostringstream s;
    s << describe() << ": grads must be float32, got " << grads.scalar_type();
    return Status::invalid_argument(s.str());
  }
  if (weights_.is_cpu() && !options_.whole_tensor_update) {
    apply_on_host(*local, grads);
  } else {
    apply_on_device(*local, grads);
  }
  return Status::ok();
}

void EmbeddingStore::apply_on_host(const at::Tensor& local, const at::Tensor& grads) {
  const int64_t n = local.numel();
  const int64_t dim = options_.dim;
  at::Tensor g = grads.to(at::kCPU).contiguous();
  const float* gp = g.data_ptr<float>();
  const int64_t* lp = local.data_ptr<int64_t>();

  // Sum repeated keys first, in the order they appear (the order fixes the
  // float rounding, so equal inputs give bitwise equal rows).
  std::unordered_map<int64_t, int64_t> slot_of;
  std::vector<int64_t> rows;
  std::vector<float> sums;
  for (int64_t i = 0; i < n; ++i) {
    auto [it, inserted] = slot_of.emplace(lp[i], static_cast<int64_t>(rows.size()));
    if (inserted) {
      rows.push_back(lp[i]);
      sums.resize(sums.size() + dim, 0.f);
    }
    float* dst = sums.data() + it->second * dim;
    for (int64_t j = 0; j < dim; ++j)
      dst[j] += gp[i * dim + j];
  }

  float* w = weights_.data_ptr<float>();
  float* acc = accumulators_.data_ptr<float>();
  int64_t* ver = versions_.data_ptr<int64_t>();
  const EmbeddingOptimizer& opt = options_.optimizer;
  for (size_t s = 0; s < rows.size(); ++s) {
    const int64_t r = rows[s];
    const float* sg = sums.data() + s * dim;
    float* row = w + r * dim;
    float multiplier = opt.lr;
    if (opt.kind == EmbeddingOptimizer::Kind::kRowWiseAdagrad) {
      float square_sum = 0.f;
      for (int64_t j = 0; j < dim; ++j)
        square_sum += sg[j] * sg[j];
      acc[r] += square_sum / static_cast<float>(dim);
      multiplier = opt.lr / (std::sqrt(acc[r]) + opt.eps);
    }
    for (int64_t j = 0; j < dim; ++j)
      row[j] -= multiplier * sg[j];
    ++ver[r];
  }
}

// The same optimizer steps as apply_on_host, as whole-tensor operations on
// the store's device: one index_add for the sums, then each distinct row once.
void EmbeddingStore::apply_on_device(const at::Tensor& local, const at::Tensor& grads) {
  const at::Device device = weights_.device();
  const auto [rows, inverse] = at::_unique(local, /*sorted=*/true, /*return_inverse=*/true);
  at::Tensor sums = at::zeros({rows.numel(), options_.dim}, weights_.options());
  sums.index_add_(0, inverse.to(device), grads.to(device));
  const at::Tensor rows_on_device = rows.to(device);
  const EmbeddingOptimizer& opt = options_.optimizer;
  at::Tensor multiplier;
  if (opt.kind == EmbeddingOptimizer::Kind::kRowWiseAdagrad) {
    at::Tensor acc =
        accumulators_.index_select(0, rows_on_device) + sums.square().sum(1) / static_cast<double>(options_.dim);
    accumulators_.index_copy_(0, rows_on_device, acc);
    multiplier = (opt.lr / (acc.sqrt() + opt.eps)).unsqueeze(1);
  } else {
    multiplier = at::full({1, 1}, opt.lr, weights_.options());
  }
  weights_.index_copy_(0, rows_on_device, weights_.index_select(0, rows_on_device) - multiplier * sums);
  versions_.index_add_(0, rows, at::ones_like(rows));
}

bool EmbeddingStore::equal(const EmbeddingStore& other) const {
  const auto& a = options_;
  const auto& b = other.options_;
  if (a.rows != b.rows || a.dim != b.dim || a.rank != b.rank || a.world != b.world) return false;
  // Compare bit patterns, not float values: -0 == +0 and NaN != NaN would lie.
  return at::equal(weights_.view(at::kInt), other.weights_.view(at::kInt)) &&
         at::equal(accumulators_.view(at::kInt), other.accumulators_.view(at::kInt)) &&
         at::equal(versions_, other.versions_);
}

}  // namespace clustertwin::real::nestpipe
