#include "models/igsp/information.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <numeric>
#include <unordered_set>

namespace clustertwin::models::igsp {
namespace {

uint32_t gram_at(const std::string& s, size_t i) {
  return static_cast<uint32_t>(static_cast<unsigned char>(s[i])) << 24 |
         static_cast<uint32_t>(static_cast<unsigned char>(s[i + 1])) << 16 |
         static_cast<uint32_t>(static_cast<unsigned char>(s[i + 2])) << 8 |
         static_cast<uint32_t>(static_cast<unsigned char>(s[i + 3]));
}

}  // namespace

StatusOr<InformationMetrics> information_metrics(const std::vector<std::string>& samples) {
  if (samples.empty()) return Status::invalid_argument("information metrics: an empty calibration set");
  InformationMetrics m;
  m.samples = static_cast<int64_t>(samples.size());
  std::unordered_set<uint32_t> grams;
  std::unordered_set<std::string> words;
  std::array<bool, 256> seen{};
  int64_t gram_count = 0, word_count = 0;
  for (const std::string& s : samples) {
    m.volume += static_cast<int64_t>(s.size());
    for (unsigned char c : s)
      seen[c] = true;
    for (size_t i = 0; i + 4 <= s.size(); ++i) {
      grams.insert(gram_at(s, i));
      ++gram_count;
    }
    std::string word;
    for (size_t i = 0; i <= s.size(); ++i) {
      const bool space = i == s.size() || std::isspace(static_cast<unsigned char>(s[i]));
      if (!space) {
        word.push_back(s[i]);
      } else if (!word.empty()) {
        words.insert(word);
        ++word_count;
        word.clear();
      }
    }
  }
  if (gram_count == 0) return Status::invalid_argument("information metrics: no sample has 4 bytes");
  m.unique_4gram_fraction = static_cast<double>(grams.size()) / static_cast<double>(gram_count);
  m.repeated_4gram_fraction = 1 - m.unique_4gram_fraction;
  int distinct = 0;
  for (bool b : seen)
    distinct += b;
  m.byte_coverage = distinct / 256.0;
  m.word_types_per_1000 =
      word_count > 0 ? 1000.0 * static_cast<double>(words.size()) / static_cast<double>(word_count) : 0;
  m.mean_length = static_cast<double>(m.volume) / static_cast<double>(m.samples);
  return m;
}

const char* aggregation_sign_name(AggregationSign sign) {
  return sign == AggregationSign::kRepeated ? "repeated" : "unique";
}

namespace {

// The sizes agree and `count` samples in `strata` strata can be chosen from n candidates.
Status check_selection(size_t n, const std::vector<double>& perplexity, size_t count, int strata) {
  if (perplexity.size() != n) {
    return Status::invalid_argument("igsp selection: " + std::to_string(n) + " candidates but " +
                                    std::to_string(perplexity.size()) + " perplexities");
  }
  if (count < 1 || count > n) {
    return Status::invalid_argument("igsp selection: cannot choose " + std::to_string(count) + " of " +
                                    std::to_string(n) + " candidates");
  }
  if (strata < 1 || static_cast<size_t>(strata) > count) {
    return Status::invalid_argument("igsp selection: " + std::to_string(strata) + " strata for " +
                                    std::to_string(count) + " samples");
  }
  return Status::ok();
}

// Each candidate's distinct 4-grams (sorted) and its 4-gram count.
struct CandidateGrams {
  std::vector<std::vector<uint32_t>> grams;
  std::vector<int64_t> totals;
};

CandidateGrams candidate_grams(const std::vector<std::string>& candidates) {
  const size_t n = candidates.size();
  CandidateGrams out;
  out.grams.resize(n);
  out.totals.assign(n, 0);
  for (size_t c = 0; c < n; ++c) {
    const std::string& s = candidates[c];
    for (size_t i = 0; i + 4 <= s.size(); ++i)
      out.grams[c].push_back(gram_at(s, i));
    out.totals[c] = static_cast<int64_t>(out.grams[c].size());
    std::sort(out.grams[c].begin(), out.grams[c].end());
    out.grams[c].erase(std::unique(out.grams[c].begin(), out.grams[c].end()), out.grams[c].end());
  }
  return out;
}

// Quantile bins of perplexity (stable: equal perplexities keep index order), k of them.
std::vector<std::vector<size_t>> perplexity_bins(const std::vector<double>& perplexity, size_t k) {
  const size_t n = perplexity.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return perplexity[a] < perplexity[b]; });
  std::vector<std::vector<size_t>> bins(k);
  for (size_t r = 0; r < n; ++r)
    bins[r * k / n].push_back(order[r]);
  return bins;
}

}  // namespace

StatusOr<std::vector<size_t>> select_min_aggregation(const std::vector<std::string>& candidates,
                                                     const std::vector<double>& perplexity, size_t count, int strata,
                                                     AggregationSign sign) {
  const size_t n = candidates.size();
  CT_RETURN_IF_ERROR(check_selection(n, perplexity, count, strata));
  const CandidateGrams cg = candidate_grams(candidates);
  const std::vector<std::vector<uint32_t>>& grams = cg.grams;
  const std::vector<int64_t>& totals = cg.totals;
  const size_t k = static_cast<size_t>(strata);
  const std::vector<std::vector<size_t>> bins = perplexity_bins(perplexity, k);
  std::vector<size_t> quota(k, count / k);
  for (size_t b = 0; b < count % k; ++b)
    ++quota[b];

  std::unordered_set<uint32_t> set_grams;
  int64_t set_total = 0;
  std::vector<bool> taken(n, false);
  std::vector<size_t> chosen;
  while (chosen.size() < count) {
    for (size_t b = 0; b < k && chosen.size() < count; ++b) {
      if (quota[b] == 0) continue;
      // The bin's best candidate; should the bin run short of its quota, any candidate.
      size_t best = n;
      double best_value = 0;
      auto consider = [&](size_t c) {
        if (taken[c]) return;
        int64_t fresh = 0;
        for (uint32_t g : grams[c])
          fresh += set_grams.count(g) == 0;
        const int64_t total = set_total + totals[c];
        const double unique =
            total > 0 ? static_cast<double>(static_cast<int64_t>(set_grams.size()) + fresh) / static_cast<double>(total)
                      : 0;
        const double aggregation = sign == AggregationSign::kRepeated ? 1 - unique : unique;
        if (best == n || aggregation < best_value || (aggregation == best_value && c < best)) {
          best = c;
          best_value = aggregation;
        }
      };
      for (size_t c : bins[b])
        consider(c);
      if (best == n) {
        for (size_t c = 0; c < n; ++c)
          consider(c);
      }
      taken[best] = true;
      --quota[b];
      chosen.push_back(best);
      set_grams.insert(grams[best].begin(), grams[best].end());
      set_total += totals[best];
    }
  }
  return chosen;
}

}  // namespace clustertwin::models::igsp
