#include "real/sis/estimator_study.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "common/hash.h"
#include "common/text.h"
#include "real/sis/estimators.h"

namespace clustertwin::real::sis {
namespace {

// Replicates drawn and scored together: bounds the [chunk x batch, T, V] tensors to a few tens of MB.
constexpr int64_t kChunk = 50;

// Running sums of one estimator over the replicates of a cell.
struct Accumulator {
  at::Tensor sum;  // [P]
  double sum_sq = 0, err_sq = 0, cosine = 0, ess = 0, accepted = 0;
  int64_t n = 0;
};

// One cell of the grid: the target policy pi at one length against one drifted behaviour policy mu.
struct Cell {
  int64_t length = 0;
  double drift = 0;
  at::Tensor exact;                         // pi's exact gradient [P]
  double norm_sq = 0;                       // ||exact||^2: bias, variance and MSE are relative to it
  at::Tensor lp_pi, lp_mu;                  // per-position log-probabilities
  double kl = 0;                            // exact mean per-token KL(mu || pi)
  double baseline_pi = 0, baseline_mu = 0;  // subtracted from the rewards of pi's and of mu's rollouts
  uint64_t seed = 0;                        // the cell's generator, and each chunk's draws
};

EstimatorOptions estimator_options_of(const EstimatorStudyOptions& o) {
  EstimatorOptions e;
  e.cap = o.cap;
  e.icepop_low = o.icepop_low;
  e.icepop_high = o.icepop_high;
  e.top_k = o.top_k;
  return e;
}

// Adds one chunk of an estimator's per-replicate gradients `g` [chunk, P], from coefficients `c`, to `a`.
void accumulate(const Cell& cell, const at::Tensor& g, const at::Tensor& c, double rate, int64_t chunk,
                Accumulator* a) {
  a->sum = a->sum.defined() ? a->sum + g.sum(0) : g.sum(0);
  a->sum_sq += g.pow(2).sum().item<double>();
  a->err_sq += (g - cell.exact).pow(2).sum().item<double>();
  a->cosine +=
      (at::matmul(g, cell.exact) / (g.norm(2, {1}) * std::sqrt(cell.norm_sq)).clamp_min(1e-300)).sum().item<double>();
  const at::Tensor per = c.reshape({chunk, -1});
  const at::Tensor kish = per.sum(1).pow(2) / (static_cast<double>(per.size(1)) * per.pow(2).sum(1));
  a->ess += at::nan_to_num(kish, 0.0).sum().item<double>();
  a->accepted += std::isnan(rate) ? rate : rate * static_cast<double>(chunk);
  a->n += chunk;
}

// Every estimator over the cell's replicates, kChunk at a time: mu's batch for the off-policy estimators, a
// batch of pi's own for the on-policy one.
StatusOr<std::vector<Accumulator>> run_cell(const EstimatorStudyOptions& o, const AutomatonTask& task,
                                            const EstimatorOptions& estimator_options, const Cell& cell) {
  const auto& estimators = all_estimators();
  at::Generator generator = at::detail::createCPUGenerator(cell.seed);
  std::vector<Accumulator> acc(estimators.size());
  for (int64_t first = 0; first < o.replicates; first += kChunk) {
    const int64_t chunk = std::min(kChunk, o.replicates - first), n = chunk * o.batch;
    auto starts = [&] { return at::randint(o.states, {n}, generator, at::TensorOptions().dtype(at::kLong)); };
    OffPolicyBatch batch{sample_rollouts(task, cell.lp_mu, starts(), generator), cell.lp_pi, cell.lp_mu};
    const Rollouts on_policy = sample_rollouts(task, cell.lp_pi, starts(), generator);
    for (size_t e = 0; e < estimators.size(); ++e) {
      double rate = std::numeric_limits<double>::quiet_NaN();
      const uint64_t draw = mix64(cell.seed ^ mix64(static_cast<uint64_t>(first) + 7));
      auto c = estimator_coefficients(estimators[e], batch, estimator_options, draw, &rate);
      if (!c.is_ok()) return c.status();
      const Rollouts& r = estimators[e] == Estimator::kOnPolicy ? on_policy : batch.rollouts;
      const double b = estimators[e] == Estimator::kOnPolicy ? cell.baseline_pi : cell.baseline_mu;
      const at::Tensor g = score_gradients(task, cell.lp_pi, r, *c, r.rewards - b, chunk);  // [chunk, P]
      accumulate(cell, g, *c, rate, chunk, &acc[e]);
    }
  }
  return acc;
}

// One estimator's row of the cell, from its sums over the replicates.
EstimatorRow estimator_row(const Cell& cell, Estimator estimator, const Accumulator& a) {
  const double r = static_cast<double>(a.n);
  const at::Tensor mean = a.sum / r;
  const double trace_cov = (a.sum_sq - r * mean.pow(2).sum().item<double>()) / (r - 1);
  const double mean_err_sq = (mean - cell.exact).pow(2).sum().item<double>();
  EstimatorRow row;
  row.length = cell.length;
  row.drift = cell.drift;
  row.kl = cell.kl;
  row.estimator = estimator_name(estimator);
  row.bias = std::sqrt(std::max(0.0, mean_err_sq - trace_cov / r) / cell.norm_sq);
  row.bias_se = std::sqrt(trace_cov / r / cell.norm_sq);
  row.variance = trace_cov / cell.norm_sq;
  row.mse = a.err_sq / r / cell.norm_sq;
  row.cosine = a.cosine / r;
  row.ess = a.ess / r;
  row.acceptance = a.accepted / r;
  return row;
}

// Whether SIS (exact envelope) lands between token IS and sequence IS, from the cell's rows: the last `count`.
BetweenVerdict between_verdict(const Cell& cell, const std::vector<EstimatorRow>& rows, size_t count) {
  auto find = [&](const char* name) -> const EstimatorRow& {
    for (size_t i = rows.size() - count; i < rows.size(); ++i) {
      if (rows[i].estimator == name) return rows[i];
    }
    return rows.back();
  };
  const EstimatorRow &sis = find("sis-exact"), &token = find("token-is"), &seq = find("seq-is");
  auto between = [](double x, double a, double b) { return x >= std::min(a, b) && x <= std::max(a, b); };
  return {cell.length,
          cell.drift,
          between(sis.bias, token.bias, seq.bias),
          between(sis.variance, token.variance, seq.variance),
          sis.bias,
          token.bias,
          seq.bias,
          sis.variance,
          token.variance,
          seq.variance};
}

}  // namespace

EstimatorStudyOptions quick_estimator_options() {
  EstimatorStudyOptions o;
  o.drifts = {0.05, 0.3, 1.0};
  o.replicates = 200;
  return o;
}

Status validate(const EstimatorStudyOptions& o) {
  if (o.lengths.empty()) return Status::invalid_argument("lengths is empty");
  for (int64_t t : o.lengths) {
    if (t < 1 || t > 4096) return Status::invalid_argument("lengths " + std::to_string(t) + " is outside [1, 4096]");
  }
  if (o.drifts.empty()) return Status::invalid_argument("drifts is empty");
  for (double d : o.drifts) {
    if (!(d >= 0) || d > 10)
      return Status::invalid_argument("drifts " + format_number("%g", d) + " is outside [0, 10]");
  }
  if (o.replicates < 2) return Status::invalid_argument("replicates " + std::to_string(o.replicates) + " must be >= 2");
  if (o.batch < 1 || o.batch > 4096)
    return Status::invalid_argument("batch " + std::to_string(o.batch) + " is outside [1, 4096]");
  const int64_t longest = *std::max_element(o.lengths.begin(), o.lengths.end());
  if (o.batch * longest > (int64_t{1} << 20)) {
    return Status::invalid_argument("batch " + std::to_string(o.batch) + " x the longest of lengths " +
                                    std::to_string(longest) + " is more than 1,048,576 tokens per batch");
  }
  if (o.vocab < 2 || o.vocab > 64)
    return Status::invalid_argument("vocab " + std::to_string(o.vocab) + " is outside [2, 64]");
  if (o.states < 1 || o.states > 64)
    return Status::invalid_argument("states " + std::to_string(o.states) + " is outside [1, 64]");
  if (o.top_k < 1 || o.top_k > o.vocab)
    return Status::invalid_argument("top_k " + std::to_string(o.top_k) + " is outside [1, " + std::to_string(o.vocab) +
                                    "] (the vocabulary)");
  return Status::ok();
}

StatusOr<EstimatorStudy> run_estimator_study(const EstimatorStudyOptions& o,
                                             const std::function<void(int, int)>& progress) {
  CT_RETURN_IF_ERROR(validate(o));
  auto task = make_automaton_task(o.vocab, o.states);
  if (!task.is_ok()) return task.status();
  EstimatorStudy study;
  study.options = o;
  const TabularPolicy pi = random_policy(*task, o.policy_scale, o.seed);
  const at::Tensor start = at::full({o.states}, 1.0 / static_cast<double>(o.states), at::kDouble);
  const auto& estimators = all_estimators();
  const EstimatorOptions estimator_options = estimator_options_of(o);
  const int total = static_cast<int>(o.lengths.size() * o.drifts.size());
  int done = 0;
  for (int64_t length : o.lengths) {
    Cell cell;
    cell.length = length;
    cell.exact = exact_gradient(*task, pi, length);
    cell.norm_sq = cell.exact.pow(2).sum().item<double>();
    cell.lp_pi = position_log_probs(pi, length).detach();
    for (double drift : o.drifts) {
      cell.drift = drift;
      // The same direction of drift at every size, so that drifts order the behaviour policies.
      const TabularPolicy mu = drifted_policy(pi, drift, o.seed + 1);
      cell.lp_mu = position_log_probs(mu, length).detach();
      cell.kl = per_token_kl(*task, cell.lp_mu, cell.lp_pi, start);
      cell.baseline_mu = o.baseline ? expected_reward(*task, cell.lp_mu, start).item<double>() : 0;
      cell.baseline_pi = o.baseline ? expected_reward(*task, cell.lp_pi, start).item<double>() : 0;
      cell.seed = mix64(o.seed ^ mix64(static_cast<uint64_t>(done) + 1));
      auto acc = run_cell(o, *task, estimator_options, cell);
      if (!acc.is_ok()) return acc.status();
      for (size_t e = 0; e < estimators.size(); ++e)
        study.rows.push_back(estimator_row(cell, estimators[e], (*acc)[e]));
      study.verdicts.push_back(between_verdict(cell, study.rows, estimators.size()));
      if (progress) progress(++done, total);
    }
  }
  return study;
}

std::string estimator_csv(const EstimatorStudy& study) {
  std::ostringstream s;
  s << "length,drift,kl,estimator,bias,bias_se,variance,mse,cosine,ess,acceptance\n";
  for (const EstimatorRow& r : study.rows) {
    s << r.length << "," << format_number("%.6g", r.drift) << "," << format_number("%.6g", r.kl) << "," << r.estimator
      << "," << format_number("%.6g", r.bias) << "," << format_number("%.6g", r.bias_se) << ","
      << format_number("%.6g", r.variance) << "," << format_number("%.6g", r.mse) << ","
      << format_number("%.6g", r.cosine) << "," << format_number("%.6g", r.ess) << ","
      << format_number("%.6g", r.acceptance) << "\n";
  }
  return s.str();
}

nlohmann::json estimator_json(const EstimatorStudy& study) {
  const EstimatorStudyOptions& o = study.options;
  // NaN and infinity have no JSON spelling: null.
  auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  nlohmann::json j;
  j["options"] = {{"lengths", o.lengths},   {"drifts", o.drifts}, {"replicates", o.replicates}, {"batch", o.batch},
                  {"vocab", o.vocab},       {"states", o.states}, {"top_k", o.top_k},           {"cap", o.cap},
                  {"baseline", o.baseline}, {"seed", o.seed}};
  j["rows"] = nlohmann::json::array();
  for (const EstimatorRow& r : study.rows) {
    j["rows"].push_back({{"length", r.length},
                         {"drift", r.drift},
                         {"kl", number(r.kl)},
                         {"estimator", r.estimator},
                         {"bias", number(r.bias)},
                         {"bias_se", number(r.bias_se)},
                         {"variance", number(r.variance)},
                         {"mse", number(r.mse)},
                         {"cosine", number(r.cosine)},
                         {"ess", number(r.ess)},
                         {"acceptance", number(r.acceptance)}});
  }
  j["sis_between_token_and_sequence_is"] = nlohmann::json::array();
  for (const BetweenVerdict& v : study.verdicts) {
    j["sis_between_token_and_sequence_is"].push_back(
        {{"length", v.length}, {"drift", v.drift}, {"bias", v.bias_between}, {"variance", v.variance_between}});
  }
  return j;
}

std::string estimator_tables(const EstimatorStudy& study) {
  std::ostringstream s;
  s << "Exact-gradient estimator study: bias, variance and MSE relative to ||grad J||, over "
    << study.options.replicates << " batches of " << study.options.batch << " sequences\n";
  for (size_t i = 0; i < study.rows.size(); ++i) {
    const EstimatorRow& r = study.rows[i];
    if (i == 0 || r.length != study.rows[i - 1].length || r.drift != study.rows[i - 1].drift) {
      s << "\nT = " << r.length << ", drift " << format_number("%g", r.drift) << " (per-token KL(mu||pi) "
        << format_number("%.4f", r.kl) << ")\n";
      s << "  estimator        bias   (se)    variance        mse  cosine    ess  accept\n";
    }
    char line[160];
    std::snprintf(line, sizeof line, "  %-11s %9.4f (%6.4f) %10.4g %10.4g %7.3f %6.3f  %s\n", r.estimator.c_str(),
                  r.bias, r.bias_se, r.variance, r.mse, r.cosine, r.ess,
                  std::isnan(r.acceptance) ? "   -" : format_number("%.3f", r.acceptance).c_str());
    s << line;
  }
  int bias = 0, variance = 0, both = 0;
  s << "\nDoes SIS (exact envelope) land between token IS and sequence IS?\n"
       "      T  drift   bias: token   SIS    seq   variance: token      SIS      seq\n";
  for (const BetweenVerdict& v : study.verdicts) {
    char line[200];
    std::snprintf(line, sizeof line, "  %5lld  %5g  %12.4f %6.4f %6.4f %s %16.4g %8.4g %8.4g %s\n",
                  static_cast<long long>(v.length), v.drift, v.token_bias, v.sis_bias, v.seq_bias,
                  v.bias_between ? "yes" : "no ", v.token_variance, v.sis_variance, v.seq_variance,
                  v.variance_between ? "yes" : "no");
    s << line;
    bias += v.bias_between;
    variance += v.variance_between;
    both += v.bias_between && v.variance_between;
  }
  s << "  between in bias: " << bias << " of " << study.verdicts.size() << " cells; in variance: " << variance
    << "; in both: " << both << "\n";
  return s.str();
}

std::string estimator_gnuplot(const EstimatorStudy& study, const std::string& out_dir) {
  const auto& drifts = study.options.drifts;
  const size_t n = all_estimators().size();
  const int columns = drifts.size() > 2 ? 2 : static_cast<int>(drifts.size());
  const int rows = static_cast<int>((drifts.size() + columns - 1) / columns);
  std::ostringstream s;
  // One datablock per drift: length, then every estimator's MSE, then every estimator's bias.
  for (size_t d = 0; d < drifts.size(); ++d) {
    s << "$drift" << d << " << EOD\n";
    for (size_t first = 0; first < study.rows.size(); first += n) {
      if (study.rows[first].drift != drifts[d]) continue;
      s << study.rows[first].length;
      for (size_t e = 0; e < n; ++e)
        s << " " << format_number("%.6g", study.rows[first + e].mse);
      for (size_t e = 0; e < n; ++e)
        s << " " << format_number("%.6g", study.rows[first + e].bias);
      s << "\n";
    }
    s << "EOD\n";
  }
  s << "set terminal pngcairo size " << 560 * columns << "," << 420 * rows + 40
    << " noenhanced\nset grid\nset logscale x 2\nset xlabel 'sequence length T'\nset key top left font ',8'\n";
  auto panels = [&](const char* file, size_t offset, const char* label) {
    s << "set output '" << out_dir << "/" << file << "'\nset multiplot layout " << rows << "," << columns << " title '"
      << label << " relative to ||grad J||, by estimator'\nset ylabel '" << label << "'\n";
    for (size_t d = 0; d < drifts.size(); ++d) {
      s << "set title 'drift " << format_number("%g", drifts[d]) << ", per-token KL "
        << format_number("%.3g", study.rows[d * n].kl) << "'\nplot ";
      for (size_t e = 0; e < n; ++e) {
        s << (e ? ", " : "") << "$drift" << d << " using 1:" << 2 + offset + e << " with linespoints title '"
          << estimator_name(all_estimators()[e]) << "'";
      }
      s << "\n";
    }
    s << "unset multiplot\n";
  };
  s << "set logscale y\n";
  panels("estimators_mse.png", 0, "MSE");
  s << "unset logscale y\nset yrange [0:*]\n";
  panels("estimators_bias.png", n, "bias");
  return s.str();
}

}  // namespace clustertwin::real::sis
