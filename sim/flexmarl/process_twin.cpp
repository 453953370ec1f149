#include "sim/flexmarl/process_twin.h"

#include <bit>
#include <memory>
#include <nlohmann/json.hpp>
#include <simgrid/s4u.hpp>

#include "sim/core/isolated.h"
#include "sim/core/platform.h"

namespace clustertwin::sim::flexmarl {
namespace {

namespace sg = simgrid::s4u;
namespace cf = clustertwin::models::flexmarl;

constexpr double kUnitsPerSecond = 1e9;  // a core's speed: an exec of d CPU seconds is d x 1e9 units

// A posted job as a simulated worker runs it.
struct Posted {
  cf::Job job;
  std::string key;
  double cpu_s = 0;
  double collective_s = 0;
  double arrives_s = 0;                         // when the worker can read it
  std::vector<std::vector<int64_t>> responses;  // generate
  bool stop = false;
};

struct Finished {
  int rank = 0;
  double arrives_s = 0;
  cf::Completion completion;
};

// A response of `tokens` tokens as the engine would end it: agents that stop
// at kEnd end with it when they stop before their budget.
std::vector<int64_t> synthetic_response(const cf::TaskSpec& task, int agent, int64_t tokens, int budget) {
  std::vector<int64_t> r(static_cast<size_t>(std::max<int64_t>(tokens, 0)), 1);
  if (!r.empty() && task.agents.at(static_cast<size_t>(agent)).stops_at_end && tokens < budget) r.back() = cf::kEnd;
  return r;
}

class ProcessRun : public cf::JobSink {
 public:
  ProcessRun(const ProcessTwinSetup& setup, const ProcessTwinCosts& costs) : setup_(setup), costs_(costs) {}

  Status post(const cf::Job& job) override {
    auto p = std::make_unique<Posted>();
    p->job = job;
    p->key = process_cost_key(job.kind, job.agent);
    auto it = costs_.keys.find(p->key);
    if (it == costs_.keys.end()) {
      return Status::invalid_argument("process twin: no cost for '" + p->key +
                                      "' (the costs' traces never ran that job: add a run of a framework that does)");
    }
    const cf::Orchestrator& o = *orchestrator_;
    double size = it->second.mean_size;
    // The recorded run's task: the small one, the only one its calibration reads (calibrators/flexmarl/process_fit.h).
    const cf::TaskSpec& task = setup_.orchestrator.task;
    const double linear = static_cast<double>(cf::task_linear_params(task, job.agent));
    if (job.kind == cf::JobKind::kGenerate) {
      std::vector<int64_t> prompts, responses;
      for (int i : job.samples) {
        const cf::TaskSample& s = o.samples()[static_cast<size_t>(i)];
        const int64_t q = s.id.input - static_cast<int64_t>(step_) * setup_.orchestrator.queries;
        const int64_t tokens =
            setup_.response_tokens[static_cast<size_t>(step_)][static_cast<size_t>(s.agent)]
                                  [static_cast<size_t>(q * setup_.orchestrator.group + s.id.trajectory)];
        prompts.push_back(static_cast<int64_t>(s.prompt.size()));
        responses.push_back(tokens);
        p->responses.push_back(synthetic_response(task, s.agent, tokens, s.budget));
      }
      size = 2 * linear * static_cast<double>(cf::generate_positions(prompts, responses));
    } else if (job.kind == cf::JobKind::kTrain) {
      std::vector<int64_t> lengths;
      for (int i : job.samples) {
        const cf::TaskSample& s = o.samples()[static_cast<size_t>(i)];
        lengths.push_back(static_cast<int64_t>(s.prompt.size() + s.response.size()));
      }
      size = 6 * linear * static_cast<double>(cf::train_positions(lengths));
    } else if (job.kind == cf::JobKind::kLoad) {
      size = 8.0 * static_cast<double>(cf::task_params(task, job.agent));
    } else if (job.kind == cf::JobKind::kStep) {
      size = std::popcount(static_cast<uint64_t>(job.members)) > 1
                 ? 8.0 * static_cast<double>(cf::task_params(task, job.agent))
                 : 0.0;
    }
    p->cpu_s = std::max(0.0, it->second.latency_s + it->second.seconds_per_unit * size);
    p->collective_s = std::max(0.0, it->second.collective_s);
    // The controller builds and sends the message.
    if (costs_.controller_s_per_job > 0) sg::this_actor::execute(costs_.controller_s_per_job * kUnitsPerSecond);
    p->arrives_s = sg::Engine::get_clock() + costs_.message_latency_s;
    sg::Mailbox::by_name("worker-" + std::to_string(job.rank))->put_init(p.release(), 0)->detach();
    return Status::ok();
  }

  void worker(int rank) {
    sg::Mailbox* in = sg::Mailbox::by_name("worker-" + std::to_string(rank));
    sg::Mailbox* out = sg::Mailbox::by_name("controller");
    for (;;) {
      std::unique_ptr<Posted> p(in->get<Posted>());
      if (p->stop) return;
      const cf::Job& job = p->job;
      if (p->arrives_s > sg::Engine::get_clock()) sg::this_actor::sleep_until(p->arrives_s);
      const double start = sg::Engine::get_clock();
      const bool collective = job.kind == cf::JobKind::kStep && std::popcount(static_cast<uint64_t>(job.members)) > 1;
      if (collective) {
        // An all-reduce: the members meet (one barrier per agent and version).
        auto key = std::make_pair(job.agent, job.version);
        auto it = barriers_.find(key);
        if (it == barriers_.end()) {
          it = barriers_.emplace(key, sg::Barrier::create(std::popcount(static_cast<uint64_t>(job.members)))).first;
        }
        sg::BarrierPtr barrier = it->second;
        barrier->wait();
      }
      sg::this_actor::execute(p->cpu_s * kUnitsPerSecond);
      if (collective && p->collective_s > 0) sg::this_actor::sleep_for(p->collective_s);
      result_.jobs.push_back(ProcessJob{rank, step_, p->key, start, sg::Engine::get_clock(), p->cpu_s});
      result_.worker_cpu_s += p->cpu_s;
      auto f = std::make_unique<Finished>();
      f->rank = rank;
      f->arrives_s = sg::Engine::get_clock() + costs_.message_latency_s;
      f->completion.kind = job.kind;
      f->completion.version = job.kind == cf::JobKind::kStep ? job.version + 1 : job.version;
      f->completion.responses = std::move(p->responses);
      out->put_init(f.release(), 0)->detach();
    }
  }

  Status controller() {
    auto o = cf::Orchestrator::create(setup_.orchestrator);
    if (!o.is_ok()) return o.status();
    orchestrator_ = std::move(*o);
    sg::Mailbox* in = sg::Mailbox::by_name("controller");
    CT_RETURN_IF_ERROR(orchestrator_->start(*this));
    for (step_ = 0; step_ < setup_.steps; ++step_) {
      const double start = sg::Engine::get_clock();
      result_.step_start_s.push_back(start);
      CT_RETURN_IF_ERROR(orchestrator_->begin_step(step_, *this));
      while (!orchestrator_->step_done()) {
        std::unique_ptr<Finished> f(in->get<Finished>());
        if (f->arrives_s > sg::Engine::get_clock()) sg::this_actor::sleep_until(f->arrives_s);
        CT_RETURN_IF_ERROR(orchestrator_->complete(f->rank, std::move(f->completion), *this));
      }
      result_.step_s.push_back(sg::Engine::get_clock() - start);
    }
    result_.posted = orchestrator_->counts().jobs;
    stop_workers();
    return Status::ok();
  }

  void stop_workers() {
    for (int r = 1; r <= setup_.orchestrator.workers; ++r) {
      auto p = std::make_unique<Posted>();
      p->stop = true;
      sg::Mailbox::by_name("worker-" + std::to_string(r))->put_init(p.release(), 0)->detach();
    }
  }

  ProcessTwinResult& result() { return result_; }

 private:
  const ProcessTwinSetup& setup_;
  const ProcessTwinCosts& costs_;
  std::optional<cf::Orchestrator> orchestrator_;
  int step_ = 0;
  std::map<std::pair<int, int64_t>, sg::BarrierPtr> barriers_;
  ProcessTwinResult result_;
};

nlohmann::json to_json(const ProcessTwinResult& r) {
  nlohmann::json j;
  j["step_s"] = r.step_s;
  j["step_start_s"] = r.step_start_s;
  j["worker_cpu_s"] = r.worker_cpu_s;
  j["posted"] = r.posted;
  j["jobs"] = nlohmann::json::array();
  for (const ProcessJob& p : r.jobs)
    j["jobs"].push_back({p.rank, p.step, p.cost_key, p.start_s, p.end_s, p.cpu_s});
  return j;
}

ProcessTwinResult from_json(const nlohmann::json& j) {
  ProcessTwinResult r;
  r.step_s = j.at("step_s").get<std::vector<double>>();
  r.step_start_s = j.at("step_start_s").get<std::vector<double>>();
  r.worker_cpu_s = j.at("worker_cpu_s");
  r.posted = j.at("posted");
  for (const auto& p : j.at("jobs")) {
    r.jobs.push_back(ProcessJob{p.at(0).get<int>(), p.at(1).get<int>(), p.at(2).get<std::string>(),
                                p.at(3).get<double>(), p.at(4).get<double>(), p.at(5).get<double>()});
  }
  return r;
}

StatusOr<std::string> run_in_child(const ProcessTwinSetup& setup, const ProcessTwinCosts& costs) {
  TwinEngine twin;
  sg::Engine& engine = twin.engine();
  sg::NetZone* zone = sg::create_full_zone("machine");
  sg::Host* machine = zone->create_host("machine", kUnitsPerSecond)->set_core_count(setup.cores)->seal();
  zone->seal();
  ProcessRun run(setup, costs);
  Status status = Status::ok();
  sg::Actor::create("controller", machine, [&] {
    status = run.controller();
    if (!status.is_ok()) run.stop_workers();
  });
  for (int r = 1; r <= setup.orchestrator.workers; ++r)
    sg::Actor::create("worker-" + std::to_string(r), machine, [&run, r] { run.worker(r); });
  engine.run();
  CT_RETURN_IF_ERROR(status);
  return to_json(run.result()).dump();
}

}  // namespace

std::string process_cost_key(cf::JobKind kind, int agent) {
  return std::string("flexmarl/") + cf::job_kind_name(kind) + "/" + cf::task_agent_name(agent);
}

Status validate(const ProcessTwinSetup& setup, const ProcessTwinCosts& costs) {
  if (setup.cores < 1) return Status::invalid_argument("cores " + std::to_string(setup.cores) + ": must be >= 1");
  if (setup.steps < 1) return Status::invalid_argument("steps " + std::to_string(setup.steps) + ": must be >= 1");
  if (setup.response_tokens.size() < static_cast<size_t>(setup.steps)) {
    return Status::invalid_argument("config.response_tokens: " + std::to_string(setup.response_tokens.size()) +
                                    " recorded steps for " + std::to_string(setup.steps) + " simulated");
  }
  const size_t batch = static_cast<size_t>(setup.orchestrator.queries) * static_cast<size_t>(setup.orchestrator.group);
  for (size_t k = 0; k < static_cast<size_t>(setup.steps); ++k) {
    for (size_t a = 0; a < setup.response_tokens[k].size(); ++a) {
      if (setup.response_tokens[k][a].size() != batch) {
        return Status::invalid_argument("config.response_tokens[" + std::to_string(k) + "][" + std::to_string(a) +
                                        "]: " + std::to_string(setup.response_tokens[k][a].size()) +
                                        " lengths for a batch of " + std::to_string(batch));
      }
    }
  }
  if (!(costs.controller_s_per_job >= 0) || !(costs.message_latency_s >= 0)) {
    return Status::invalid_argument("controller CPU per job " + std::to_string(costs.controller_s_per_job) +
                                    " s, message latency " + std::to_string(costs.message_latency_s) +
                                    " s: must be >= 0");
  }
  return cf::Orchestrator::create(setup.orchestrator).status();
}

StatusOr<ProcessTwinResult> run_process_twin(const ProcessTwinSetup& setup, const ProcessTwinCosts& costs) {
  CT_RETURN_IF_ERROR(validate(setup, costs));
  auto payload = run_isolated([&] { return run_in_child(setup, costs); });
  if (!payload.is_ok()) return payload.status();
  return from_json(nlohmann::json::parse(*payload));
}

}  // namespace clustertwin::sim::flexmarl
