#include "models/flowtrain/dispatch.h"

#include "common/check.h"

namespace clustertwin::models::flowtrain {

MicroBatchDispatch::MicroBatchDispatch(Policy policy, int micro_batches, int replicas)
    : policy_(policy), replicas_(replicas), taken_(static_cast<size_t>(micro_batches), false) {
  CT_CHECK(micro_batches >= 1 && replicas >= 1) << micro_batches << " micro-batches, " << replicas << " replicas";
  for (int r = 0; r < replicas; ++r)
    next_of_.push_back(r);
}

int MicroBatchDispatch::take(int replica, const std::function<bool(int)>& ready) {
  CT_CHECK(replica >= 0 && replica < replicas_) << "replica " << replica << " of " << replicas_;
  const int count = static_cast<int>(taken_.size());
  if (policy_ == Policy::kRoundRobin) {
    int& next = next_of_[static_cast<size_t>(replica)];
    if (next >= count) return kDone;
    const int b = next;
    next += replicas_;
    taken_[static_cast<size_t>(b)] = true;
    return b;
  }
  bool any_left = false;
  for (int b = 0; b < count; ++b) {
    if (taken_[static_cast<size_t>(b)]) continue;
    any_left = true;
    if (ready(b)) {
      taken_[static_cast<size_t>(b)] = true;
      return b;
    }
  }
  return any_left ? kWait : kDone;
}

int MicroBatchDispatch::ready_untaken(const std::function<bool(int)>& ready) const {
  int n = 0;
  for (size_t b = 0; b < taken_.size(); ++b) {
    if (!taken_[b] && ready(static_cast<int>(b))) ++n;
  }
  return n;
}

EncoderDispatch::EncoderDispatch(Policy policy, std::vector<int> order, int encoders)
    : policy_(policy), order_(std::move(order)), encoders_(encoders), left_(static_cast<int>(order_.size())) {
  CT_CHECK(encoders >= 1) << encoders << " encoders";
  if (policy == Policy::kRoundRobin) {
    for (int e = 0; e < encoders; ++e)
      next_of_.push_back(static_cast<size_t>(e));
  } else {
    next_of_.push_back(0);
  }
}

int EncoderDispatch::peek(int encoder) const {
  CT_CHECK(encoder >= 0 && encoder < encoders_) << "encoder " << encoder << " of " << encoders_;
  const size_t next = next_of_[policy_ == Policy::kRoundRobin ? static_cast<size_t>(encoder) : 0];
  return next < order_.size() ? order_[next] : kNone;
}

int EncoderDispatch::take(int encoder) {
  const int sample = peek(encoder);
  if (sample == kNone) return kNone;
  next_of_[policy_ == Policy::kRoundRobin ? static_cast<size_t>(encoder) : 0] +=
      policy_ == Policy::kRoundRobin ? static_cast<size_t>(encoders_) : 1;
  --left_;
  return sample;
}

}  // namespace clustertwin::models::flowtrain
