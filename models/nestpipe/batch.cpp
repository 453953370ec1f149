#include "models/nestpipe/batch.h"

#include "common/check.h"

namespace clustertwin::models::nestpipe {

std::vector<int> micro_batch_sizes(int samples, int micro_batches) {
  CT_CHECK(1 <= micro_batches && micro_batches <= samples) << micro_batches << " micro-batches of " << samples;
  std::vector<int> sizes(static_cast<size_t>(micro_batches), samples / micro_batches);
  for (int m = 0; m < samples % micro_batches; ++m)
    ++sizes[static_cast<size_t>(m)];
  return sizes;
}

}  // namespace clustertwin::models::nestpipe
