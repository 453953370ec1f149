#include "models/igsp/information.h"

#include <array>
#include <cctype>
#include <unordered_set>

namespace clustertwin::igsp {

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
      const uint32_t g = static_cast<uint32_t>(static_cast<unsigned char>(s[i])) << 24 |
                         static_cast<uint32_t>(static_cast<unsigned char>(s[i + 1])) << 16 |
                         static_cast<uint32_t>(static_cast<unsigned char>(s[i + 2])) << 8 |
                         static_cast<uint32_t>(static_cast<unsigned char>(s[i + 3]));
      grams.insert(g);
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

}  // namespace clustertwin::igsp
