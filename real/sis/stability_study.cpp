#include "real/sis/stability_study.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <sstream>

#include "common/hash.h"
#include "common/statistics.h"
#include "common/text.h"
#include "real/sis/automaton_task.h"
#include "real/sis/policy_loss.h"

namespace clustertwin::real::sis {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Adam (Kingma and Ba 2015) on the policy's two tensors, in place.
class Adam {
 public:
  explicit Adam(double lr) : lr_(lr) {}
  void step(std::vector<at::Tensor>& params) {
    ++t_;
    if (m_.empty()) {
      for (const at::Tensor& p : params) {
        m_.push_back(at::zeros_like(p));
        v_.push_back(at::zeros_like(p));
      }
    }
    const double c1 = 1 - std::pow(kBeta1, static_cast<double>(t_)), c2 = 1 - std::pow(kBeta2, static_cast<double>(t_));
    at::NoGradGuard no_grad;
    for (size_t i = 0; i < params.size(); ++i) {
      const at::Tensor g = params[i].grad();
      m_[i].mul_(kBeta1).add_(g, 1 - kBeta1);
      v_[i].mul_(kBeta2).addcmul_(g, g, 1 - kBeta2);
      params[i].sub_(lr_ * (m_[i] / c1) / ((v_[i] / c2).sqrt() + kEps));
      params[i].grad().zero_();
    }
  }

 private:
  static constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;
  double lr_;
  int64_t t_ = 0;
  std::vector<at::Tensor> m_, v_;
};

bool known_condition(const std::string& c) {
  return c == "grpo" || c == "grpo+sis" || c == "grpo+sis-engine";
}

// A copy of the policy's two tensors as leaves with zeroed gradients, for Adam to update in place.
std::vector<at::Tensor> trainable(const TabularPolicy& policy) {
  std::vector<at::Tensor> params{policy.theta.clone().requires_grad_(true), policy.psi.clone().requires_grad_(true)};
  for (at::Tensor& p : params)
    p.mutable_grad() = at::zeros_like(p);
  return params;
}

// GRPO's advantages: each start state's group of rewards centred on its mean, over its population s.d.
at::Tensor group_advantages(const StabilityOptions& o, const Rollouts& r) {
  const at::Tensor rewards = r.rewards.view({o.states, o.group});
  const at::Tensor centred = rewards - rewards.mean(1, true);
  const at::Tensor std = centred.pow(2).mean(1, true).sqrt();  // the group's population s.d.
  return (centred / (std + 1e-6)).reshape({-1});
}

// One PPO epoch's batch: the current policy against the stale weights that drew the rollouts; with SIS, the
// full distributions too, and for the engine test the engine's own log-probabilities as SIS's reference.
LossBatch epoch_batch(const at::Tensor& lp_new, const at::Tensor& lp_old, const at::Tensor& lp_engine,
                      const Rollouts& r, const at::Tensor& advantages, bool sis, bool engine_test) {
  LossBatch b;
  b.tokens.logp_new = rollout_token_log_probs(lp_new, r);
  b.tokens.logp_old = rollout_token_log_probs(lp_old, r);
  b.advantages = advantages;
  if (sis) {
    b.tokens.full_logp_new = rollout_full_log_probs(lp_new.detach(), r);
    b.tokens.full_logp_old = rollout_full_log_probs(lp_old, r);
    if (engine_test) {
      b.sis_test = b.tokens;
      b.sis_test.logp_old = rollout_token_log_probs(lp_engine, r);
      b.sis_test.full_logp_old = rollout_full_log_probs(lp_engine, r);
    }
  }
  return b;
}

// PPO's clipped loss for one epoch of one step; its draws (SIS's acceptance test) seeded by the run and step.
LossOptions ppo_options(const StabilityOptions& o, uint64_t run_seed, int64_t step, int64_t epoch, bool sis) {
  LossOptions lo;
  lo.kind = LossKind::kPpo;
  lo.eps = o.clip;
  lo.sis = sis;
  lo.seed = mix64(run_seed ^ mix64(static_cast<uint64_t>(step) + 3));
  lo.epoch = epoch;
  return lo;
}

// A run that reached the target and ended below half its best success has collapsed too.
bool fell_from_best(const StabilityRun& run, double target) {
  double best = 0;
  for (double s : run.success) {
    if (std::isfinite(s)) best = std::max(best, s);
  }
  const double last = run.success.empty() ? kNaN : run.success.back();
  return best >= target && std::isfinite(last) && last < best / 2;
}

StabilityRun run_one(const StabilityOptions& o, const AutomatonTask& task, const std::string& condition, int64_t lag,
                     int64_t seed) {
  StabilityRun run;
  run.condition = condition;
  run.lag = lag;
  run.seed = seed;
  // Every condition and lag starts from the same weights and draws from the same stream: paired comparisons.
  const uint64_t run_seed = mix64(o.seed ^ mix64(static_cast<uint64_t>(seed) + 1));
  const TabularPolicy init = random_policy(task, o.policy_scale, run_seed);
  std::vector<at::Tensor> params = trainable(init);
  Adam adam(o.lr);
  at::Generator generator = at::detail::createCPUGenerator(mix64(run_seed ^ static_cast<uint64_t>(lag)));
  std::deque<TabularPolicy> history;  // the weights of the last lag + 1 steps, oldest first
  const at::Tensor start = at::full({o.states}, 1.0 / static_cast<double>(o.states), at::kDouble);
  const at::Tensor starts = at::arange(o.states, at::kLong).repeat_interleave(o.group);
  const bool sis = condition != "grpo", engine_test = condition == "grpo+sis-engine";
  double accepted = 0;
  int64_t draws = 0;
  for (int64_t step = 0; step < o.steps; ++step) {
    history.push_back({params[0].detach().clone(), params[1].detach().clone()});
    while (static_cast<int64_t>(history.size()) > lag + 1)
      history.pop_front();
    const at::Tensor lp_old = position_log_probs(history.front(), o.length);
    // The engine runs the stale weights with its own numerics: log_softmax is shift-invariant, so adding noise
    // to log-probabilities is adding it to logits.
    const at::Tensor lp_engine =
        at::log_softmax(lp_old + o.engine_noise * at::randn(lp_old.sizes(), generator, at::kDouble), -1);
    const Rollouts r = sample_rollouts(task, lp_engine, starts, generator);
    const at::Tensor advantages = group_advantages(o, r);
    for (int64_t epoch = 0; epoch < o.epochs; ++epoch) {
      const at::Tensor lp_new = position_log_probs({params[0], params[1]}, o.length);
      auto loss = policy_loss(epoch_batch(lp_new, lp_old, lp_engine, r, advantages, sis, engine_test),
                              ppo_options(o, run_seed, step, epoch, sis));
      if (!loss.is_ok()) {  // only on non-finite log-probabilities: the run has diverged
        run.collapsed = true;
        break;
      }
      loss->loss.backward();
      adam.step(params);
      if (sis) {
        accepted += loss->acceptance_rate;
        ++draws;
      }
    }
    const at::Tensor lp = position_log_probs({params[0].detach(), params[1].detach()}, o.length);
    const double j = expected_reward(task, lp, start).item<double>();
    const double success = success_probability(task, lp, start, o.success_reward);
    run.j.push_back(j);
    run.success.push_back(std::isfinite(success) ? success : kNaN);
    if (run.steps_to_target < 0 && success >= o.success_target) run.steps_to_target = step + 1;
    if (run.collapsed || !std::isfinite(success)) {
      run.collapsed = true;
      break;
    }
  }
  run.acceptance = draws > 0 ? accepted / static_cast<double>(draws) : kNaN;
  if (fell_from_best(run, o.success_target)) run.collapsed = true;
  return run;
}

}  // namespace

StabilityOptions quick_stability_options() {
  StabilityOptions o;
  o.lags = {0, 2, 8};
  o.steps = 120;
  return o;
}

Status validate(const StabilityOptions& o) {
  auto bad = [](const std::string& what) { return Status::invalid_argument(what); };
  if (o.lags.empty()) return bad("lags is empty");
  for (int64_t k : o.lags) {
    if (k < 0 || k > 64) return bad("lags " + std::to_string(k) + " is outside [0, 64]");
  }
  if (o.conditions.empty()) return bad("conditions is empty");
  for (const std::string& c : o.conditions) {
    if (!known_condition(c)) return bad("conditions '" + c + "': unknown (allowed: grpo, grpo+sis, grpo+sis-engine)");
  }
  if (o.seeds < 1 || o.seeds > 1000) return bad("seeds " + std::to_string(o.seeds) + " is outside [1, 1000]");
  if (o.steps < 1) return bad("steps " + std::to_string(o.steps) + " must be >= 1");
  if (o.length < 1 || o.length > 1024) return bad("length " + std::to_string(o.length) + " is outside [1, 1024]");
  if (o.vocab < 2 || o.vocab > 64) return bad("vocab " + std::to_string(o.vocab) + " is outside [2, 64]");
  if (o.states < 1 || o.states > 64) return bad("states " + std::to_string(o.states) + " is outside [1, 64]");
  if (o.group < 2) return bad("group " + std::to_string(o.group) + " must be >= 2 (advantages need a group)");
  if (o.epochs < 1) return bad("epochs " + std::to_string(o.epochs) + " must be >= 1");
  if (!(o.lr > 0)) return bad("lr " + format_number("%g", o.lr) + " must be > 0");
  if (!(o.engine_noise >= 0)) return bad("engine_noise " + format_number("%g", o.engine_noise) + " must be >= 0");
  if (!(o.success_reward > 0 && o.success_reward <= 1))
    return bad("success_reward " + format_number("%g", o.success_reward) + " is outside (0, 1]");
  if (!(o.success_target > 0 && o.success_target <= 1))
    return bad("success_target " + format_number("%g", o.success_target) + " is outside (0, 1]");
  return Status::ok();
}

StatusOr<StabilityStudy> run_stability_study(const StabilityOptions& o, const std::function<void(int, int)>& progress) {
  CT_RETURN_IF_ERROR(validate(o));
  auto task = make_automaton_task(o.vocab, o.states);
  if (!task.is_ok()) return task.status();
  StabilityStudy study;
  study.options = o;
  const int total = static_cast<int>(o.lags.size() * o.conditions.size() * static_cast<size_t>(o.seeds));
  int done = 0;
  for (int64_t lag : o.lags) {
    for (const std::string& condition : o.conditions) {
      std::vector<double> finals, bests, steps;
      StabilitySummary s;
      s.condition = condition;
      s.lag = lag;
      double acceptance = 0, collapsed = 0;
      for (int64_t seed = 0; seed < o.seeds; ++seed) {
        StabilityRun run = run_one(o, *task, condition, lag, seed);
        // A diverged run (non-finite weights) has no success left.
        const double last = run.success.empty() || !std::isfinite(run.success.back()) ? 0 : run.success.back();
        finals.push_back(last);
        double best = 0;
        for (double x : run.success)
          best = std::isfinite(x) ? std::max(best, x) : best;
        bests.push_back(best);
        if (run.steps_to_target > 0) steps.push_back(static_cast<double>(run.steps_to_target));
        acceptance += run.acceptance;
        collapsed += run.collapsed;
        study.runs.push_back(std::move(run));
        if (progress) progress(++done, total);
      }
      const SeedSummary f = summarise(finals);
      s.final_success = f.mean;
      // One seed has no interval: NaN here, null in the JSON, '-' in the table.
      s.final_low = f.n >= 2 ? f.low : kNaN;
      s.final_high = f.n >= 2 ? f.high : kNaN;
      s.best_success = summarise(bests).mean;
      s.reached = static_cast<int>(steps.size());
      std::sort(steps.begin(), steps.end());
      s.median_steps = steps.empty() ? kNaN : (steps[(steps.size() - 1) / 2] + steps[steps.size() / 2]) / 2;
      s.collapse_rate = collapsed / static_cast<double>(o.seeds);
      s.acceptance = acceptance / static_cast<double>(o.seeds);
      study.summary.push_back(s);
    }
  }
  return study;
}

std::string stability_curves_csv(const StabilityStudy& study) {
  std::ostringstream s;
  s << "step,condition,lag,seed,j,success\n";
  for (const StabilityRun& r : study.runs) {
    for (size_t i = 0; i < r.success.size(); ++i) {
      s << i + 1 << "," << r.condition << "," << r.lag << "," << r.seed << "," << format_number("%.6g", r.j[i]) << ","
        << format_number("%.6g", r.success[i]) << "\n";
    }
  }
  return s.str();
}

std::string stability_mean_csv(const StabilityStudy& study) {
  std::ostringstream s;
  s << "step,condition,lag,mean_success\n";
  const StabilityOptions& o = study.options;
  for (size_t first = 0; first < study.runs.size(); first += static_cast<size_t>(o.seeds)) {
    const StabilityRun& r0 = study.runs[first];
    for (int64_t step = 0; step < o.steps; ++step) {
      double sum = 0;
      for (int64_t seed = 0; seed < o.seeds; ++seed) {
        const StabilityRun& r = study.runs[first + static_cast<size_t>(seed)];
        const size_t i = static_cast<size_t>(step);
        sum += i < r.success.size() && std::isfinite(r.success[i]) ? r.success[i] : 0;
      }
      s << step + 1 << "," << r0.condition << "," << r0.lag << ","
        << format_number("%.6g", sum / static_cast<double>(o.seeds)) << "\n";
    }
  }
  return s.str();
}

std::string stability_summary_csv(const StabilityStudy& study) {
  std::ostringstream s;
  s << "condition,lag,final_success,final_low,final_high,best_success,reached,seeds,median_steps,collapse_rate,"
       "acceptance\n";
  for (const StabilitySummary& x : study.summary) {
    s << x.condition << "," << x.lag << "," << format_number("%.6g", x.final_success) << ","
      << (std::isfinite(x.final_low) ? format_number("%.6g", x.final_low) : "") << ","
      << (std::isfinite(x.final_high) ? format_number("%.6g", x.final_high) : "") << ","
      << format_number("%.6g", x.best_success) << "," << x.reached << "," << study.options.seeds << ","
      << format_number("%.6g", x.median_steps) << "," << format_number("%.6g", x.collapse_rate) << ","
      << format_number("%.6g", x.acceptance) << "\n";
  }
  return s.str();
}

nlohmann::json stability_json(const StabilityStudy& study) {
  const StabilityOptions& o = study.options;
  auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  nlohmann::json j;
  j["options"] = {{"lags", o.lags},
                  {"conditions", o.conditions},
                  {"seeds", o.seeds},
                  {"steps", o.steps},
                  {"length", o.length},
                  {"vocab", o.vocab},
                  {"states", o.states},
                  {"group", o.group},
                  {"epochs", o.epochs},
                  {"lr", o.lr},
                  {"clip", o.clip},
                  {"engine_noise", o.engine_noise},
                  {"success_reward", o.success_reward},
                  {"success_target", o.success_target},
                  {"seed", o.seed}};
  j["summary"] = nlohmann::json::array();
  for (const StabilitySummary& x : study.summary) {
    j["summary"].push_back({{"condition", x.condition},
                            {"lag", x.lag},
                            {"final_success", number(x.final_success)},
                            {"final_success_ci95", {number(x.final_low), number(x.final_high)}},
                            {"best_success", number(x.best_success)},
                            {"reached_target", x.reached},
                            {"median_steps_to_target", number(x.median_steps)},
                            {"collapse_rate", number(x.collapse_rate)},
                            {"acceptance", number(x.acceptance)}});
  }
  return j;
}

std::string stability_table(const StabilityStudy& study) {
  const StabilityOptions& o = study.options;
  std::ostringstream s;
  s << "GRPO stability with stale rollouts (lag k updates) and engine noise " << format_number("%g", o.engine_noise)
    << ", " << o.seeds << " seeds x " << o.steps << " steps; success = P(R >= " << format_number("%g", o.success_reward)
    << "), exact\n";
  s << "    k  condition          final success (95% CI)     best  reached " << format_number("%g", o.success_target)
    << "  median steps  collapse  accept\n";
  for (const StabilitySummary& x : study.summary) {
    char interval[40];
    if (std::isfinite(x.final_low) && std::isfinite(x.final_high))
      std::snprintf(interval, sizeof interval, "[%6.3f, %6.3f]", x.final_low, x.final_high);
    else
      std::snprintf(interval, sizeof interval, "%-16s", "[  one seed  ]");
    char line[220];
    std::snprintf(line, sizeof line, "  %3lld  %-16s %6.3f %s  %6.3f  %5d/%-3lld  %12s  %8.2f  %6s\n",
                  static_cast<long long>(x.lag), x.condition.c_str(), x.final_success, interval, x.best_success,
                  x.reached, static_cast<long long>(o.seeds),
                  std::isnan(x.median_steps) ? "-" : format_number("%.0f", x.median_steps).c_str(), x.collapse_rate,
                  std::isnan(x.acceptance) ? "-" : format_number("%.3f", x.acceptance).c_str());
    s << line;
  }
  return s.str();
}

std::string stability_gnuplot(const StabilityStudy& study, const std::string& mean_csv, const std::string& out_dir) {
  const auto& lags = study.options.lags;
  const int columns = lags.size() > 2 ? 3 : static_cast<int>(lags.size());
  const int rows = static_cast<int>((lags.size() + columns - 1) / columns);
  std::ostringstream s;
  s << "set datafile separator ','\nset terminal pngcairo size " << 480 * columns << "," << 380 * rows + 40
    << " noenhanced\nset grid\nset xlabel 'step'\nset ylabel 'success rate (exact)'\nset yrange [0:1]\n"
       "set key bottom right font ',8'\nset output '"
    << out_dir << "/stability_success.png'\nset multiplot layout " << rows << "," << columns
    << " title 'GRPO success with rollouts k updates old, mean over " << study.options.seeds << " seeds'\n";
  for (int64_t lag : lags) {
    s << "set title 'k = " << lag << "'\nplot ";
    bool first = true;
    for (const std::string& c : study.options.conditions) {
      s << (first ? "" : ", ") << "'" << mean_csv << "' using ((strcol(2) eq '" << c << "' && $3 == " << lag
        << ") ? $1 : NaN):4 with lines lw 2 title '" << c << "'";
      first = false;
    }
    s << "\n";
  }
  s << "unset multiplot\n";
  return s.str();
}

}  // namespace clustertwin::real::sis
