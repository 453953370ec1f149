// The FlowTrain twin's steps: samples, the event loop, transfers, the reduce-scatter, the row.

#include "sim/flowtrain/flowtrain_model.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <simgrid/s4u.hpp>

#include "common/check.h"
#include "models/cluster/units.h"
#include "sim/core/collective_runner.h"
#include "sim/core/collective_schedule.h"
#include "sim/core/link_tally.h"

namespace clustertwin::sim::flowtrain::detail {

// Packs `items` into the fewest micro-batches of `capacity` tokens that the packer fits (from the token lower
// bound), their count a multiple of `multiple` (the data-parallel replicas, so that each gets as many).
StatusOr<models::flowtrain::Packing> pack(const std::vector<models::flowtrain::PackItem>& items, int64_t capacity,
                                          bool by_cost, int multiple) {
  int64_t tokens = 0;
  for (const auto& i : items)
    tokens += i.tokens;
  int bins = static_cast<int>(std::max<int64_t>(1, (tokens + capacity - 1) / capacity));
  bins = (bins + multiple - 1) / multiple * multiple;
  for (int tries = 0; tries < 64; ++tries, bins += multiple) {
    auto p = by_cost ? models::flowtrain::pack_by_cost(items, bins, capacity)
                     : models::flowtrain::pack_by_tokens(items, bins, capacity);
    if (p.is_ok()) return p;
  }
  return Status::internal("flowtrain twin: no packing of " + std::to_string(items.size()) + " samples into up to " +
                          std::to_string(bins) + " micro-batches");
}

Status FlowTrainRun::run() {
  for (int step = 0; step < setup_.steps; ++step) {
    CT_RETURN_IF_ERROR(load_step(step));
    const double start = sg::Engine::get_clock();
    step_start_ = start;
    intervals_.clear();
    Status s = mode_ == FlowTrainMode::kMonolithic   ? monolithic_step()
               : mode_ == FlowTrainMode::kDisaggSync ? disagg_sync_step()
                                                     : flowtrain_step();
    CT_RETURN_IF_ERROR(s);
    step_ends_.push_back(sg::Engine::get_clock());
    step_times_.push_back(step_ends_.back() - start);
    step_flops_.push_back(step_flops_now_);
  }
  return Status::ok();
}

FlowTrainRow FlowTrainRun::result() const {
  FlowTrainRow r;
  r.mode = flowtrain_mode_name(mode_);
  r.model = model_.name;
  r.workers = setup_.workers;
  if (mode_ == FlowTrainMode::kMonolithic) {
    r.backbone_tp = layouts_.monolithic.tp;
    r.backbone_pp = layouts_.monolithic.pp;
    r.encoder_tp = layouts_.monolithic.tp;
    r.allocator_rate = layouts_.monolithic.rate;
  } else {
    r.encoder_workers = layouts_.split.encoder.devices;
    r.encoder_tp = layouts_.split.encoder.tp;
    r.backbone_tp = layouts_.split.backbone.tp;
    r.backbone_pp = layouts_.split.backbone.pp;
    r.allocator_rate = layouts_.split.rate;
  }
  r.step_times_s = step_times_;
  double time = 0, flops = 0;
  for (size_t i = 1; i < step_times_.size(); ++i) {
    time += step_times_[i];
    flops += step_flops_[i];
  }
  const double measured = static_cast<double>(step_times_.size() - 1);
  r.step_s = time / measured;
  r.samples_per_s = setup_.global_batch / r.step_s;
  r.mfu = flops / (time * setup_.workers * device_.peak_flops);
  r.micro_batch_imbalance = imbalance_;
  r.last_step = intervals_;
  return r;
}

Status FlowTrainRun::load_step(int step) {
  samples_.clear();
  step_flops_now_ = 0;
  const int64_t first = static_cast<int64_t>(step) * setup_.global_batch;
  const double embedding_per_image = static_cast<double>(model_.encoder.tokens_per_image()) *
                                     static_cast<double>(model_.backbone.hidden) * kBytesPerValue;
  for (int i = 0; i < setup_.global_batch; ++i) {
    StepSample s;
    s.sample = models::flowtrain::dataset_sample(setup_.data, first + i);
    s.cost = models::flowtrain::sample_cost(model_, s.sample);
    s.encoder = models::flowtrain::encoder_work(model_, s.sample.images, device_);
    s.backbone = models::flowtrain::backbone_work(model_, s.cost.llm_tokens, device_);
    s.embedding_bytes = embedding_per_image * s.sample.images;
    step_flops_now_ += s.cost.encoder_flops + s.cost.backbone_flops;
    samples_.push_back(s);
  }
  return Status::ok();
}

std::vector<models::flowtrain::PackItem> FlowTrainRun::items(const std::vector<int>& which) const {
  std::vector<models::flowtrain::PackItem> out;
  for (int i : which)
    out.push_back({i, samples_[i].cost.llm_tokens, samples_[i].cost.backbone_flops});
  return out;
}

std::vector<int> FlowTrainRun::all_samples() const {
  std::vector<int> v(samples_.size());
  std::iota(v.begin(), v.end(), 0);
  return v;
}

Status FlowTrainRun::drain(const char* what) {
  while (!step_done_) {
    if (reactor_.empty()) {
      if (mode_ == FlowTrainMode::kFlowTrain) {
        return Status::invalid_argument(
            "pool_memory " + cluster::format_quantity(setup_.pool_bytes, cluster::Quantity::kSize) + ": the " +
            std::to_string(layouts_.split.encoder.devices) +
            " encoder workers' pools cannot hold a whole micro-batch's embeddings (flowtrain stalled)");
      }
      return Status::internal(std::string("flowtrain twin: ") + flowtrain_mode_name(mode_) + " stalled in " + what);
    }
    reactor_.run_next();
  }
  return Status::ok();
}

void FlowTrainRun::busy(int first_device, int devices, double seconds, const char* kind,
                        std::function<void()> on_done) {
  const double now = sg::Engine::get_clock();
  intervals_.push_back({first_device, devices, now - step_start_, now - step_start_ + seconds, kind});
  sg::ExecPtr exec =
      sg::this_actor::exec_init(platform_.work_units(first_device, seconds))->set_host(platform_.device(first_device));
  exec->start();
  add(exec, std::move(on_done));
}

void FlowTrainRun::transfer(int from_device, int to_device, double bytes, std::function<void()> on_done) {
  if (from_device == to_device || bytes <= 0) {
    // Nothing crosses a link; still an activity so that the event order stays the loop's.
    busy(to_device, 1, 0, "pool-read", std::move(on_done));
    return;
  }
  const auto amount = static_cast<uint64_t>(std::llround(bytes));
  // In a job mix the embeddings' and gradients' flows count on the links they cross, as collectives' flows do.
  if (LinkTally* tally = platform_.link_tally(); tally != nullptr)
    tally->add(platform_.device(from_device), platform_.device(to_device), static_cast<double>(amount));
  sg::CommPtr comm = sg::Comm::sendto_async(platform_.device(from_device), platform_.device(to_device), amount);
  add(comm, std::move(on_done));
}

// The data-parallel gradient reduce-scatter of `bytes` per device among `members` (one device of each
// replica; ZeRO-1: each then steps its shard), run by an actor of its own; `on_done` when it ends. The
// parameters' all-gather that follows is overlapped with the next step's first forward (Megatron's
// overlap-param-gather) and not simulated.
void FlowTrainRun::reduce_scatter(std::vector<int> members, double bytes, std::function<void()> on_done) {
  if (members.size() <= 1 || bytes <= 0) {
    busy(members.empty() ? 0 : members[0], 1, 0, "reduce-scatter", std::move(on_done));
    return;
  }
  std::sort(members.begin(), members.end());
  sg::Mailbox* mailbox = platform_.take_mailbox();
  auto* token = new int(0);
  auto received = std::make_shared<int*>(nullptr);
  sg::CommPtr get = mailbox->get_async<int>(received.get());
  const double now = sg::Engine::get_clock();
  intervals_.push_back({members.front(), static_cast<int>(members.size()), now - step_start_, -1, "reduce-scatter"});
  const size_t interval = intervals_.size() - 1;
  add(get, [this, mailbox, interval, received, on_done = std::move(on_done)] {
    delete *received;
    platform_.give_mailbox(mailbox);
    intervals_[interval].end_s = sg::Engine::get_clock() - step_start_;
    on_done();
  });
  models::Collective c;
  c.op = models::CollectiveOp::kReduceScatter;
  auto schedule = build_schedule(
      c, static_cast<int64_t>(std::llround(bytes)), members, [this](int rank) { return platform_.node_of(rank); },
      "reduce-scatter");
  CT_CHECK(schedule.is_ok()) << schedule.status().message();
  sg::Actor::create("reduce-scatter", platform_.device(members.front()),
                    [this, mailbox, token, schedule = std::move(*schedule)] {
                      run_collective(platform_, schedule, Fidelity::kFlow);
                      mailbox->put(token, 0);
                    });
}

double FlowTrainRun::optimizer_seconds(double params_per_device) const {
  return params_per_device * kOptimizerBytesPerParam / device_.memory_bandwidth;
}

void FlowTrainRun::finish_side(const Side& side) {
  auto left = std::make_shared<int>(side.rails);
  for (int k = 0; k < side.rails; ++k) {
    std::vector<int> m = side.members;
    for (int& d : m)
      d += k;
    reduce_scatter(m, side.bytes, [this, side, left] {
      if (--*left > 0) return;
      busy(side.first_device, side.devices, side.optimizer_s, "optimizer", [this] {
        if (--sides_left_ == 0) step_done_ = true;
      });
    });
  }
}

}  // namespace clustertwin::sim::flowtrain::detail
