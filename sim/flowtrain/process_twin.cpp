#include "sim/flowtrain/process_twin.h"

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <simgrid/s4u.hpp>

#include "common/check.h"
#include "sim/core/isolated.h"
#include "sim/core/platform.h"

namespace sg = simgrid::s4u;

namespace clustertwin::sim::flowtrain {
namespace {

constexpr double kUnitsPerSecond = 1e9;  // the machine's host: one core does 1e9 units a second

struct Handoff {
  double arrives_s = 0;
  int sample = 0;
};

bool split_mode(const std::string& mode) {
  return mode == "disagg-sync" || mode == "flowtrain";
}

class ProcessRun {
 public:
  ProcessRun(const FlowTrainProcessSetup& setup, const FlowTrainProcessCosts& costs, std::vector<sg::Host*> gpus,
             int first_step)
      : setup_(setup), costs_(costs), gpus_(std::move(gpus)), first_step_(first_step) {
    step_of_.assign(static_cast<size_t>(setup_.world), 0);
    for (int e = 0; e < setup_.encoders; ++e)
      slots_.push_back(sg::Semaphore::create(static_cast<unsigned>(setup_.pool_slots)));
    world_ = sg::Barrier::create(static_cast<unsigned>(setup_.world));
  }

  Status rank(int r) {
    for (int step = 0; step < setup_.steps; ++step) {
      step_of_[static_cast<size_t>(r)] = step;
      const double start = sg::Engine::get_clock();
      const std::vector<models::flowtrain::TinySample> samples =
          models::flowtrain::tiny_step(setup_.facts, setup_.seed, step, setup_.global_batch);
      double side_params = 0;
      if (setup_.mode == "monolithic") {
        for (size_t i = static_cast<size_t>(r); i < samples.size(); i += static_cast<size_t>(setup_.world)) {
          const models::flowtrain::TinySample& s = samples[i];
          work(r, "flowtrain/data", static_cast<double>(models::flowtrain::tiny_sample_bytes(setup_.facts, s)));
          if (s.images > 0) work(r, "flowtrain/encoder", s.encoder_flops / 3);
          work(r, "flowtrain/backbone", s.backbone_flops);
          if (s.images > 0) work(r, "flowtrain/encoder_backward", 2 * s.encoder_flops / 3);
        }
        side_params = setup_.facts.encoder_params + all_backbone_params();
      } else {
        auto plan = models::flowtrain::plan_step(samples, setup_.encoders, backbones(), setup_.micro_batch_tokens,
                                                 setup_.mode == "flowtrain");
        if (!plan.is_ok()) return plan.status();
        const bool encoder = r < setup_.encoders;
        if (setup_.mode == "disagg-sync") {
          disagg_sync(r, step, samples, *plan);
        } else {
          flowtrain(r, step, samples, *plan);
        }
        side_params = encoder ? setup_.facts.encoder_params : all_backbone_params();
      }
      // The side's all-reduce, the optimizer, then the step's end on every rank (the loss all-reduce).
      const int group = setup_.mode == "monolithic" ? 0 : (r < setup_.encoders ? 1 : 2);
      const int members = group == 0 ? setup_.world : group == 1 ? setup_.encoders : backbones();
      if (members > 1) barrier(step, group, members)->wait();
      work(r, "flowtrain/allreduce", 4 * side_params);
      if (members > 1 && costs_.exchange_s_per_byte > 0) {
        sg::this_actor::sleep_for(costs_.exchange_s_per_byte * 4 * side_params * 2.0 * (members - 1) / members);
      }
      work(r, "flowtrain/optimizer", 4 * side_params);
      world_->wait();
      if (r == 0) result_.step_s.push_back(sg::Engine::get_clock() - start);
    }
    return Status::ok();
  }

  const FlowTrainProcessResult& result() const { return result_; }

 private:
  int backbones() const { return setup_.world - setup_.encoders; }
  double all_backbone_params() const {
    const models::flowtrain::TinyFacts& f = setup_.facts;
    return f.backbone_params + static_cast<double>((f.vocab + f.context) * f.d_model);
  }
  double embedding_bytes(const models::flowtrain::TinySample& s) const {
    return 4.0 * static_cast<double>(s.images * setup_.facts.tokens_per_image * setup_.facts.d_model);
  }

  // A task of rank r: its CPU part on the machine's cores, then, on a GPU machine, its device part on the rank's
  // GPU: the time its thread waits for the device once it has launched the work (the tail the host cannot hide).
  void work(int r, const std::string& key, double size) {
    auto it = costs_.keys.find(key);
    CT_CHECK(it != costs_.keys.end()) << key;
    const FlowTrainKeyCost& c = it->second;
    const double seconds = std::max(0.0, c.latency_s + c.seconds_per_unit * size);
    const double device = gpus_.empty() ? 0.0 : std::max(0.0, c.device_latency_s + c.device_seconds_per_unit * size);
    result_.cpu_s[key] += seconds;
    const double start = sg::Engine::get_clock();
    if (seconds > 0) sg::this_actor::execute(seconds * kUnitsPerSecond);
    if (device > 0) sg::this_actor::exec_init(device * kUnitsPerSecond)->set_host(gpus_[r % gpus_.size()])->wait();
    if (step_of_[static_cast<size_t>(r)] >= first_step_) {
      auto& [wall, tasks] = result_.wall_s[key];
      wall += sg::Engine::get_clock() - start;
      ++tasks;
    }
  }

  void data(int r, const models::flowtrain::TinySample& s) {
    work(r, "flowtrain/data", static_cast<double>(models::flowtrain::tiny_sample_bytes(setup_.facts, s)));
  }

  sg::BarrierPtr barrier(int step, int group, int members) {
    auto key = std::make_pair(step, group);
    auto it = barriers_.find(key);
    if (it == barriers_.end()) it = barriers_.emplace(key, sg::Barrier::create(static_cast<unsigned>(members))).first;
    return it->second;
  }

  sg::Mailbox* box(const std::string& kind, int step, int who) {
    return sg::Mailbox::by_name(kind + "-" + std::to_string(step) + "-" + std::to_string(who));
  }

  void send(sg::Mailbox* to, int sample) {
    auto h = std::make_unique<Handoff>();
    h->arrives_s = sg::Engine::get_clock() + costs_.handoff_latency_s;
    h->sample = sample;
    to->put_init(h.release(), 0)->detach();
  }

  int receive(sg::Mailbox* from) {
    std::unique_ptr<Handoff> h(from->get<Handoff>());
    if (h->arrives_s > sg::Engine::get_clock()) sg::this_actor::sleep_until(h->arrives_s);
    return h->sample;
  }

  // Lock-step rounds: encoders send each of their round's embeddings, then wait for the gradients in order.
  void disagg_sync(int r, int step, const std::vector<models::flowtrain::TinySample>& samples,
                   const models::flowtrain::StepPlan& plan) {
    const size_t rounds = plan.bins.size() / static_cast<size_t>(backbones());
    for (size_t k = 0; k < rounds; ++k) {
      std::vector<int64_t> round;
      for (size_t j = k * backbones(); j < (k + 1) * backbones(); ++j)
        round.insert(round.end(), plan.bins[j].begin(), plan.bins[j].end());
      if (r < setup_.encoders) {
        std::vector<int64_t> mine;
        for (int64_t i : round) {
          if (plan.encoder_of[i] != r) continue;
          data(r, samples[i]);
          work(r, "flowtrain/encoder", samples[i].encoder_flops / 3);
          work(r, "flowtrain/transfer", embedding_bytes(samples[i]));
          send(box("emb", step, static_cast<int>(i)), static_cast<int>(i));
          mine.push_back(i);
        }
        for (int64_t i : mine) {
          receive(box("grad", step, static_cast<int>(i)));
          work(r, "flowtrain/encoder_backward", 2 * samples[i].encoder_flops / 3);
        }
      } else {
        for (int64_t i : round) {
          if (plan.backbone_of[i] != r) continue;
          if (samples[i].images > 0) receive(box("emb", step, static_cast<int>(i)));
          data(r, samples[i]);
          work(r, "flowtrain/backbone", samples[i].backbone_flops);
          if (samples[i].images > 0) send(box("grad", step, static_cast<int>(i)), static_cast<int>(i));
        }
      }
    }
  }

  // Through the pools: an encoder's puts wait for its own free slots; a backbone frees the slot it takes.
  void flowtrain(int r, int step, const std::vector<models::flowtrain::TinySample>& samples,
                 const models::flowtrain::StepPlan& plan) {
    if (r < setup_.encoders) {
      int produced = 0;
      for (int i : plan.order) {
        if (plan.encoder_of[i] != r) continue;
        slots_[static_cast<size_t>(r)]->acquire();
        data(r, samples[i]);
        work(r, "flowtrain/encoder", samples[i].encoder_flops / 3);
        work(r, "flowtrain/pool_put", embedding_bytes(samples[i]));
        send(box("emb", step, i), i);
        ++produced;
      }
      for (int k = 0; k < produced; ++k) {
        const int i = receive(box("grad-of", step, r));
        work(r, "flowtrain/pool_take", embedding_bytes(samples[i]));
        work(r, "flowtrain/encoder", samples[i].encoder_flops / 3);  // the recomputed forward
        work(r, "flowtrain/encoder_backward", 2 * samples[i].encoder_flops / 3);
      }
      return;
    }
    for (size_t j = static_cast<size_t>(r - setup_.encoders); j < plan.bins.size(); j += backbones()) {
      for (int64_t i : plan.bins[j]) {
        const models::flowtrain::TinySample& s = samples[i];
        if (s.images > 0) {
          receive(box("emb", step, static_cast<int>(i)));
          work(r, "flowtrain/pool_take", embedding_bytes(s));
          slots_[static_cast<size_t>(plan.encoder_of[i])]->release();
        }
        data(r, s);
        work(r, "flowtrain/backbone", s.backbone_flops);
        if (s.images > 0) {
          work(r, "flowtrain/pool_put", embedding_bytes(s));
          send(box("grad-of", step, plan.encoder_of[i]), static_cast<int>(i));
        }
      }
    }
  }

  const FlowTrainProcessSetup& setup_;
  const FlowTrainProcessCosts& costs_;
  std::vector<sg::Host*> gpus_;  // empty on a CPU machine
  int first_step_ = 0;           // wall_s counts tasks from this step on
  std::vector<int> step_of_;     // each rank's current step
  std::vector<sg::SemaphorePtr> slots_;
  sg::BarrierPtr world_;
  std::map<std::pair<int, int>, sg::BarrierPtr> barriers_;
  FlowTrainProcessResult result_;
};

StatusOr<std::string> run_in_child(const FlowTrainProcessSetup& setup, const FlowTrainProcessCosts& costs,
                                   int first_step) {
  TwinEngine twin;
  sg::Engine& engine = twin.engine();
  sg::NetZone* zone = sg::create_full_zone("machine");
  sg::Host* machine = zone->create_host("machine", kUnitsPerSecond)->set_core_count(setup.cores)->seal();
  // A GPU runs one context's kernels at a time: its ranks' device parts share its time.
  std::vector<sg::Host*> gpus;
  for (int g = 0; g < setup.gpus; ++g)
    gpus.push_back(zone->create_host("gpu" + std::to_string(g), kUnitsPerSecond)->seal());
  zone->seal();
  ProcessRun run(setup, costs, gpus, first_step);
  Status status = Status::ok();
  for (int r = 0; r < setup.world; ++r) {
    sg::Actor::create("rank-" + std::to_string(r), machine, [&run, &status, r] {
      Status s = run.rank(r);
      if (!s.is_ok() && status.is_ok()) status = s;
    });
  }
  engine.run();
  CT_RETURN_IF_ERROR(status);
  nlohmann::json j;
  j["step_s"] = run.result().step_s;
  j["cpu_s"] = run.result().cpu_s;
  for (const auto& [key, wall] : run.result().wall_s)
    j["wall_s"][key] = {wall.first, wall.second};
  return j.dump();
}

}  // namespace

Status validate(const FlowTrainProcessSetup& setup, const FlowTrainProcessCosts& costs) {
  if (setup.mode != "monolithic" && !split_mode(setup.mode)) {
    return Status::invalid_argument("mode '" + setup.mode + "': unknown (allowed: monolithic, disagg-sync, flowtrain)");
  }
  if (setup.cores < 1) return Status::invalid_argument("cores " + std::to_string(setup.cores) + ": must be >= 1");
  if (setup.gpus < 0) return Status::invalid_argument("gpus " + std::to_string(setup.gpus) + ": must be >= 0");
  if (setup.world < 1 || setup.steps < 1 || setup.global_batch < 1 || setup.pool_slots < 1) {
    return Status::invalid_argument("world size, steps, global batch and pool slots must be >= 1");
  }
  if (split_mode(setup.mode) && (setup.encoders < 1 || setup.encoders >= setup.world)) {
    return Status::invalid_argument("encoder workers " + std::to_string(setup.encoders) + " of " +
                                    std::to_string(setup.world) + " ranks: each side needs one at least");
  }
  std::vector<std::string> needed = {"flowtrain/data",     "flowtrain/encoder",   "flowtrain/encoder_backward",
                                     "flowtrain/backbone", "flowtrain/allreduce", "flowtrain/optimizer"};
  if (setup.mode == "disagg-sync") needed.push_back("flowtrain/transfer");
  if (setup.mode == "flowtrain") {
    needed.push_back("flowtrain/pool_put");
    needed.push_back("flowtrain/pool_take");
  }
  for (const std::string& key : needed) {
    if (costs.keys.count(key) == 0) {
      return Status::invalid_argument("costs: no '" + key + "' (the runs fitted do not have it; " + setup.mode +
                                      " needs it)");
    }
  }
  return Status::ok();
}

StatusOr<FlowTrainProcessResult> run_flowtrain_process_twin(const FlowTrainProcessSetup& setup,
                                                            const FlowTrainProcessCosts& costs, int first_step) {
  CT_RETURN_IF_ERROR(validate(setup, costs));
  auto payload = run_isolated([&] { return run_in_child(setup, costs, first_step); });
  if (!payload.is_ok()) return payload.status();
  const nlohmann::json j = nlohmann::json::parse(*payload);
  FlowTrainProcessResult r;
  r.step_s = j.at("step_s").get<std::vector<double>>();
  r.cpu_s = j.at("cpu_s").get<std::map<std::string, double>>();
  if (j.contains("wall_s")) {
    for (const auto& [key, wall] : j["wall_s"].items())
      r.wall_s[key] = {wall[0].get<double>(), wall[1].get<int64_t>()};
  }
  return r;
}

}  // namespace clustertwin::sim::flowtrain
