// The flags of `clustertwin sim sweep` that name its seeds, placements and
// shard: command-line text to a sweep's spec (sim/mix/sweep.h).

#include "cli/sweep_options.h"

#include <charconv>

namespace clustertwin::cli {
namespace {

// A whole non-negative decimal number, or false.
bool parse_uint(std::string_view text, uint64_t* value) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && end == text.data() + text.size();
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == sep) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

}  // namespace

StatusOr<std::vector<uint64_t>> parse_seed_list(const std::string& text) {
  auto bad = [&](const std::string& why) { return Status::invalid_argument("--seeds " + text + ": " + why); };
  std::vector<uint64_t> seeds;
  constexpr uint64_t kMaxSeed = uint64_t{1} << 31;  // as sim mix --seed
  constexpr size_t kMaxSeeds = 100000;
  for (const std::string& part : split(text, ',')) {
    const size_t dash = part.find('-');
    uint64_t first = 0, last = 0;
    const bool ok = dash == std::string::npos ? parse_uint(part, &first) && (last = first, true)
                                              : parse_uint(std::string_view(part).substr(0, dash), &first) &&
                                                    parse_uint(std::string_view(part).substr(dash + 1), &last);
    if (!ok) return bad("'" + part + "' is not a seed or a range A-B of seeds (whole numbers >= 0)");
    if (first > last) return bad("range '" + part + "' runs backwards");
    if (last > kMaxSeed) return bad("seed " + std::to_string(last) + " is above 2^31");
    if (!seeds.empty() && first <= seeds.back()) {
      return bad("'" + part + "' does not come after " + std::to_string(seeds.back()) +
                 " (seeds ascending, each once)");
    }
    if (last - first >= kMaxSeeds || seeds.size() + (last - first + 1) > kMaxSeeds)
      return bad("more than " + std::to_string(kMaxSeeds) + " seeds");
    for (uint64_t s = first; s <= last; ++s)
      seeds.push_back(s);
  }
  return seeds;
}

StatusOr<std::vector<std::string>> parse_placement_list(const std::string& text) {
  std::vector<std::string> placements;
  for (const std::string& p : split(text, ',')) {
    if (p != "packed" && p != "spread" && p != "random") {
      return Status::invalid_argument("--placements " + text + ": '" + p +
                                      "' is not a placement (packed, spread or random)");
    }
    for (const std::string& q : placements) {
      if (q == p) return Status::invalid_argument("--placements " + text + ": '" + p + "' is listed twice");
    }
    placements.push_back(p);
  }
  return placements;
}

StatusOr<Shard> parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  uint64_t k = 0, n = 0;
  if (slash == std::string::npos || !parse_uint(std::string_view(text).substr(0, slash), &k) ||
      !parse_uint(std::string_view(text).substr(slash + 1), &n)) {
    return Status::invalid_argument("--shard " + text + ": expected K/N, whole numbers with 0 <= K < N");
  }
  if (n < 1 || n > 1000000) return Status::invalid_argument("--shard " + text + ": N must be in [1, 1000000]");
  if (k >= n) return Status::invalid_argument("--shard " + text + ": K must be in [0, N-1] (shards count from 0)");
  return Shard{static_cast<int>(k), static_cast<int>(n)};
}

StatusOr<Shard> shard_from_env(const std::function<const char*(const char*)>& getenv) {
  uint64_t values[2] = {0, 0};
  const char* names[2] = {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT"};
  for (int i = 0; i < 2; ++i) {
    const char* value = getenv(names[i]);
    if (value == nullptr) {
      return Status::invalid_argument(std::string("--shard-from-env: ") + names[i] +
                                      " is not set (run inside a Slurm array job, or give --shard K/N)");
    }
    if (!parse_uint(value, &values[i]) || values[i] > 1000000) {
      return Status::invalid_argument(std::string("--shard-from-env: ") + names[i] + "='" + value +
                                      "' is not a whole number in [0, 1000000]");
    }
  }
  if (values[1] < 1) return Status::invalid_argument("--shard-from-env: SLURM_ARRAY_TASK_COUNT='0' must be >= 1");
  if (values[0] >= values[1]) {
    return Status::invalid_argument("--shard-from-env: SLURM_ARRAY_TASK_ID='" + std::to_string(values[0]) +
                                    "' is not below SLURM_ARRAY_TASK_COUNT='" + std::to_string(values[1]) +
                                    "' (submit the array as --array=0-" + std::to_string(values[1] - 1) + ")");
  }
  return Shard{static_cast<int>(values[0]), static_cast<int>(values[1])};
}

}  // namespace clustertwin::cli
