// The FlowTrain twin's flowtrain mode: encoder groups run ahead into their pool slots,
// backbone replicas take packed micro-batches as their embeddings arrive, gradients flow back.

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <simgrid/s4u.hpp>

#include "common/check.h"
#include "sim/flowtrain/flowtrain_model.h"

namespace clustertwin::sim::flowtrain::detail {

Status FlowTrainRun::flowtrain_step() {
  step_done_ = false;
  sides_left_ = 2;
  auto packing = pack(items(all_samples()), setup_.micro_batch_tokens, true, replicas());
  if (!packing.is_ok()) return packing.status();
  imbalance_ = packing->imbalance();
  // Image-heavy micro-batches first: the encoder's backward of the step's last micro-batches is its tail.
  bins_ = packing->bins;
  std::vector<int> images(bins_.size(), 0);
  for (size_t b = 0; b < bins_.size(); ++b) {
    for (int64_t i : bins_[b])
      images[b] += samples_[i].sample.images;
  }
  std::vector<size_t> order(bins_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return images[a] > images[b]; });
  std::vector<std::vector<int64_t>> sorted;
  for (size_t b : order)
    sorted.push_back(bins_[b]);
  bins_ = std::move(sorted);
  bin_missing_.assign(bins_.size(), 0);
  dispatch_.emplace(models::flowtrain::MicroBatchDispatch::Policy::kFirstReady, static_cast<int>(bins_.size()),
                    replicas());
  producer_.assign(samples_.size(), -1);
  sample_bin_.assign(samples_.size(), -1);
  replicas_left_drain_ = replicas();
  std::vector<int> image_order;  // the image samples in micro-batch order
  for (size_t b = 0; b < bins_.size(); ++b) {
    for (int64_t i : bins_[b]) {
      sample_bin_[i] = static_cast<int>(b);
      if (samples_[i].sample.images > 0) {
        ++bin_missing_[b];
        image_order.push_back(static_cast<int>(i));
      }
    }
  }
  encoder_backward_left_ = static_cast<int>(image_order.size());
  encode_.emplace(models::flowtrain::EncoderDispatch::Policy::kSharedQueue, std::move(image_order), encoder_groups());
  bins_left_ = static_cast<int>(bins_.size());
  groups_.assign(encoder_groups(), EncoderGroup{});
  backward_.clear();
  replicas_.assign(replicas(), Replica{});
  if (encoder_backward_left_ == 0) encoder_side_finished();
  for (int g = 0; g < encoder_groups(); ++g)
    kick_encoder(g);
  for (int r = 0; r < replicas(); ++r)
    kick_replica(r);
  return drain("a flowtrain step");
}

void FlowTrainRun::kick_encoder(int g) {
  EncoderGroup& group = groups_[g];
  if (group.busy) return;
  const models::flowtrain::SideLayout& E = layouts_.split.encoder;
  // Forward first while the backbone could run out of complete micro-batches (fewer ready than replicas);
  // else backward first. The encoder recomputes its forward in backward, so any group can take any sample's
  // backward: it reads the gradient from the replica's pool slot (the images are the dataset's).
  const int head = encode_->peek(g);
  const bool feed = head != models::flowtrain::EncoderDispatch::kNone && ready_untaken() < replicas() &&
                    group.in_flight_bytes + samples_[head].embedding_bytes <= setup_.pool_bytes * E.tp;
  if (!backward_.empty() && !feed) {
    const Backward job = backward_.front();
    backward_.pop_front();
    group.busy = true;
    const int i = job.sample;
    transfer(replica_device(job.replica), g * E.tp, samples_[i].embedding_bytes, [this, g, i] {
      const models::flowtrain::SideLayout& E = layouts_.split.encoder;
      const double seconds = (models::flowtrain::kEncoderRecompute - 1.0 / 3) *
                             models::flowtrain::stack_seconds(samples_[i].encoder, E.tp, device_);
      busy(g * E.tp, E.tp, seconds, "encoder-backward", [this, g] {
        groups_[g].busy = false;
        if (--encoder_backward_left_ == 0) encoder_side_finished();
        kick_encoder(g);
      });
    });
    return;
  }
  if (head == models::flowtrain::EncoderDispatch::kNone) return;
  const int i = head;
  if (group.in_flight_bytes + samples_[i].embedding_bytes > setup_.pool_bytes * E.tp) return;  // back-pressure
  encode_->take(g);
  group.busy = true;
  group.in_flight_bytes += samples_[i].embedding_bytes;
  producer_[i] = g;
  const double seconds = models::flowtrain::stack_seconds(samples_[i].encoder, E.tp, device_) / 3;
  busy(g * E.tp, E.tp, seconds, "encoder", [this, g, i] {
    groups_[g].busy = false;
    const int b = sample_bin_[i];
    if (--bin_missing_[b] == 0) {
      for (int r = 0; r < replicas(); ++r)
        kick_replica(r);
    }
    kick_encoder(g);
    // Another group may wait on the queue's head while this one had room.
    for (int k = 0; k < encoder_groups(); ++k)
      kick_encoder(k);
  });
}

int FlowTrainRun::ready_untaken() const {
  return dispatch_->ready_untaken([this](int b) { return bin_missing_[static_cast<size_t>(b)] == 0; });
}

void FlowTrainRun::kick_replica(int r) {
  Replica& rep = replicas_[r];
  if (rep.busy || rep.drained) return;
  // The first micro-batch no replica has taken whose embeddings are all in the pool.
  const int next = dispatch_->take(r, [this](int b) { return bin_missing_[static_cast<size_t>(b)] == 0; });
  const models::flowtrain::SideLayout& B = layouts_.split.backbone;
  if (next == models::flowtrain::MicroBatchDispatch::kDone) {
    // The pipeline's drain: its other stages finish the last micro-batch.
    rep.drained = true;
    rep.busy = true;
    busy(replica_device(r), backbone_group(), (B.pp - 1) * rep.last_stage_s, "drain", [this, r] {
      replicas_[r].busy = false;
      if (--replicas_left_drain_ == 0) backbone_side_finished();
    });
    return;
  }
  if (next == models::flowtrain::MicroBatchDispatch::kWait) return;
  rep.busy = true;
  // Read every embedding of the micro-batch from its producer's pool.
  auto reads_left = std::make_shared<int>(0);
  std::vector<int> with_images;
  for (int64_t i : bins_[next]) {
    if (samples_[i].sample.images > 0) with_images.push_back(static_cast<int>(i));
  }
  auto train = [this, r, next] {
    const models::flowtrain::SideLayout& B = layouts_.split.backbone;
    StackWork llm;
    llm.layers = model_.backbone.layers, llm.hidden = model_.backbone.hidden;
    for (int64_t i : bins_[next])
      llm += samples_[i].backbone;
    const double stage = models::flowtrain::stack_seconds(models::transformer::stage_work(llm, B.pp), B.tp, device_);
    replicas_[r].last_stage_s = stage;
    busy(replica_device(r), backbone_group(), stage, "backbone", [this, r, next] {
      replicas_[r].busy = false;
      --bins_left_;
      // The embeddings' gradients wait in the replica's pool slots for any encoder group.
      for (int64_t i : bins_[next]) {
        if (samples_[i].sample.images > 0) backward_.push_back({static_cast<int>(i), r});
      }
      for (int g = 0; g < encoder_groups(); ++g)
        kick_encoder(g);
      kick_replica(r);
    });
  };
  if (with_images.empty()) {
    train();
    return;
  }
  *reads_left = static_cast<int>(with_images.size());
  for (int i : with_images) {
    const int g = producer_[i];
    transfer(g * layouts_.split.encoder.tp, replica_device(r), samples_[i].embedding_bytes,
             [this, g, i, reads_left, train] {
               // The slot is free again: its producer may run further ahead.
               groups_[g].in_flight_bytes -= samples_[i].embedding_bytes;
               kick_encoder(g);
               if (--*reads_left == 0) train();
             });
  }
}

}  // namespace clustertwin::sim::flowtrain::detail
