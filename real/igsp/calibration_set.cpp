#include "real/igsp/calibration_set.h"

#include <ATen/CPUGeneratorImpl.h>

#include <random>

#include "common/hash.h"
#include "real/igsp/model_pruner.h"

namespace clustertwin::real::igsp {
namespace {

using clustertwin::models::igsp::AggregationSign;
using clustertwin::models::igsp::Domain;
using clustertwin::models::igsp::DomainText;

std::vector<std::string> split_domains(const std::string& name) {
  std::vector<std::string> out(1);
  for (char c : name) {
    if (c == '+' || c == ',')
      out.emplace_back();
    else
      out.back().push_back(c);
  }
  return out;
}

// Windows of training text: each window's domain drawn uniformly among `domains`.
StatusOr<at::Tensor> source_windows(const std::vector<DomainText>& corpus, const std::string& name, int64_t samples,
                                    int64_t length, uint64_t seed) {
  std::vector<const std::string*> texts;
  for (const std::string& domain : split_domains(name)) {
    if (domain.empty())
      return Status::invalid_argument("calib '" + name + "': an empty calibration source name in the list");
    const std::string* found = nullptr;
    for (const auto& d : corpus) {
      if (domain == clustertwin::models::igsp::domain_name(d.domain)) found = &d.train;
    }
    if (found == nullptr) {
      return Status::invalid_argument("calib '" + domain +
                                      "': unknown calibration source (allowed: general, code, math, commonsense, "
                                      "several joined by + or , for their uniform mix, mix, random, selfcal, sgs, "
                                      "igsp, igsp-repeated, igsp-unique)");
    }
    if (found->size() < static_cast<size_t>(length)) {
      return Status::invalid_argument("calib '" + domain + "': an empty calibration source (" +
                                      std::to_string(found->size()) + " bytes, a sample needs " +
                                      std::to_string(length) + ")");
    }
    texts.push_back(found);
  }
  std::mt19937_64 engine(splitmix64(seed ^ 0x63616c69));
  at::Tensor out = at::empty({samples, length}, at::TensorOptions().dtype(at::kLong));
  auto* data = out.data_ptr<int64_t>();
  for (int64_t s = 0; s < samples; ++s) {
    const std::string& text = *texts[engine() % texts.size()];
    const uint64_t start = engine() % (text.size() - static_cast<uint64_t>(length) + 1);
    for (int64_t t = 0; t < length; ++t)
      data[s * length + t] = static_cast<unsigned char>(text[start + static_cast<uint64_t>(t)]);
  }
  return out;
}

}  // namespace

std::vector<std::string> study_source_names() {
  std::vector<std::string> out;
  const int n = static_cast<int>(std::size(clustertwin::models::igsp::kDomains));
  for (int size = 1; size <= n; ++size) {
    for (int mask = 1; mask < (1 << n); ++mask) {
      if (__builtin_popcount(static_cast<unsigned>(mask)) != size) continue;
      std::string name;
      for (int d = 0; d < n; ++d) {
        if ((mask & (1 << d)) == 0) continue;
        if (!name.empty()) name += "+";
        name += clustertwin::models::igsp::domain_name(clustertwin::models::igsp::kDomains[d]);
      }
      out.push_back(name);
    }
  }
  return out;
}

std::vector<std::string> generated_set_names() {
  return {"mix", "random", "selfcal", "sgs", "igsp", "igsp-repeated", "igsp-unique"};
}

StatusOr<IgspPool> igsp_pool(models::nets::ByteLm& model, const SelfGenOptions& generation, int pool_factor) {
  if (pool_factor < 1)
    return Status::invalid_argument("igsp: pool factor " + std::to_string(pool_factor) + " must be >= 1");
  SelfGenOptions options = generation;
  options.samples = generation.samples * pool_factor;
  auto candidates = self_cal(model, options);
  if (!candidates.is_ok()) return candidates.status();
  IgspPool pool;
  pool.candidates = *candidates;
  pool.perplexities = sample_perplexities(model, pool.candidates);
  return pool;
}

StatusOr<at::Tensor> igsp_select(const IgspPool& pool, int64_t samples, int strata, AggregationSign sign) {
  auto chosen = clustertwin::models::igsp::select_min_aggregation(sample_texts(pool.candidates), pool.perplexities,
                                                                  static_cast<size_t>(samples), strata, sign);
  if (!chosen.is_ok()) return chosen.status();
  std::vector<int64_t> rows(chosen->begin(), chosen->end());
  return pool.candidates.index_select(0, at::tensor(rows, at::TensorOptions().dtype(at::kLong)));
}

StatusOr<at::Tensor> igsp_set(models::nets::ByteLm& model, const SelfGenOptions& generation, int pool_factor,
                              int strata, AggregationSign sign) {
  auto pool = igsp_pool(model, generation, pool_factor);
  if (!pool.is_ok()) return pool.status();
  return igsp_select(*pool, generation.samples, strata, sign);
}

StatusOr<std::shared_ptr<const IgspPool>> IgspPoolCache::get(models::nets::ByteLm& model,
                                                             const SelfGenOptions& generation, int pool_factor) {
  const Key key{generation.seed,  generation.samples, generation.length, generation.t_start,
                generation.t_end, generation.ramp,    pool_factor};
  std::promise<StatusOr<std::shared_ptr<const IgspPool>>> promise;
  Entry entry;
  bool make = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pools_.find(key);
    if (it == pools_.end()) {
      it = pools_.emplace(key, promise.get_future().share()).first;
      make = true;
    }
    entry = it->second;
  }
  if (make) {
    // Made outside the lock: other pools go on being made, and asked for, meanwhile.
    try {
      auto pool = igsp_pool(model, generation, pool_factor);
      if (pool.is_ok())
        promise.set_value(std::shared_ptr<const IgspPool>(std::make_shared<IgspPool>(std::move(*pool))));
      else
        promise.set_value(pool.status());
    } catch (...) {
      promise.set_exception(std::current_exception());
    }
  }
  return entry.get();
}

size_t IgspPoolCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pools_.size();
}

StatusOr<CalibrationSet> make_calibration_set(const std::string& name, models::nets::ByteLm& model,
                                              const std::vector<DomainText>& corpus, const CalibrationSetOptions& o,
                                              IgspPoolCache* igsp_pools) {
  if (o.samples < 1) return Status::invalid_argument("samples " + std::to_string(o.samples) + ": must be >= 1");
  if (o.length < 2 || o.length > model->options().context) {
    return Status::invalid_argument("calibration sample length " + std::to_string(o.length) + ": must be in [2, " +
                                    std::to_string(model->options().context) + "] (the model's context)");
  }
  if (name.empty()) return Status::invalid_argument("calib: an empty calibration source name");
  SelfGenOptions g;
  g.samples = o.samples;
  g.length = o.length;
  g.seed = o.seed;
  CalibrationSet set;
  set.name = name;
  StatusOr<at::Tensor> bytes = Status::internal("no calibration set");
  if (name == "random") {
    set.kind = "control";
    at::Generator generator = at::detail::createCPUGenerator(splitmix64(o.seed ^ 0x72616e64));
    bytes = at::randint(0, 256, {o.samples, o.length}, generator, at::TensorOptions().dtype(at::kLong));
  } else if (name == "selfcal") {
    set.kind = "self-generated";
    bytes = self_cal(model, g);
  } else if (name == "sgs") {
    set.kind = "self-generated";
    std::vector<const std::string*> sources;
    for (const auto& d : corpus)
      sources.push_back(&d.train);
    bytes = sgs(model, sources, g);
  } else if (name == "igsp" || name == "igsp-repeated" || name == "igsp-unique") {
    set.kind = "self-generated";
    const AggregationSign sign = name == "igsp-unique" ? AggregationSign::kUnique : AggregationSign::kRepeated;
    if (igsp_pools == nullptr) {
      bytes = igsp_set(model, g, o.igsp_pool_factor, o.igsp_strata, sign);
    } else {
      auto pool = igsp_pools->get(model, g, o.igsp_pool_factor);
      if (pool.is_ok())
        bytes = igsp_select(**pool, g.samples, o.igsp_strata, sign);
      else
        bytes = pool.status();
    }
  } else {
    set.kind = "source";
    bytes = source_windows(corpus, name == "mix" ? "general+code+math+commonsense" : name, o.samples, o.length, o.seed);
  }
  if (!bytes.is_ok()) return bytes.status();
  set.bytes = *bytes;
  return set;
}

std::vector<std::string> sample_texts(const at::Tensor& bytes) {
  const at::Tensor b = bytes.to(at::kLong).contiguous();
  const int64_t rows = b.size(0), length = b.size(1);
  const int64_t* data = b.data_ptr<int64_t>();
  std::vector<std::string> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    out[static_cast<size_t>(r)].reserve(static_cast<size_t>(length));
    for (int64_t t = 0; t < length; ++t)
      out[static_cast<size_t>(r)].push_back(static_cast<char>(data[r * length + t]));
  }
  return out;
}

}  // namespace clustertwin::real::igsp
