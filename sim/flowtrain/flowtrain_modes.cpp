// The FlowTrain twin's lockstep modes: monolithic (every worker encodes and trains its
// share) and disagg-sync (encoder workers, then backbone replicas, a barrier between).

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <simgrid/s4u.hpp>

#include "common/check.h"
#include "sim/flowtrain/flowtrain_model.h"

namespace clustertwin::sim::flowtrain::detail {

Status FlowTrainRun::monolithic_step() {
  const models::flowtrain::SideLayout& L = layouts_.monolithic;
  const int group = L.tp * L.pp;
  step_done_ = false;
  sides_left_ = 1;
  int replicas_left = L.dp;
  std::vector<double> all_costs;
  for (int r = 0; r < L.dp; ++r) {
    // The data loader's equal share, packed by tokens on the replica.
    std::vector<int> mine;
    for (int i = r; i < static_cast<int>(samples_.size()); i += L.dp)
      mine.push_back(i);
    double seconds = 0;
    if (!mine.empty()) {
      auto packing = pack(items(mine), setup_.micro_batch_tokens, false);
      if (!packing.is_ok()) return packing.status();
      std::vector<std::vector<double>> fwd, bwd;
      for (size_t b = 0; b < packing->bins.size(); ++b) {
        all_costs.push_back(packing->cost[b]);
        StackWork enc, llm;
        enc.layers = model_.encoder.layers, enc.hidden = model_.encoder.hidden;
        llm.layers = model_.backbone.layers, llm.hidden = model_.backbone.hidden;
        for (int64_t i : packing->bins[b]) {
          enc += samples_[i].encoder;
          llm += samples_[i].backbone;
        }
        const double stage =
            models::flowtrain::stack_seconds(models::transformer::stage_work(llm, L.pp), L.tp, device_);
        const double encoder = models::flowtrain::stack_seconds(enc, L.tp, device_);
        std::vector<double> f(L.pp, stage / 3), g(L.pp, 2 * stage / 3);
        // The encoder's backward recomputes its forward (timing.h kEncoderRecompute).
        f[0] += encoder / 3;
        g[0] += (models::flowtrain::kEncoderRecompute - 1.0 / 3) * encoder;
        fwd.push_back(f);
        bwd.push_back(g);
      }
      seconds = models::flowtrain::pipeline_makespan(fwd, bwd);
    }
    busy(r * group, group, seconds, "train", [this, &replicas_left, L, group] {
      if (--replicas_left > 0) return;
      Side side;
      for (int k = 0; k < L.dp; ++k)
        side.members.push_back(k * group);
      side.rails = group;
      const double shard = (backbone_params() / L.pp + encoder_params()) / L.tp;
      side.bytes = kBytesPerValue * shard;
      side.optimizer_s = optimizer_seconds(shard / L.dp);
      side.first_device = 0;
      side.devices = setup_.workers;
      finish_side(side);
    });
  }
  imbalance_ = imbalance_of(all_costs);
  return drain("a monolithic step");
}

double FlowTrainRun::imbalance_of(const std::vector<double>& costs) {
  if (costs.empty()) return 0;
  const double mean = std::accumulate(costs.begin(), costs.end(), 0.0) / static_cast<double>(costs.size());
  return mean > 0 ? *std::max_element(costs.begin(), costs.end()) / mean : 0;
}

double FlowTrainRun::transfer_seconds(double bytes) const {
  return bytes > 0 ? bytes / nic_bandwidth_ + 2 * profile_.nics.link.latency : 0;
}

void FlowTrainRun::finish_encoder_side() {
  const models::flowtrain::SideLayout& E = layouts_.split.encoder;
  Side enc;
  for (int g = 0; g < encoder_groups(); ++g)
    enc.members.push_back(g * E.tp);
  enc.rails = E.tp;
  enc.bytes = kBytesPerValue * encoder_params() / E.tp;
  enc.optimizer_s = optimizer_seconds(encoder_params() / E.devices);
  enc.first_device = 0;
  enc.devices = E.devices;
  finish_side(enc);
}

void FlowTrainRun::finish_backbone_side() {
  const models::flowtrain::SideLayout& B = layouts_.split.backbone;
  Side llm;
  for (int r = 0; r < replicas(); ++r)
    llm.members.push_back(replica_device(r));
  llm.rails = backbone_group();
  llm.bytes = kBytesPerValue * backbone_params() / (B.tp * B.pp);
  llm.optimizer_s = optimizer_seconds(backbone_params() / B.devices);
  llm.first_device = B.devices > 0 ? layouts_.split.encoder.devices : 0;
  llm.devices = B.devices;
  finish_side(llm);
}

Status FlowTrainRun::disagg_sync_step() {
  const models::flowtrain::SideLayout& E = layouts_.split.encoder;
  const models::flowtrain::SideLayout& B = layouts_.split.backbone;
  step_done_ = false;
  sides_left_ = 2;
  auto packing = pack(items(all_samples()), setup_.micro_batch_tokens, false, replicas());
  if (!packing.is_ok()) return packing.status();
  imbalance_ = packing->imbalance();
  // Each replica, with its 1/replicas share of the encoder groups, is one lock-step pipeline.
  const double encoder_share = static_cast<double>(encoder_groups()) / replicas();
  int replicas_left = replicas();
  for (int r = 0; r < replicas(); ++r) {
    std::vector<std::vector<double>> fwd, bwd;
    for (size_t b = r; b < packing->bins.size(); b += replicas()) {
      StackWork enc, llm;
      enc.layers = model_.encoder.layers, enc.hidden = model_.encoder.hidden;
      llm.layers = model_.backbone.layers, llm.hidden = model_.backbone.hidden;
      double bytes = 0;
      for (int64_t i : packing->bins[b]) {
        enc += samples_[i].encoder;
        llm += samples_[i].backbone;
        bytes += samples_[i].embedding_bytes;
      }
      const double encoder = models::flowtrain::stack_seconds(enc, E.tp, device_) / encoder_share;
      const double stage = models::flowtrain::stack_seconds(models::transformer::stage_work(llm, B.pp), B.tp, device_);
      std::vector<double> f(B.pp + 1, stage / 3), g(B.pp + 1, 2 * stage / 3);
      f[0] = encoder / 3 + transfer_seconds(bytes);
      g[0] = (models::flowtrain::kEncoderRecompute - 1.0 / 3) * encoder + transfer_seconds(bytes);
      fwd.push_back(f);
      bwd.push_back(g);
    }
    const double seconds = models::flowtrain::pipeline_makespan(fwd, bwd);
    busy(replica_device(r), backbone_group(), seconds, "train", [this, &replicas_left] {
      if (--replicas_left == 0) {
        finish_encoder_side();
        finish_backbone_side();
      }
    });
  }
  return drain("a disagg-sync step");
}

}  // namespace clustertwin::sim::flowtrain::detail
