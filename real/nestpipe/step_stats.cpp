#include "real/nestpipe/step_stats.h"

#include <string>

#include "models/nestpipe/clustering.h"

namespace clustertwin::nestpipe {

StatusOr<KeyStatsSummary> measured_key_stats(const std::vector<Batch>& first, const std::vector<Batch>& second,
                                             int micro_batches) {
  const int workers = static_cast<int>(first.size());
  if (workers < 1) return Status::invalid_argument("key statistics: no batches");
  if (!second.empty() && static_cast<int>(second.size()) != workers) {
    return Status::invalid_argument("key statistics: " + std::to_string(workers) + " and " +
                                    std::to_string(second.size()) + " workers in consecutive steps");
  }
  const int samples = static_cast<int>(first[0].size());
  if (micro_batches < 1 || samples % micro_batches != 0) {
    return Status::invalid_argument("key statistics: " + std::to_string(micro_batches) +
                                    " micro-batches do not divide a batch of " + std::to_string(samples));
  }
  const StepKeyStats step = step_key_stats(first);
  KeyStatsSummary k;
  k.workers = workers;
  k.batch_per_worker = samples;
  k.micro_batches = micro_batches;
  k.sampled_workers = workers;
  k.unique_per_pair.assign(workers, 0.0);
  k.micro_unique_per_pair.assign(workers, 0.0);
  k.patch_per_owner.assign(workers, 0.0);
  double micro_unique = 0, clustered_unique = 0;
  for (int r = 0; r < workers; ++r) {
    const RequesterKeyStats& req = step.requesters[r];
    k.keys_per_worker += static_cast<double>(req.keys_total) / workers;
    k.unique_per_worker += static_cast<double>(req.unique_keys) / workers;
    for (int o = 0; o < workers; ++o)
      k.unique_per_pair[o] += static_cast<double>(step.pair_unique(r, o)) / workers;
    const MicroBatchKeyStats identity = micro_batch_key_stats(first[r], {}, micro_batches, workers);
    micro_unique += static_cast<double>(identity.total_unique());
    for (int m = 0; m < micro_batches; ++m) {
      for (int o = 0; o < workers; ++o)
        k.micro_unique_per_pair[o] +=
            static_cast<double>(identity.unique_per_owner[m * workers + o]) / (workers * micro_batches);
    }
    auto clustering = cluster_samples(first[r], micro_batches);
    if (!clustering.is_ok()) return clustering.status();
    clustered_unique += static_cast<double>(clustering->total_unique);
  }
  k.sampled_unique_per_worker = k.unique_per_worker;
  k.micro_batch_unique = micro_unique / (workers * micro_batches);
  k.clustered_micro_batch_unique = clustered_unique / (workers * micro_batches);
  for (int o = 0; o < workers; ++o)
    k.unique_per_owner.push_back(static_cast<double>(step.unique_per_owner[o]));
  if (!second.empty()) {
    const std::vector<int64_t> patch = patch_sizes(step, step_key_stats(second));
    for (int o = 0; o < workers; ++o)
      k.patch_per_owner[o] = static_cast<double>(patch[o]);
  }
  return k;
}

}  // namespace clustertwin::nestpipe
