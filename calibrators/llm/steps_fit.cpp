#include "calibrators/llm/steps_fit.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "common/text.h"
#include "sim/core/simulator.h"

namespace clustertwin::calibrators::llm {

std::string_view step_unknown_name(StepUnknown u) {
  switch (u) {
    case StepUnknown::kGemm:
      return "gemm";
    case StepUnknown::kGemmFp8:
      return "gemm_fp8";
    case StepUnknown::kAttention:
      return "attention";
    case StepUnknown::kOverhead:
      return "overhead";
  }
  return "gemm";
}

namespace {

// The unknowns' starting values: the base's fitted entries, else DeviceRates' assumptions.
std::map<std::string, double> start_values(const cluster::ClusterProfile& base) {
  const models::transformer::DeviceRates defaults;
  std::map<std::string, double> v{{"gemm", defaults.gemm_efficiency},
                                  {"gemm_fp8", defaults.gemm_efficiency},
                                  {"attention", defaults.attention_efficiency},
                                  {"overhead", defaults.layer_overhead_s}};
  for (const auto& [name, value] : sim::llm::llm_fitted_values(base))
    v[name] = value;
  return v;
}

std::vector<StepUnknown> default_unknowns(const std::vector<StepRow>& rows) {
  const bool fp8 =
      std::any_of(rows.begin(), rows.end(), [](const StepRow& r) { return r.setup.split.precision == "fp8"; });
  const bool other =
      std::any_of(rows.begin(), rows.end(), [](const StepRow& r) { return r.setup.split.precision != "fp8"; });
  std::vector<StepUnknown> u;
  if (other) u.push_back(StepUnknown::kGemm);
  if (fp8) u.push_back(StepUnknown::kGemmFp8);
  u.push_back(StepUnknown::kAttention);
  u.push_back(StepUnknown::kOverhead);
  while (2 * u.size() > rows.size() && u.size() > 1)  // two rows an unknown at least
    u.pop_back();
  return u;
}

// The fit's coordinates: inverse efficiencies and the overhead, in which the step is piecewise linear.
struct Coordinates {
  std::vector<StepUnknown> unknowns;
  std::map<std::string, double> fixed;  // every value, the unknowns' overwritten by to_values

  std::map<std::string, double> to_values(const std::vector<double>& x) const {
    std::map<std::string, double> v = fixed;
    for (size_t j = 0; j < unknowns.size(); ++j) {
      const std::string name(step_unknown_name(unknowns[j]));
      v[name] = unknowns[j] == StepUnknown::kOverhead ? x[j] : 1 / x[j];
    }
    return v;
  }
  std::vector<double> from_values(const std::map<std::string, double>& v) const {
    std::vector<double> x;
    for (StepUnknown u : unknowns) {
      const double value = v.at(std::string(step_unknown_name(u)));
      x.push_back(u == StepUnknown::kOverhead ? value : 1 / value);
    }
    return x;
  }
  void clamp(std::vector<double>& x) const {
    for (size_t j = 0; j < unknowns.size(); ++j)
      x[j] = unknowns[j] == StepUnknown::kOverhead ? std::clamp(x[j], 0.0, 0.1) : std::clamp(x[j], 1.0, 50.0);
  }
  double difference_step(size_t j, double x) const {
    return unknowns[j] == StepUnknown::kOverhead ? 1e-6 + 1e-3 * x : 1e-3 * x;
  }
};

// Solves the k x k system a d = b (Gaussian elimination, partial pivoting); false when singular.
bool solve(std::vector<std::vector<double>> a, std::vector<double> b, std::vector<double>* d) {
  const size_t k = b.size();
  for (size_t c = 0; c < k; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < k; ++r)
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    if (std::abs(a[pivot][c]) < 1e-300) return false;
    std::swap(a[c], a[pivot]);
    std::swap(b[c], b[pivot]);
    for (size_t r = c + 1; r < k; ++r) {
      const double f = a[r][c] / a[c][c];
      for (size_t j = c; j < k; ++j)
        a[r][j] -= f * a[c][j];
      b[r] -= f * b[c];
    }
  }
  d->assign(k, 0.0);
  for (size_t c = k; c-- > 0;) {
    double s = b[c];
    for (size_t j = c + 1; j < k; ++j)
      s -= a[c][j] * (*d)[j];
    (*d)[c] = s / a[c][c];
  }
  return true;
}

// The normal equations of the rows in `keep`: J^T J and J^T r.
struct Normal {
  std::vector<std::vector<double>> a;
  std::vector<double> g;
};
Normal normal_equations(const std::vector<std::vector<double>>& jac, const std::vector<double>& r,
                        const std::vector<char>& keep) {
  const size_t k = jac.empty() ? 0 : jac[0].size();
  Normal n{std::vector<std::vector<double>>(k, std::vector<double>(k, 0.0)), std::vector<double>(k, 0.0)};
  for (size_t i = 0; i < r.size(); ++i) {
    if (!keep[i]) continue;
    for (size_t p = 0; p < k; ++p) {
      n.g[p] += jac[i][p] * r[i];
      for (size_t q = 0; q < k; ++q)
        n.a[p][q] += jac[i][p] * jac[i][q];
    }
  }
  return n;
}

// The damped step -(A + lambda diag A + tiny)^-1 g.
std::vector<double> damped_step(const Normal& n, double lambda) {
  std::vector<std::vector<double>> a = n.a;
  std::vector<double> b(n.g.size());
  for (size_t p = 0; p < a.size(); ++p) {
    a[p][p] += lambda * a[p][p] + 1e-12;
    b[p] = -n.g[p];
  }
  std::vector<double> d;
  if (!solve(a, b, &d)) d.assign(b.size(), 0.0);
  return d;
}

double squared(const std::vector<double>& r) {
  double s = 0;
  for (double v : r)
    s += v * v;
  return s;
}

class Fitter {
 public:
  Fitter(const std::vector<StepRow>& rows, const cluster::ClusterProfile& base, const StepsFitOptions& o)
      : rows_(rows), base_(base), options_(o) {}

  StatusOr<std::vector<double>> residuals(const std::vector<double>& x) {
    auto predicted = predict_steps(rows_, sim::llm::with_llm_values(base_, coords_.to_values(x)), options_.parallel);
    if (!predicted.is_ok()) return predicted.status();
    simulations_ += static_cast<int>(rows_.size());
    std::vector<double> r(rows_.size());
    for (size_t i = 0; i < rows_.size(); ++i)
      r[i] = (*predicted)[i] / rows_[i].step_s - 1;
    return r;
  }

  StatusOr<std::vector<std::vector<double>>> jacobian(const std::vector<double>& x, const std::vector<double>& r) {
    std::vector<std::vector<double>> jac(rows_.size(), std::vector<double>(x.size(), 0.0));
    for (size_t j = 0; j < x.size(); ++j) {
      std::vector<double> moved = x;
      const double h = coords_.difference_step(j, x[j]);
      moved[j] += h;
      auto rm = residuals(moved);
      if (!rm.is_ok()) return rm.status();
      for (size_t i = 0; i < rows_.size(); ++i)
        jac[i][j] = ((*rm)[i] - r[i]) / h;
    }
    return jac;
  }

  StatusOr<StepsFit> fit() {
    coords_.unknowns = options_.unknowns.empty() ? default_unknowns(rows_) : options_.unknowns;
    coords_.fixed = start_values(base_);
    std::vector<double> x = coords_.from_values(coords_.fixed);
    auto r = residuals(x);
    if (!r.is_ok()) return r.status();
    std::vector<char> all(rows_.size(), 1);
    double lambda = 1e-3;
    int iterations = 0;
    std::vector<std::vector<double>> jac;
    for (; iterations < options_.max_iterations; ++iterations) {
      auto j = jacobian(x, *r);
      if (!j.is_ok()) return j.status();
      jac = std::move(j).value();
      const Normal n = normal_equations(jac, *r, all);
      bool accepted = false;
      double gain = 0;
      for (int attempt = 0; attempt < 8 && !accepted; ++attempt, lambda *= 10) {
        std::vector<double> next = x;
        const std::vector<double> d = damped_step(n, lambda);
        for (size_t p = 0; p < x.size(); ++p)
          next[p] += d[p];
        coords_.clamp(next);
        auto rn = residuals(next);
        if (!rn.is_ok()) return rn.status();
        if (squared(*rn) < squared(*r)) {
          gain = squared(*r) - squared(*rn);
          x = next;
          r = std::move(rn);
          accepted = true;
          lambda = std::max(lambda / 100, 1e-9);
        }
      }
      if (options_.progress) options_.progress(iterations + 1, std::sqrt(squared(*r) / static_cast<double>(r->size())));
      // Done when a step gains less than 0.1% of the squared error (or nothing: the data are the twin's own).
      if (!accepted || gain < 1e-3 * squared(*r) || squared(*r) < 1e-20) break;
    }
    auto final_jac = jacobian(x, *r);
    if (!final_jac.is_ok()) return final_jac.status();
    return result(x, *r, *final_jac, iterations);
  }

 private:
  StatusOr<StepsFit> result(const std::vector<double>& x, const std::vector<double>& r,
                            const std::vector<std::vector<double>>& jac, int iterations) {
    StepsFit fit;
    const std::map<std::string, double> all = coords_.to_values(x);
    for (StepUnknown u : coords_.unknowns) {
      fit.fitted.emplace_back(step_unknown_name(u));
      fit.values[fit.fitted.back()] = all.at(fit.fitted.back());
    }
    fit.profile = sim::llm::with_llm_values(base_, fit.values);
    fit.residual = r;
    for (size_t i = 0; i < rows_.size(); ++i)
      fit.predicted_s.push_back(rows_[i].step_s * (1 + r[i]));
    CT_RETURN_IF_ERROR(leave_one_out(x, r, jac, &fit));
    fit.iterations = iterations;
    fit.simulations = simulations_;
    return fit;
  }

  // Each row's error at one Gauss-Newton step from the fit on the other rows.
  Status leave_one_out(const std::vector<double>& x, const std::vector<double>& r,
                       const std::vector<std::vector<double>>& jac, StepsFit* fit) {
    std::vector<cluster::ClusterProfile> profiles;
    for (size_t i = 0; i < rows_.size(); ++i) {
      std::vector<char> keep(rows_.size(), 1);
      keep[i] = 0;
      const std::vector<double> d = damped_step(normal_equations(jac, r, keep), 1e-9);
      std::vector<double> xi = x;
      for (size_t p = 0; p < x.size(); ++p)
        xi[p] += d[p];
      coords_.clamp(xi);
      profiles.push_back(sim::llm::with_llm_values(base_, coords_.to_values(xi)));
    }
    fit->leave_one_out.assign(rows_.size(), 0.0);
    for (size_t i = 0; i < rows_.size(); ++i) {
      auto predicted = predict_steps({rows_[i]}, profiles[i], 1);
      if (!predicted.is_ok()) return predicted.status();
      ++simulations_;
      fit->leave_one_out[i] = (*predicted)[0] / rows_[i].step_s - 1;
    }
    return Status::ok();
  }

  const std::vector<StepRow>& rows_;
  const cluster::ClusterProfile& base_;
  const StepsFitOptions& options_;
  Coordinates coords_;
  int simulations_ = 0;
};

}  // namespace

StatusOr<std::vector<double>> predict_steps(const std::vector<StepRow>& rows, const cluster::ClusterProfile& profile,
                                            int parallel) {
  std::vector<std::unique_ptr<sim::PlanJob>> jobs;
  std::vector<sim::SimJob> sims;
  for (const StepRow& row : rows) {
    const std::string where = "row " + std::to_string(row.line - 1) + " ('" + row.id + "')";
    Status workers = cluster::check_worker_count(profile, row.workers);
    if (!workers.is_ok()) return workers.with_context(where);
    auto job = sim::llm::make_llm_job(row.setup, profile, sim::llm::llm_sim_options(row.workers));
    if (!job.is_ok()) return job.status().with_context(where);
    jobs.push_back(std::move(job).value());
    sims.push_back(sim::SimJob{&jobs.back()->plan(), &jobs.back()->profile(), jobs.back()->options()});
  }
  std::vector<double> steps;
  auto results = sim::simulate_many(sims, parallel);
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].is_ok()) return results[i].status().with_context("row '" + rows[i].id + "'");
    steps.push_back(results[i]->step_time_s);
  }
  return steps;
}

StatusOr<StepsFit> fit_steps(const std::vector<StepRow>& rows, const cluster::ClusterProfile& base,
                             const StepsFitOptions& options) {
  if (rows.empty()) return Status::invalid_argument("no rows to fit");
  Fitter fitter(rows, base, options);
  return fitter.fit();
}

}  // namespace clustertwin::calibrators::llm
