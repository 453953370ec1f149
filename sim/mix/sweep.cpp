// A sweep's points, its shards and its id (docs/mix.md, "Sweeps").

#include "sim/mix/sweep.h"

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <set>

#include "common/file_io.h"
#include "common/hash.h"
#include "common/version.h"
#include "traces/json_text.h"

namespace clustertwin::sim::mix {
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

// FNV-1a over the bytes, each length-prefixed so that ("ab","c") and ("a","bc") differ.
class Hasher {
 public:
  void add(std::string_view bytes) {
    add_raw(std::to_string(bytes.size()) + ":");
    add_raw(bytes);
  }
  uint64_t value() const { return mix64(h_); }

 private:
  void add_raw(std::string_view bytes) {
    for (unsigned char c : bytes) {
      h_ ^= c;
      h_ *= 0x100000001b3ULL;
    }
  }
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

}  // namespace

std::vector<SweepPoint> sweep_points(const SweepSpec& spec) {
  std::vector<SweepPoint> points;
  points.reserve(spec.points());
  for (size_t m = 0; m < spec.mixes.size(); ++m) {
    for (const std::string& placement : spec.placements) {
      for (uint64_t seed : spec.seeds)
        points.push_back({points.size(), m, placement, seed});
    }
  }
  return points;
}

std::vector<SweepPoint> shard_points(const SweepSpec& spec, const Shard& shard) {
  std::vector<SweepPoint> mine;
  for (SweepPoint& p : sweep_points(spec)) {
    if (p.index % static_cast<size_t>(shard.count) == static_cast<size_t>(shard.index)) mine.push_back(std::move(p));
  }
  return mine;
}

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

StatusOr<std::string> sweep_id(const SweepSpec& spec, const std::vector<MixSpec>& mixes) {
  Hasher h;
  h.add(version());
  for (const std::string& p : spec.placements)
    h.add(p);
  for (uint64_t s : spec.seeds)
    h.add(std::to_string(s));
  auto add_file = [&](const std::string& path, const std::string& what) -> Status {
    auto bytes = read_file(path);
    if (!bytes.is_ok()) return bytes.status().with_context(what);
    h.add(*bytes);
    return Status::ok();
  };
  for (size_t m = 0; m < spec.mixes.size(); ++m) {
    h.add(spec.mixes[m]);
    CT_RETURN_IF_ERROR(add_file(spec.mixes[m], spec.mixes[m]));
    const MixSpec& mix = mixes[m];
    // A shipped profile is a name: the version covers it.
    h.add(mix.profile);
    std::error_code ec;
    if (std::filesystem::is_regular_file(mix.profile, ec))
      CT_RETURN_IF_ERROR(add_file(mix.profile, mix.file + ": field 'profile'"));
    for (const JobSpec& job : mix.jobs) {
      if (job.kind == JobSpec::Kind::kPlan)
        CT_RETURN_IF_ERROR(add_file(job.plan_file, mix.file + ": field '" + job.field + ".plan'"));
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h.value()));
  return std::string(hex);
}

std::string point_file_name(size_t index) {
  char name[32];
  std::snprintf(name, sizeof name, "point-%06zu.json", index);
  return name;
}

std::string point_json(const std::string& id, const SweepSpec& spec, const SweepPoint& point, const MixResult& result) {
  std::string out = "{\"format\":\"clustertwin-sweep-point/1\",\"sweep\":\"" + id +
                    "\",\"points\":" + std::to_string(spec.points()) + ",\"index\":" + std::to_string(point.index) +
                    ",\"mixes\":[";
  for (size_t m = 0; m < spec.mixes.size(); ++m) {
    if (m > 0) out += ",";
    traces::append_json_string(&out, spec.mixes[m]);
  }
  out += "],\"placements\":[";
  for (size_t p = 0; p < spec.placements.size(); ++p) {
    if (p > 0) out += ",";
    traces::append_json_string(&out, spec.placements[p]);
  }
  out += "],\"seeds\":[";
  for (size_t s = 0; s < spec.seeds.size(); ++s)
    out += (s > 0 ? "," : "") + std::to_string(spec.seeds[s]);
  out += "],\"mix\":";
  traces::append_json_string(&out, spec.mixes[point.mix]);
  out += ",\"placement\":";
  traces::append_json_string(&out, point.placement);
  out += ",\"seed\":" + std::to_string(point.seed) + ",\"result\":";
  std::string result_json = mix_result_json(result);
  while (!result_json.empty() && result_json.back() == '\n')
    result_json.pop_back();
  return out + result_json + "}\n";
}

}  // namespace clustertwin::sim::mix
