// A sweep's points, its shards and its id (docs/mix.md, "Sweeps").

#include "sim/mix/sweep.h"

#include <cstdio>
#include <filesystem>
#include <set>

#include "common/file_io.h"
#include "common/hash.h"
#include "common/json.h"
#include "common/version.h"

namespace clustertwin::sim::mix {
namespace {

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
  const nlohmann::ordered_json doc = {{"format", "clustertwin-sweep-point/1"},
                                      {"sweep", id},
                                      {"points", spec.points()},
                                      {"index", point.index},
                                      {"mixes", spec.mixes},
                                      {"placements", spec.placements},
                                      {"seeds", spec.seeds},
                                      {"mix", spec.mixes[point.mix]},
                                      {"placement", point.placement},
                                      {"seed", point.seed},
                                      {"result", mix_result_document(result)}};
  return json_document(doc);
}

}  // namespace clustertwin::sim::mix
