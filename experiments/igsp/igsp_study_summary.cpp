// The IGSP study's figures of one calibration set over its seeds, and
// Welch's interval for the difference of two sets' means.

#include <algorithm>
#include <cmath>

#include "experiments/igsp/igsp_study_internal.h"

namespace clustertwin::experiments::igsp::detail {

using clustertwin::SeedSummary;
using clustertwin::summarise;
using real::igsp::StudyRun;

std::vector<SetSummary> summarise_sets(const std::vector<StudyRun>& runs) {
  std::vector<SetSummary> out;
  for (size_t i = 0; i < runs.size();) {
    size_t j = i;
    while (j < runs.size() && runs[j].set == runs[i].set)
      ++j;
    SetSummary s;
    s.name = runs[i].set;
    s.kind = runs[i].kind;
    const double n = static_cast<double>(j - i);
    s.retention_by_seed.assign(kDimensions.size(), {});
    for (size_t k = i; k < j; ++k) {
      const StudyRun& r = runs[k];
      for (size_t d = 0; d < kDimensions.size(); ++d)
        s.retention_by_seed[d].push_back(r.retention[d]);
      s.perplexity += r.dense_perplexity / n;
      s.unique += r.information.unique_4gram_fraction / n;
      s.repeated += r.information.repeated_4gram_fraction / n;
      s.byte_coverage += r.information.byte_coverage / n;
      s.word_types += r.information.word_types_per_1000 / n;
      s.volume += static_cast<double>(r.information.volume) / n;
      s.mean_length += r.information.mean_length / n;
    }
    for (const auto& v : s.retention_by_seed)
      s.retention.push_back(summarise(v));
    out.push_back(s);
    i = j;
  }
  return out;
}

Difference welch(const std::vector<double>& a, const std::vector<double>& b) {
  const SeedSummary sa = summarise(a), sb = summarise(b);
  Difference d;
  d.mean = sa.mean - sb.mean;
  d.low = d.high = d.mean;
  if (sa.n < 2 || sb.n < 2) return d;
  d.interval = true;
  const double va = sa.sd * sa.sd / sa.n, vb = sb.sd * sb.sd / sb.n;
  if (va + vb == 0) return d;  // every seed gave the same figure: the interval is that point
  const double df = (va + vb) * (va + vb) / (va * va / (sa.n - 1) + vb * vb / (sb.n - 1));
  const double half =
      clustertwin::student_t_quantile(0.975, std::max(1, static_cast<int>(std::floor(df)))) *
      std::sqrt(va + vb);
  d.low = d.mean - half;
  d.high = d.mean + half;
  return d;
}

}  // namespace clustertwin::experiments::igsp::detail
