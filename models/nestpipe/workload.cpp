#include "models/nestpipe/workload.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace clustertwin::models::nestpipe {
namespace {

double mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

int64_t bytes(double value) {
  return static_cast<int64_t>(std::llround(value));
}

}  // namespace

StatusOr<StepSizes> step_sizes(const Workload& w, const KeyStatsSummary& k) {
  if (w.spec == nullptr) return Status::invalid_argument("nestpipe workload: no model spec");
  CT_RETURN_IF_ERROR(w.spec->validate());
  if (w.batch_per_worker < 1) {
    return Status::invalid_argument("nestpipe workload: batch " + std::to_string(w.batch_per_worker) +
                                    ": must be at least 1");
  }
  if (w.micro_batches < 1 || w.batch_per_worker % w.micro_batches != 0) {
    return Status::invalid_argument("nestpipe workload: micro-batches " + std::to_string(w.micro_batches) +
                                    ": must divide the batch of " + std::to_string(w.batch_per_worker));
  }
  if (k.workers < 1 || static_cast<int>(k.unique_per_owner.size()) != k.workers) {
    return Status::invalid_argument("nestpipe workload: key statistics for " + std::to_string(k.workers) +
                                    " workers hold " + std::to_string(k.unique_per_owner.size()) + " owners");
  }
  if (k.micro_batches != w.micro_batches) {
    return Status::invalid_argument("nestpipe workload: key statistics are for " + std::to_string(k.micro_batches) +
                                    " micro-batches, the workload has " + std::to_string(w.micro_batches));
  }
  const spec::RecommenderSpec& s = *w.spec;
  const double batch = w.batch_per_worker;
  const int64_t row_bytes = static_cast<int64_t>(s.embedding_dim) * w.element_bytes;

  StepSizes out;
  out.input_bytes = bytes(batch * (s.dense_features * 4.0 + s.embedding_lookups_per_sample() * 8.0));
  out.key_bytes = bytes(k.unique_per_worker * 8.0);
  out.owner_rows_dedup = bytes(mean(k.unique_per_owner));
  out.owner_rows_per_requester = bytes(k.workers * mean(k.unique_per_pair));
  out.row_bytes = row_bytes;
  out.emb_a2a_bytes = bytes(k.unique_per_worker * static_cast<double>(row_bytes));
  out.micro_emb_a2a_bytes = bytes(k.micro_batch_unique * w.micro_batches * static_cast<double>(row_bytes));
  out.clustered_micro_emb_a2a_bytes =
      bytes(k.clustered_micro_batch_unique * w.micro_batches * static_cast<double>(row_bytes));
  out.patch_rows = bytes(mean(k.patch_per_owner));
  out.dense_forward_flops = s.forward_flops_per_sample() * batch;
  out.dense_param_bytes = bytes(s.dense_params() * w.element_bytes);
  out.sharding_group = w.sharding_group;
  out.lookup_requests = w.sharding_group > 0 ? std::min(w.sharding_group, k.workers) : k.workers;
  return out;
}

}  // namespace clustertwin::models::nestpipe
