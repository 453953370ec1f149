#include "sim/flowtrain/flowtrain_twin.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <simgrid/s4u.hpp>

#include "common/check.h"
#include "common/text.h"
#include "common/version.h"
#include "models/flowtrain/packing.h"
#include "sim/core/collective_runner.h"
#include "sim/core/collective_schedule.h"
#include "sim/core/isolated.h"
#include "sim/core/platform.h"
#include "sim/core/units.h"
#include "traces/trace_writer.h"

namespace sg = simgrid::s4u;

namespace clustertwin::sim {
namespace {

using flowtrain::StackWork;

constexpr double kBytesPerValue = 2;  // bf16 embeddings and gradients
constexpr double kOptimizerBytesPerParam =
    32;                             // Adam over a ZeRO-1 shard: fp32 master, m, v read and written, bf16 out
constexpr int kMeanSamples = 2048;  // dataset samples the allocator's means come from

const char* const kModeNames[] = {"monolithic", "disagg-sync", "flowtrain"};

double peak_of(const ClusterProfile& profile) {
  auto it = profile.device.peak_flops.find("bf16");
  return it != profile.device.peak_flops.end() ? it->second : profile.device.peak_flops.begin()->second;
}

// The step's samples and what each costs.
struct StepSample {
  flowtrain::Sample sample;
  flowtrain::SampleCost cost;
  StackWork encoder, backbone;
  double embedding_bytes = 0;  // the projected image tokens it hands the backbone
};

// Packs `items` into the fewest micro-batches of `capacity` tokens that the packer fits (from the token lower
// bound), their count a multiple of `multiple` (the data-parallel replicas, so that each gets as many).
StatusOr<flowtrain::Packing> pack(const std::vector<flowtrain::PackItem>& items, int64_t capacity, bool by_cost,
                                  int multiple = 1) {
  int64_t tokens = 0;
  for (const auto& i : items)
    tokens += i.tokens;
  int bins = static_cast<int>(std::max<int64_t>(1, (tokens + capacity - 1) / capacity));
  bins = (bins + multiple - 1) / multiple * multiple;
  for (int tries = 0; tries < 64; ++tries, bins += multiple) {
    auto p =
        by_cost ? flowtrain::pack_by_cost(items, bins, capacity) : flowtrain::pack_by_tokens(items, bins, capacity);
    if (p.is_ok()) return p;
  }
  return Status::internal("flowtrain twin: no packing of " + std::to_string(items.size()) + " samples into up to " +
                          std::to_string(bins) + " micro-batches");
}

struct Layouts {
  flowtrain::Allocation split;  // disagg-sync and flowtrain
  flowtrain::SideLayout monolithic;
  double allocator_rate = 0;
};

class Run {
 public:
  Run(const FlowTrainSetup& setup, const ClusterProfile& profile, Platform& platform, FlowTrainMode mode,
      const flowtrain::VlmSpec& model, const Layouts& layouts)
      : setup_(setup),
        profile_(profile),
        platform_(platform),
        mode_(mode),
        model_(model),
        layouts_(layouts),
        device_(flowtrain_device(setup, profile)),
        nic_bandwidth_(profile.nics.link.bandwidth > 0 ? profile.nics.link.bandwidth
                                                       : profile.intra_node.link.bandwidth) {}

  Status run() {
    for (int step = 0; step < setup_.steps; ++step) {
      CT_RETURN_IF_ERROR(load_step(step));
      const double start = sg::Engine::get_clock();
      step_start_ = start;
      intervals_.clear();
      Status s = mode_ == FlowTrainMode::kMonolithic   ? monolithic_step()
                 : mode_ == FlowTrainMode::kDisaggSync ? disagg_sync_step()
                                                       : flowtrain_step();
      CT_RETURN_IF_ERROR(s);
      step_times_.push_back(sg::Engine::get_clock() - start);
      step_flops_.push_back(step_flops_now_);
    }
    return Status::ok();
  }

  FlowTrainRow result() const {
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

 private:
  // ---- the step's samples ------------------------------------------------------------------------------------
  Status load_step(int step) {
    samples_.clear();
    step_flops_now_ = 0;
    const int64_t first = static_cast<int64_t>(step) * setup_.global_batch;
    const double embedding_per_image = static_cast<double>(model_.encoder.tokens_per_image()) *
                                       static_cast<double>(model_.backbone.hidden) * kBytesPerValue;
    for (int i = 0; i < setup_.global_batch; ++i) {
      StepSample s;
      s.sample = flowtrain::dataset_sample(setup_.data, first + i);
      s.cost = flowtrain::sample_cost(model_, s.sample);
      s.encoder = flowtrain::encoder_work(model_, s.sample.images);
      s.backbone = flowtrain::backbone_work(model_, s.cost.llm_tokens);
      s.embedding_bytes = embedding_per_image * s.sample.images;
      step_flops_now_ += s.cost.encoder_flops + s.cost.backbone_flops;
      samples_.push_back(s);
    }
    return Status::ok();
  }

  std::vector<flowtrain::PackItem> items(const std::vector<int>& which) const {
    std::vector<flowtrain::PackItem> out;
    for (int i : which)
      out.push_back({i, samples_[i].cost.llm_tokens, samples_[i].cost.backbone_flops});
    return out;
  }
  std::vector<int> all_samples() const {
    std::vector<int> v(samples_.size());
    std::iota(v.begin(), v.end(), 0);
    return v;
  }

  // ---- activities ----------------------------------------------------------------------------------------------
  void add(sg::ActivityPtr activity, std::function<void()> on_done) {
    pending_.push_back(std::move(activity));
    handlers_.push_back(std::move(on_done));
  }

  Status drain(const char* what) {
    while (!step_done_) {
      if (pending_.empty()) {
        if (mode_ == FlowTrainMode::kFlowTrain) {
          return Status::invalid_argument(
              "--pool-memory " + format_quantity(setup_.pool_bytes, Quantity::kSize) + ": the " +
              std::to_string(layouts_.split.encoder.devices) +
              " encoder workers' pools cannot hold a whole micro-batch's embeddings (flowtrain stalled)");
        }
        return Status::internal(std::string("flowtrain twin: ") + flowtrain_mode_name(mode_) + " stalled in " + what);
      }
      const ssize_t i = sg::Activity::wait_any(pending_);
      CT_CHECK(i >= 0 && static_cast<size_t>(i) < pending_.size());
      std::function<void()> handler = std::move(handlers_[static_cast<size_t>(i)]);
      pending_.erase(pending_.begin() + i);
      handlers_.erase(handlers_.begin() + i);
      handler();
    }
    return Status::ok();
  }

  void busy(int first_device, int devices, double seconds, const char* kind, std::function<void()> on_done) {
    const double now = sg::Engine::get_clock();
    intervals_.push_back({first_device, devices, now - step_start_, now - step_start_ + seconds, kind});
    sg::ExecPtr exec = sg::this_actor::exec_init(platform_.work_units(first_device, seconds))
                           ->set_host(platform_.device(first_device));
    exec->start();
    add(exec, std::move(on_done));
  }

  void transfer(int from_device, int to_device, double bytes, std::function<void()> on_done) {
    if (from_device == to_device || bytes <= 0) {
      // Nothing crosses a link; still an activity so that the event order stays the loop's.
      busy(to_device, 1, 0, "pool-read", std::move(on_done));
      return;
    }
    sg::CommPtr comm = sg::Comm::sendto_async(platform_.device(from_device), platform_.device(to_device),
                                              static_cast<uint64_t>(std::llround(bytes)));
    add(comm, std::move(on_done));
  }

  // The data-parallel gradient reduce-scatter of `bytes` per device among `members` (first devices of the
  // replicas; ZeRO-1: each then steps its shard), run by an actor of its own; `on_done` when it ends. The
  // parameters' all-gather that follows is overlapped with the next step's first forward (Megatron's
  // overlap-param-gather) and not simulated.
  void reduce_scatter(std::vector<int> members, double bytes, std::function<void()> on_done) {
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

  double optimizer_seconds(double params_per_device) const {
    return params_per_device * kOptimizerBytesPerParam / device_.memory_bandwidth;
  }

  double encoder_params() const { return static_cast<double>(model_.encoder.params() + model_.projector_params()); }
  double backbone_params() const { return static_cast<double>(model_.backbone.params()); }

  // A side's gradient reduce-scatter and optimizer step; the step ends when every side has stepped.
  // sides: {members, bytes per device, optimizer seconds, first device, devices}.
  struct Side {
    std::vector<int> members;
    double bytes = 0, optimizer_s = 0;
    int first_device = 0, devices = 0;
  };
  void finish_side(const Side& side) {
    reduce_scatter(side.members, side.bytes, [this, side] {
      busy(side.first_device, side.devices, side.optimizer_s, "optimizer", [this] {
        if (--sides_left_ == 0) step_done_ = true;
      });
    });
  }

  // ---- monolithic ----------------------------------------------------------------------------------------------
  Status monolithic_step() {
    const flowtrain::SideLayout& L = layouts_.monolithic;
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
          const double stage = flowtrain::stack_seconds(flowtrain::stage_work(llm, L.pp), L.tp, device_);
          const double encoder = flowtrain::stack_seconds(enc, L.tp, device_);
          std::vector<double> f(L.pp, stage / 3), g(L.pp, 2 * stage / 3);
          // The encoder's backward recomputes its forward (timing.h kEncoderRecompute).
          f[0] += encoder / 3;
          g[0] += (flowtrain::kEncoderRecompute - 1.0 / 3) * encoder;
          fwd.push_back(f);
          bwd.push_back(g);
        }
        seconds = flowtrain::pipeline_makespan(fwd, bwd);
      }
      busy(r * group, group, seconds, "train", [this, &replicas_left, L, group] {
        if (--replicas_left > 0) return;
        Side side;
        for (int k = 0; k < L.dp; ++k)
          side.members.push_back(k * group);
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

  static double imbalance_of(const std::vector<double>& costs) {
    if (costs.empty()) return 0;
    const double mean = std::accumulate(costs.begin(), costs.end(), 0.0) / static_cast<double>(costs.size());
    return mean > 0 ? *std::max_element(costs.begin(), costs.end()) / mean : 0;
  }

  // ---- the split modes -------------------------------------------------------------------------------------------
  int encoder_groups() const { return layouts_.split.encoder.devices / layouts_.split.encoder.tp; }
  int backbone_group() const { return layouts_.split.backbone.tp * layouts_.split.backbone.pp; }
  int replicas() const { return layouts_.split.backbone.dp; }
  int replica_device(int r) const { return layouts_.split.encoder.devices + r * backbone_group(); }
  double transfer_seconds(double bytes) const {
    return bytes > 0 ? bytes / nic_bandwidth_ + 2 * profile_.nics.link.latency : 0;
  }

  void finish_encoder_side() {
    const flowtrain::SideLayout& E = layouts_.split.encoder;
    Side enc;
    for (int g = 0; g < encoder_groups(); ++g)
      enc.members.push_back(g * E.tp);
    enc.bytes = kBytesPerValue * encoder_params() / E.tp;
    enc.optimizer_s = optimizer_seconds(encoder_params() / E.devices);
    enc.first_device = 0;
    enc.devices = E.devices;
    finish_side(enc);
  }
  void finish_backbone_side() {
    const flowtrain::SideLayout& B = layouts_.split.backbone;
    Side llm;
    for (int r = 0; r < replicas(); ++r)
      llm.members.push_back(replica_device(r));
    llm.bytes = kBytesPerValue * backbone_params() / (B.tp * B.pp);
    llm.optimizer_s = optimizer_seconds(backbone_params() / B.devices);
    llm.first_device = B.devices > 0 ? layouts_.split.encoder.devices : 0;
    llm.devices = B.devices;
    finish_side(llm);
  }

  Status disagg_sync_step() {
    const flowtrain::SideLayout& E = layouts_.split.encoder;
    const flowtrain::SideLayout& B = layouts_.split.backbone;
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
        const double encoder = flowtrain::stack_seconds(enc, E.tp, device_) / encoder_share;
        const double stage = flowtrain::stack_seconds(flowtrain::stage_work(llm, B.pp), B.tp, device_);
        std::vector<double> f(B.pp + 1, stage / 3), g(B.pp + 1, 2 * stage / 3);
        f[0] = encoder / 3 + transfer_seconds(bytes);
        g[0] = (flowtrain::kEncoderRecompute - 1.0 / 3) * encoder + transfer_seconds(bytes);
        fwd.push_back(f);
        bwd.push_back(g);
      }
      const double seconds = flowtrain::pipeline_makespan(fwd, bwd);
      busy(replica_device(r), backbone_group(), seconds, "train", [this, &replicas_left] {
        if (--replicas_left == 0) {
          finish_encoder_side();
          finish_backbone_side();
        }
      });
    }
    return drain("a disagg-sync step");
  }

  // ---- flowtrain -------------------------------------------------------------------------------------------------
  struct EncoderGroup {
    bool busy = false;
    double in_flight_bytes = 0;  // its pool slots not yet read by a backbone replica
  };
  struct Backward {
    int sample = 0, replica = 0;  // the replica whose pool slot holds the gradient
  };
  struct Replica {
    bool busy = false;
    bool drained = false;
    double last_stage_s = 0;
  };

  Status flowtrain_step() {
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
    bin_taken_.assign(bins_.size(), false);
    producer_.assign(samples_.size(), -1);
    sample_bin_.assign(samples_.size(), -1);
    replicas_left_drain_ = replicas();
    queue_.clear();
    for (size_t b = 0; b < bins_.size(); ++b) {
      for (int64_t i : bins_[b]) {
        sample_bin_[i] = static_cast<int>(b);
        if (samples_[i].sample.images > 0) {
          ++bin_missing_[b];
          queue_.push_back(static_cast<int>(i));
        }
      }
    }
    encoder_backward_left_ = static_cast<int>(queue_.size());
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

  void kick_encoder(int g) {
    EncoderGroup& group = groups_[g];
    if (group.busy) return;
    const flowtrain::SideLayout& E = layouts_.split.encoder;
    // Forward first while the backbone could run out of complete micro-batches (fewer ready than replicas);
    // else backward first. The encoder recomputes its forward in backward, so any group can take any sample's
    // backward: it reads the gradient from the replica's pool slot (the images are the dataset's).
    const bool feed = !queue_.empty() && ready_untaken() < replicas() &&
                      group.in_flight_bytes + samples_[queue_.front()].embedding_bytes <= setup_.pool_bytes * E.tp;
    if (!backward_.empty() && !feed) {
      const Backward job = backward_.front();
      backward_.pop_front();
      group.busy = true;
      const int i = job.sample;
      transfer(replica_device(job.replica), g * E.tp, samples_[i].embedding_bytes, [this, g, i] {
        const flowtrain::SideLayout& E = layouts_.split.encoder;
        const double seconds =
            (flowtrain::kEncoderRecompute - 1.0 / 3) * flowtrain::stack_seconds(samples_[i].encoder, E.tp, device_);
        busy(g * E.tp, E.tp, seconds, "encoder-backward", [this, g] {
          groups_[g].busy = false;
          if (--encoder_backward_left_ == 0) encoder_side_finished();
          kick_encoder(g);
        });
      });
      return;
    }
    if (queue_.empty()) return;
    const int i = queue_.front();
    if (group.in_flight_bytes + samples_[i].embedding_bytes > setup_.pool_bytes * E.tp) return;  // back-pressure
    queue_.pop_front();
    group.busy = true;
    group.in_flight_bytes += samples_[i].embedding_bytes;
    producer_[i] = g;
    const double seconds = flowtrain::stack_seconds(samples_[i].encoder, E.tp, device_) / 3;
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

  int ready_untaken() const {
    int n = 0;
    for (size_t b = 0; b < bins_.size(); ++b) {
      if (!bin_taken_[b] && bin_missing_[b] == 0) ++n;
    }
    return n;
  }

  void kick_replica(int r) {
    Replica& rep = replicas_[r];
    if (rep.busy || rep.drained) return;
    int next = -1;
    bool any_left = false;
    for (size_t b = 0; b < bins_.size(); ++b) {
      if (bin_taken_[b]) continue;
      any_left = true;
      if (bin_missing_[b] == 0) {
        next = static_cast<int>(b);
        break;
      }
    }
    const flowtrain::SideLayout& B = layouts_.split.backbone;
    if (!any_left) {
      // The pipeline's drain: its other stages finish the last micro-batch.
      rep.drained = true;
      rep.busy = true;
      busy(replica_device(r), backbone_group(), (B.pp - 1) * rep.last_stage_s, "drain", [this, r] {
        replicas_[r].busy = false;
        if (--replicas_left_drain_ == 0) backbone_side_finished();
      });
      return;
    }
    if (next < 0) return;
    bin_taken_[next] = true;
    rep.busy = true;
    // Read every embedding of the micro-batch from its producer's pool.
    auto reads_left = std::make_shared<int>(0);
    std::vector<int> with_images;
    for (int64_t i : bins_[next]) {
      if (samples_[i].sample.images > 0) with_images.push_back(static_cast<int>(i));
    }
    auto train = [this, r, next] {
      const flowtrain::SideLayout& B = layouts_.split.backbone;
      StackWork llm;
      llm.layers = model_.backbone.layers, llm.hidden = model_.backbone.hidden;
      for (int64_t i : bins_[next])
        llm += samples_[i].backbone;
      const double stage = flowtrain::stack_seconds(flowtrain::stage_work(llm, B.pp), B.tp, device_);
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

  void encoder_side_finished() { finish_encoder_side(); }
  void backbone_side_finished() { finish_backbone_side(); }

  const FlowTrainSetup& setup_;
  const ClusterProfile& profile_;
  Platform& platform_;
  FlowTrainMode mode_;
  const flowtrain::VlmSpec& model_;
  const Layouts& layouts_;
  flowtrain::DeviceModel device_;
  double nic_bandwidth_;

  std::vector<StepSample> samples_;
  double step_flops_now_ = 0, step_start_ = 0, imbalance_ = 0;
  std::vector<double> step_times_, step_flops_;
  std::vector<FlowTrainInterval> intervals_;
  std::vector<sg::ActivityPtr> pending_;
  std::vector<std::function<void()>> handlers_;
  bool step_done_ = false;
  int sides_left_ = 0;

  // flowtrain's state
  std::vector<std::vector<int64_t>> bins_;
  std::vector<int> bin_missing_;
  std::vector<bool> bin_taken_;
  std::vector<int> sample_bin_;
  std::vector<int> producer_;
  std::deque<int> queue_;
  std::vector<EncoderGroup> groups_;
  std::deque<Backward> backward_;
  std::vector<Replica> replicas_;
  int encoder_backward_left_ = 0, bins_left_ = 0, replicas_left_drain_ = 0;
};

nlohmann::json row_to_json(const FlowTrainRow& r, bool with_intervals) {
  nlohmann::ordered_json j;
  j["mode"] = r.mode;
  j["model"] = r.model;
  j["workers"] = r.workers;
  j["encoder_workers"] = r.encoder_workers;
  j["encoder_tp"] = r.encoder_tp;
  j["backbone_tp"] = r.backbone_tp;
  j["backbone_pp"] = r.backbone_pp;
  j["step_s"] = r.step_s;
  j["samples_per_s"] = r.samples_per_s;
  j["mfu"] = r.mfu;
  j["speedup"] = r.speedup;
  j["allocator_samples_per_s"] = r.allocator_rate;
  j["micro_batch_imbalance"] = r.micro_batch_imbalance;
  j["step_times_s"] = r.step_times_s;
  if (with_intervals) {
    nlohmann::json list = nlohmann::json::array();
    for (const FlowTrainInterval& b : r.last_step)
      list.push_back({b.first_device, b.devices, b.start_s, b.end_s, b.kind});
    j["last_step"] = list;
  }
  return j;
}

FlowTrainRow row_from_json(const nlohmann::json& j) {
  FlowTrainRow r;
  r.mode = j.at("mode");
  r.model = j.at("model");
  r.workers = j.at("workers");
  r.encoder_workers = j.at("encoder_workers");
  r.encoder_tp = j.at("encoder_tp");
  r.backbone_tp = j.at("backbone_tp");
  r.backbone_pp = j.at("backbone_pp");
  r.step_s = j.at("step_s");
  r.samples_per_s = j.at("samples_per_s");
  r.mfu = j.at("mfu");
  r.allocator_rate = j.at("allocator_samples_per_s");
  r.micro_batch_imbalance = j.at("micro_batch_imbalance");
  r.step_times_s = j.at("step_times_s").get<std::vector<double>>();
  for (const auto& b : j.at("last_step"))
    r.last_step.push_back({b[0], b[1], b[2], b[3], b[4]});
  return r;
}

flowtrain::AllocatorInputs allocator_inputs(const FlowTrainSetup& setup, const ClusterProfile& profile,
                                            const flowtrain::VlmSpec& model) {
  flowtrain::AllocatorInputs in;
  in.model = model;
  in.workers = setup.workers;
  in.devices_per_node = profile.devices_per_node;
  in.device = flowtrain_device(setup, profile);
  in.memory_bytes = profile.device.memory_bytes;
  in.global_batch = setup.global_batch;
  in.micro_batch_tokens = setup.micro_batch_tokens;
  in.encoder_workers = setup.encoder_workers;
  flowtrain::set_dataset_means(&in, setup.data, kMeanSamples);
  return in;
}

StatusOr<std::string> run_in_child(const FlowTrainSetup& setup, const ClusterProfile& profile, FlowTrainMode mode,
                                   const flowtrain::VlmSpec& model, const Layouts& layouts) {
  TwinEngine twin;
  sg::Engine& engine = twin.engine();
  auto platform = Platform::build(profile, setup.workers);
  if (!platform.is_ok()) return platform.status();
  Run run(setup, profile, **platform, mode, model, layouts);
  Status status = Status::ok();
  sg::Actor::create("orchestrator", (*platform)->device(0), [&] { status = run.run(); });
  engine.run();
  CT_RETURN_IF_ERROR(status);
  return row_to_json(run.result(), true).dump();
}

}  // namespace

const char* flowtrain_mode_name(FlowTrainMode mode) {
  return kModeNames[static_cast<int>(mode)];
}

StatusOr<std::vector<FlowTrainMode>> parse_flowtrain_modes(const std::string& list) {
  std::vector<FlowTrainMode> out;
  if (list == "all")
    return std::vector<FlowTrainMode>{FlowTrainMode::kMonolithic, FlowTrainMode::kDisaggSync,
                                      FlowTrainMode::kFlowTrain};
  for (const std::string& name : split_commas(list)) {
    bool found = false;
    for (int m = 0; m < 3; ++m) {
      if (name == kModeNames[m]) {
        out.push_back(static_cast<FlowTrainMode>(m));
        found = true;
      }
    }
    if (!found) {
      return Status::invalid_argument("--mode '" + name +
                                      "': unknown (allowed: monolithic, disagg-sync, flowtrain, all)");
    }
  }
  if (out.empty()) return Status::invalid_argument("--mode '': name at least one mode");
  return out;
}

flowtrain::DeviceModel flowtrain_device(const FlowTrainSetup& setup, const ClusterProfile& profile) {
  flowtrain::DeviceModel d = setup.device;
  d.peak_flops = peak_of(profile);
  d.memory_bandwidth = profile.device.memory_bandwidth;
  d.link_bandwidth = profile.intra_node.link.bandwidth;
  d.link_latency_s = profile.intra_node.link.latency;
  return d;
}

Status validate(const FlowTrainSetup& setup, const ClusterProfile& profile) {
  auto model = flowtrain::vlm_spec(setup.model);
  if (!model.is_ok()) return Status::invalid_argument("--model " + model.status().message().substr(6));
  if (Status fits = check_worker_count(profile, setup.workers); !fits.is_ok()) return fits;
  if (setup.workers < 2) {
    return Status::invalid_argument("--workers " + std::to_string(setup.workers) +
                                    ": FlowTrain's modes need at least 2 workers (an encoder and a backbone worker)");
  }
  if (setup.encoder_workers == 0 || setup.encoder_workers < -1 || setup.encoder_workers >= setup.workers) {
    return Status::invalid_argument(
        "--encoder-workers " + std::to_string(setup.encoder_workers) + " of " + std::to_string(setup.workers) +
        " workers: each side needs at least one worker (1.." + std::to_string(setup.workers - 1) + ")");
  }
  if (setup.global_batch < 1) {
    return Status::invalid_argument("--global-batch " + std::to_string(setup.global_batch) + ": must be >= 1");
  }
  if (setup.micro_batch_tokens < setup.data.max_text + 8 * model->encoder.tokens_per_image()) {
    return Status::invalid_argument(
        "--micro-batch-tokens " + std::to_string(setup.micro_batch_tokens) + ": must hold the longest sample (" +
        std::to_string(setup.data.max_text + 8 * model->encoder.tokens_per_image()) + " tokens)");
  }
  const double largest = 8.0 * static_cast<double>(model->encoder.tokens_per_image()) *
                         static_cast<double>(model->backbone.hidden) * kBytesPerValue;
  if (!(setup.pool_bytes >= largest)) {
    return Status::invalid_argument("--pool-memory " + format_quantity(setup.pool_bytes, Quantity::kSize) +
                                    ": smaller than one sample (the largest, 8 images, takes " +
                                    format_quantity(largest, Quantity::kSize) + " of embeddings)");
  }
  if (setup.steps < 2) {
    return Status::invalid_argument("--steps " + std::to_string(setup.steps) +
                                    ": must be >= 2 (the first step is warm-up)");
  }
  if (profile.device.peak_flops.empty() || !(profile.device.memory_bytes > 0) ||
      !(profile.device.memory_bandwidth > 0) || !(profile.intra_node.link.bandwidth > 0)) {
    return Status::invalid_argument("profile '" + profile.name +
                                    "': the FlowTrain twin needs the device's peak_flops, memory, memory_bandwidth "
                                    "and intra_node bandwidth");
  }
  if (!(setup.device.gemm_efficiency > 0 && setup.device.gemm_efficiency <= 1)) {
    return Status::invalid_argument("--gemm-efficiency " + format_number("%g", setup.device.gemm_efficiency) +
                                    ": must be in (0, 1]");
  }
  if (!(setup.device.attention_efficiency > 0 && setup.device.attention_efficiency <= 1)) {
    return Status::invalid_argument("--attention-efficiency " + format_number("%g", setup.device.attention_efficiency) +
                                    ": must be in (0, 1]");
  }
  if (!(setup.device.tp_overlap >= 0 && setup.device.tp_overlap <= 1)) {
    return Status::invalid_argument("--tp-overlap " + format_number("%g", setup.device.tp_overlap) +
                                    ": must be in [0, 1]");
  }
  return Status::ok();
}

namespace {

// The allocator's layouts for `mode`, or InvalidArgument when none fits the devices' memory.
StatusOr<Layouts> choose_layouts(const FlowTrainSetup& setup, const ClusterProfile& profile, FlowTrainMode mode,
                                 const flowtrain::VlmSpec& model) {
  const flowtrain::AllocatorInputs in = allocator_inputs(setup, profile, model);
  Layouts layouts;
  if (mode == FlowTrainMode::kMonolithic) {
    layouts.monolithic = flowtrain::best_monolithic_layout(in, setup.workers);
    if (!(layouts.monolithic.rate > 0)) {
      return Status::invalid_argument("--model " + setup.model + ": no uniform layout of " +
                                      std::to_string(setup.workers) + " workers fits the device's memory");
    }
  } else {
    auto split = flowtrain::allocate(in);
    if (!split.is_ok()) return split.status();
    layouts.split = *split;
  }
  return layouts;
}

}  // namespace

Status flowtrain_fits(const FlowTrainSetup& setup, const ClusterProfile& profile, FlowTrainMode mode) {
  CT_RETURN_IF_ERROR(validate(setup, profile));
  auto layouts = choose_layouts(setup, profile, mode, *flowtrain::vlm_spec(setup.model));
  return layouts.is_ok() ? Status::ok() : layouts.status();
}

StatusOr<FlowTrainRow> run_flowtrain(const FlowTrainSetup& setup, const ClusterProfile& profile, FlowTrainMode mode) {
  CT_RETURN_IF_ERROR(validate(setup, profile));
  const auto wall_start = std::chrono::steady_clock::now();
  const flowtrain::VlmSpec model = *flowtrain::vlm_spec(setup.model);
  auto layouts = choose_layouts(setup, profile, mode, model);
  if (!layouts.is_ok()) return layouts.status();
  auto payload = run_isolated([&] { return run_in_child(setup, profile, mode, model, *layouts); });
  if (!payload.is_ok()) return payload.status();
  FlowTrainRow row = row_from_json(nlohmann::json::parse(*payload));
  row.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return row;
}

StatusOr<std::vector<FlowTrainRow>> run_flowtrain_modes(
    const FlowTrainSetup& setup, const ClusterProfile& profile, const std::vector<FlowTrainMode>& modes,
    const std::vector<int>& workers, const std::function<void(const FlowTrainRow&, int, int)>& progress) {
  std::vector<FlowTrainRow> rows;
  const int total = static_cast<int>(modes.size() * workers.size());
  for (int n : workers) {
    FlowTrainSetup s = setup;
    s.workers = n;
    const size_t first = rows.size();
    for (FlowTrainMode m : modes) {
      auto row = run_flowtrain(s, profile, m);
      if (!row.is_ok()) return row.status();
      rows.push_back(std::move(*row));
      if (progress) progress(rows.back(), static_cast<int>(rows.size()), total);
    }
    const FlowTrainRow* mono = nullptr;
    for (size_t i = first; i < rows.size(); ++i) {
      if (rows[i].mode == "monolithic") mono = &rows[i];
    }
    if (mono != nullptr) {
      const double base = mono->samples_per_s;
      for (size_t i = first; i < rows.size(); ++i)
        rows[i].speedup = rows[i].samples_per_s / base;
    }
  }
  return rows;
}

std::string flowtrain_rows_json(const std::vector<FlowTrainRow>& rows, const std::string& extra) {
  nlohmann::ordered_json j = extra.empty() ? nlohmann::ordered_json::object() : nlohmann::ordered_json::parse(extra);
  j["rows"] = nlohmann::json::array();
  for (const FlowTrainRow& r : rows)
    j["rows"].push_back(nlohmann::ordered_json(row_to_json(r, false)));
  return j.dump(2) + "\n";
}

std::string flowtrain_rows_csv(const std::vector<FlowTrainRow>& rows) {
  std::string out =
      "mode,model,workers,encoder_workers,encoder_tp,backbone_tp,backbone_pp,step_s,samples_per_s,mfu,speedup,"
      "allocator_samples_per_s,micro_batch_imbalance\n";
  for (const FlowTrainRow& r : rows) {
    out += r.mode + "," + r.model + "," + std::to_string(r.workers) + "," + std::to_string(r.encoder_workers) + "," +
           std::to_string(r.encoder_tp) + "," + std::to_string(r.backbone_tp) + "," + std::to_string(r.backbone_pp) +
           "," + format_number("%.6g", r.step_s) + "," + format_number("%.6g", r.samples_per_s) + "," +
           format_number("%.6g", r.mfu) + "," + format_number("%.6g", r.speedup) + "," +
           format_number("%.6g", r.allocator_rate) + "," + format_number("%.6g", r.micro_batch_imbalance) + "\n";
  }
  return out;
}

std::string flowtrain_rows_table(const std::vector<FlowTrainRow>& rows) {
  char line[256];
  std::snprintf(line, sizeof line, "%-12s %7s %8s %13s %9s %10s %7s %8s %8s\n", "mode", "workers", "encoder", "layout",
                "step_s", "samples/s", "mfu", "speedup", "mb_cost");
  std::string out = line;
  for (const FlowTrainRow& r : rows) {
    const std::string layout = "TP" + std::to_string(r.backbone_tp) + " PP" + std::to_string(r.backbone_pp) +
                               (r.encoder_workers > 0 ? " /TP" + std::to_string(r.encoder_tp) : "");
    std::snprintf(line, sizeof line, "%-12s %7d %8d %13s %9.3f %10.1f %6.1f%% %8s %8.4f\n", r.mode.c_str(), r.workers,
                  r.encoder_workers, layout.c_str(), r.step_s, r.samples_per_s, 100 * r.mfu,
                  ratio_or_dash(r.speedup).c_str(), r.micro_batch_imbalance);
    out += line;
  }
  return out;
}

Status write_flowtrain_trace(const FlowTrainRow& row, const std::string& platform, const std::string& path) {
  traces::Metadata m;
  m.source = traces::Source::kSim;
  m.system = "flowtrain";
  m.variant = row.mode;
  m.world_size = row.workers;
  m.hardware = platform;
  m.model = row.model;
  m.config_json = "{\"encoder_workers\":" + std::to_string(row.encoder_workers) + "}";
  m.clustertwin_version = std::string(version());
  m.streams = {"compute", "comm"};
  auto writer = traces::TraceWriter::create(path, m);
  if (!writer.is_ok()) return writer.status();
  std::vector<FlowTrainInterval> sorted = row.last_step;
  std::stable_sort(sorted.begin(), sorted.end(), [](const FlowTrainInterval& a, const FlowTrainInterval& b) {
    return std::tie(a.first_device, a.start_s) < std::tie(b.first_device, b.start_s);
  });
  for (const FlowTrainInterval& b : sorted) {
    if (!(b.end_s >= b.start_s)) continue;
    traces::Event e;
    e.name = b.kind;
    const bool comm = b.kind == "reduce-scatter" || b.kind == "pool-read";
    e.category = comm ? traces::Category::kComm : traces::Category::kCompute;
    if (b.kind == "reduce-scatter") e.collective = "reducescatter";
    e.rank = b.first_device;
    e.stream = comm ? 1 : 0;
    e.ts_us = b.start_s * 1e6;
    e.dur_us = (b.end_s - b.start_s) * 1e6;
    e.group_size = b.devices;
    (*writer)->write(e);
  }
  return (*writer)->close();
}

}  // namespace clustertwin::sim
