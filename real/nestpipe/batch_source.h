#pragma once

// Where NestPipe's real executor gets its batches: synthetic Zipf keys
// (models/nestpipe/key_generator.h) or a Criteo click log. No torch here:
// the h2d task turns a HostBatch into tensors.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/nestpipe/key_generator.h"
#include "models/nestpipe/key_stats.h"

namespace clustertwin::real::nestpipe {

using clustertwin::models::nestpipe::Batch;
using clustertwin::models::nestpipe::KeyGeneratorOptions;

/// One rank's batch in host memory.
struct HostBatch {
  int64_t index = 0;
  Batch keys;                 // [sample][feature]: keys into one shared table
  std::vector<float> dense;   // [sample * dense_features + i]
  std::vector<float> labels;  // [sample]: 0 or 1
};

/// The batches of one rank, batch 0, 1, 2, ... in order.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  /// This rank's batch `index`. Indices come in increasing order, one call
  /// each (a file is read once, front to back).
  virtual StatusOr<HostBatch> next(int64_t index) = 0;
  /// Makes `index` the next batch (a resumed run starts there); forward only.
  /// Synthetic batches are computed from their index, so nothing moves;
  /// a file is read past the batches before it.
  virtual Status skip_to(int64_t index) = 0;
  /// The keys of batch `index` of every rank ([rank]), for the plan's sizes;
  /// only the first two batches are asked for.
  virtual StatusOr<std::vector<Batch>> step_keys(int64_t index) = 0;
};

struct SyntheticSourceOptions {
  KeyGeneratorOptions keys;  // keys_per_sample: the model's lookups per sample
  int dense_features = 0;
  int samples = 0;  // per rank and batch
  int rank = 0;
  int world = 1;
};

/// Keys from KeyGenerator (seed, batch index, rank); dense features
/// log(1 + x) of geometric counts x and labels from a SplitMix64 stream of
/// (seed, batch, rank), with the click probability depending on the first
/// key so that there is something to learn. InvalidArgument naming the bad
/// generator field.
StatusOr<std::unique_ptr<BatchSource>> synthetic_source(const SyntheticSourceOptions& options);

struct CriteoSourceOptions {
  std::string path;
  int64_t vocabulary = 0;  // rows of the shared table: keys are criteo_key(column, value, vocabulary)
  int samples = 0;         // per rank and batch
  int rank = 0;
  int world = 1;
  int64_t batches = 0;  // the run's batches: their lines are checked up front
};

/// Criteo lines as batches: batch b of rank r holds lines b*W*S + r,
/// b*W*S + r + W, ... (1-based line numbers plus one), S = samples. Dense
/// features are log(1 + max(x, 0)), a missing value 0; keys criteo_keys().
/// Reads every line the run will use once up front (in constant memory),
/// so a malformed line or a short file is an error before any rank starts
/// training: NotFound naming the path, InvalidArgument "FILE:LINE: field
/// ..." (parse_criteo_line), or InvalidArgument "--criteo FILE: N lines,
/// the run needs M (WORLD_SIZE W x --batch S x --steps B)".
StatusOr<std::unique_ptr<BatchSource>> criteo_source(const CriteoSourceOptions& options);

}  // namespace clustertwin::real::nestpipe
