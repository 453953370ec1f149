#include "real/nestpipe/batch_source.h"

#include <algorithm>
#include <cmath>

#include "models/nestpipe/criteo.h"

namespace clustertwin::real::nestpipe {

using clustertwin::models::nestpipe::Batch;
using clustertwin::models::nestpipe::CriteoReader;
using clustertwin::models::nestpipe::CriteoSample;
using clustertwin::models::nestpipe::KeyGenerator;
using clustertwin::models::nestpipe::SplitMix64;
namespace {

class SyntheticSource : public BatchSource {
 public:
  SyntheticSource(const SyntheticSourceOptions& options, KeyGenerator generator)
      : options_(options), generator_(std::move(generator)) {}

  StatusOr<HostBatch> next(int64_t index) override {
    HostBatch b;
    b.index = index;
    b.keys = generator_.batch(index, options_.rank, options_.samples);
    // A stream of its own per (seed, batch, rank), apart from the key slots'.
    SplitMix64 rng(mix64(mix64(options_.keys.seed ^ 0xD1B54A32D192ED03ull) ^ (static_cast<uint64_t>(index) << 24) ^
                         static_cast<uint64_t>(options_.rank)));
    b.dense.resize(static_cast<size_t>(options_.samples) * options_.dense_features);
    for (float& x : b.dense) {
      // Criteo's integer features are counts with a heavy tail; the model
      // sees log(1 + count), as with the real data.
      const double count = std::floor(-std::log(1.0 - rng.next_double()) * 8.0);
      x = static_cast<float>(std::log1p(count));
    }
    b.labels.resize(options_.samples);
    for (int j = 0; j < options_.samples; ++j) {
      const uint64_t h = b.keys[j].empty() ? 0 : mix64(static_cast<uint64_t>(b.keys[j][0]) ^ options_.keys.seed);
      const double p = (h & 3) == 0 ? 0.7 : 0.15;
      b.labels[j] = rng.next_double() < p ? 1.f : 0.f;
    }
    return b;
  }

  Status skip_to(int64_t) override { return Status::ok(); }

  StatusOr<std::vector<Batch>> step_keys(int64_t index) override {
    std::vector<Batch> out;
    for (int r = 0; r < options_.world; ++r)
      out.push_back(generator_.batch(index, r, options_.samples));
    return out;
  }

 private:
  SyntheticSourceOptions options_;
  KeyGenerator generator_;
};

class CriteoSource : public BatchSource {
 public:
  CriteoSource(const CriteoSourceOptions& options, std::unique_ptr<CriteoReader> reader,
               std::vector<std::vector<Batch>> first_steps)
      : options_(options), reader_(std::move(reader)), first_steps_(std::move(first_steps)) {}

  StatusOr<HostBatch> next(int64_t index) override {
    if (index != next_index_) {
      return Status::internal("criteo source: batch " + std::to_string(index) + " asked, " +
                              std::to_string(next_index_) + " expected");
    }
    ++next_index_;
    HostBatch b;
    b.index = index;
    const int64_t lines = static_cast<int64_t>(options_.world) * options_.samples;
    CriteoSample s;
    for (int64_t i = 0; i < lines; ++i) {
      if (!reader_->next(&s)) {
        if (!reader_->status().is_ok()) return reader_->status();
        return Status::invalid_argument(options_.path + ": ends at line " + std::to_string(reader_->line_number()) +
                                        " in batch " + std::to_string(index));
      }
      if (i % options_.world != options_.rank) continue;
      b.keys.push_back(criteo_keys(s, options_.vocabulary));
      for (const auto& x : s.dense)
        b.dense.push_back(std::log1p(static_cast<float>(std::max<int64_t>(x.value_or(0), 0))));
      b.labels.push_back(static_cast<float>(s.label));
    }
    return b;
  }

  Status skip_to(int64_t index) override {
    while (next_index_ < index) {
      auto skipped = next(next_index_);
      if (!skipped.is_ok()) return skipped.status();
    }
    return Status::ok();
  }

  StatusOr<std::vector<Batch>> step_keys(int64_t index) override {
    if (index < 0 || index >= static_cast<int64_t>(first_steps_.size())) return std::vector<Batch>{};
    return first_steps_[index];
  }

 private:
  CriteoSourceOptions options_;
  std::unique_ptr<CriteoReader> reader_;
  std::vector<std::vector<Batch>> first_steps_;
  int64_t next_index_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<BatchSource>> synthetic_source(const SyntheticSourceOptions& options) {
  auto generator = KeyGenerator::create(options.keys);
  if (!generator.is_ok()) return generator.status();
  return std::unique_ptr<BatchSource>(new SyntheticSource(options, std::move(*generator)));
}

StatusOr<std::unique_ptr<BatchSource>> criteo_source(const CriteoSourceOptions& options) {
  // The check pass: parse every line the run will read, keep the keys of
  // the first two steps of every rank (the plan's sizes come from them).
  auto scan = CriteoReader::open(options.path);
  if (!scan.is_ok()) return scan.status();
  const int64_t per_step = static_cast<int64_t>(options.world) * options.samples;
  const int64_t needed = per_step * options.batches;
  std::vector<std::vector<Batch>> first_steps;
  CriteoSample s;
  for (int64_t i = 0; i < needed; ++i) {
    if (!(*scan)->next(&s)) {
      if (!(*scan)->status().is_ok()) return (*scan)->status();
      return Status::invalid_argument(options.path + ": " + std::to_string(i) + " lines, the run needs " +
                                      std::to_string(needed) + " (world " + std::to_string(options.world) +
                                      " x samples " + std::to_string(options.samples) + " x batches " +
                                      std::to_string(options.batches) + ")");
    }
    const int64_t step = i / per_step;
    if (step >= 2) continue;
    if (static_cast<int64_t>(first_steps.size()) <= step) first_steps.emplace_back(options.world);
    first_steps[step][(i % per_step) % options.world].push_back(criteo_keys(s, options.vocabulary));
  }
  auto reader = CriteoReader::open(options.path);
  if (!reader.is_ok()) return reader.status();
  return std::unique_ptr<BatchSource>(new CriteoSource(options, std::move(*reader), std::move(first_steps)));
}

}  // namespace clustertwin::real::nestpipe
