// Merging a sweep's point files into one table (docs/mix.md, "Sweeps").

#include "sim/mix/sweep_merge.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

#include "common/file_io.h"
#include "common/json.h"

namespace clustertwin::sim::mix {
namespace {

using Json = nlohmann::ordered_json;

Status bad_file(const std::string& file, const std::string& why) {
  return Status::invalid_argument(file + ": " + why);
}

}  // namespace

StatusOr<SweepPointFile> read_sweep_point(const std::string& path) {
  auto doc = read_json_file(path);
  if (!doc.is_ok()) return Status::invalid_argument(doc.status().message());  // unreadable or not JSON: exit 2
  const Json& j = *doc;
  try {
    if (!j.is_object() || j.value("format", "") != "clustertwin-sweep-point/1")
      return bad_file(path, "not a sweep point file (no \"format\":\"clustertwin-sweep-point/1\")");
    SweepPointFile p;
    p.id = j.at("sweep").get<std::string>();
    p.spec.mixes = j.at("mixes").get<std::vector<std::string>>();
    p.spec.placements = j.at("placements").get<std::vector<std::string>>();
    p.spec.seeds = j.at("seeds").get<std::vector<uint64_t>>();
    SweepPoint& point = p.result.point;
    point.index = j.at("index").get<size_t>();
    const std::string mix = j.at("mix").get<std::string>();
    const auto found = std::find(p.spec.mixes.begin(), p.spec.mixes.end(), mix);
    if (found == p.spec.mixes.end()) return bad_file(path, "mix '" + mix + "' is not one of the sweep's mixes");
    point.mix = static_cast<size_t>(found - p.spec.mixes.begin());
    point.placement = j.at("placement").get<std::string>();
    point.seed = j.at("seed").get<uint64_t>();
    if (j.at("points").get<size_t>() != p.spec.points()) {
      return bad_file(path, "field 'points': " + j.at("points").dump() +
                                " is not mixes x placements x seeds = " + std::to_string(p.spec.points()));
    }
    p.result.file = path;
    for (const auto& job : j.at("result").at("jobs")) {
      p.result.jobs.push_back({job.at("name").get<std::string>(), job.at("alone").at("step_time_s").get<double>(),
                               job.at("mix").at("step_time_s").get<double>(), job.at("slowdown").get<double>()});
    }
    return p;
  } catch (const nlohmann::json::exception& e) {
    return bad_file(path, std::string("not a readable sweep point file: ") + e.what());
  }
}

namespace {

std::string describe(const SweepSpec& spec, const SweepPoint& p) {
  return std::to_string(p.index) + " (" + spec.mixes[p.mix] + " " + p.placement + " seed " + std::to_string(p.seed) +
         ")";
}

bool same_spec(const SweepSpec& a, const SweepSpec& b) {
  return a.mixes == b.mixes && a.placements == b.placements && a.seeds == b.seeds;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text)
    out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Per (mix, placement, job): the slowdowns over the seeds, in seed order.
struct Summary {
  size_t mix = 0;
  std::string placement;
  std::string job;
  std::vector<double> slowdowns;
  double mean() const {
    double sum = 0;
    for (double s : slowdowns)
      sum += s;
    return slowdowns.empty() ? 0 : sum / static_cast<double>(slowdowns.size());
  }
  double min() const { return slowdowns.empty() ? 0 : *std::min_element(slowdowns.begin(), slowdowns.end()); }
  double max() const { return slowdowns.empty() ? 0 : *std::max_element(slowdowns.begin(), slowdowns.end()); }
};

// In the sweep's order: mixes, placements, then jobs as the points list them.
std::vector<Summary> summarize(const MergedSweep& sweep) {
  std::vector<Summary> out;
  std::map<std::tuple<size_t, std::string, std::string>, size_t> slot;
  for (const SweepPointResult& p : sweep.points) {
    for (const SweepJobRow& job : p.jobs) {
      const auto key = std::make_tuple(p.point.mix, p.point.placement, job.job);
      auto it = slot.find(key);
      if (it == slot.end()) {
        it = slot.emplace(key, out.size()).first;
        out.push_back({p.point.mix, p.point.placement, job.job, {}});
      }
      out[it->second].slowdowns.push_back(job.slowdown);
    }
  }
  return out;
}

// The table's names of the mixes: the files' names when they tell the
// mixes apart (the paths as given are in the table's header, CSV and JSON).
std::vector<std::string> short_mix_names(const SweepSpec& spec) {
  std::vector<std::string> names;
  for (const std::string& m : spec.mixes)
    names.push_back(std::filesystem::path(m).filename().string());
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return spec.mixes;
  return names;
}

// The folder's point-*.json files, sorted.
StatusOr<std::vector<std::string>> point_files(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return Status::invalid_argument(dir + ": not a folder of sweep point files");
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("point-", 0) == 0 && ends_with(name, ".json")) files.push_back(entry.path().string());
  }
  if (ec) return Status::invalid_argument(dir + ": cannot be listed: " + ec.message());
  if (files.empty()) return Status::invalid_argument(dir + ": no point-*.json file (run clustertwin sim sweep first)");
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

StatusOr<MergedSweep> merge_sweep(const std::string& dir, bool allow_missing) {
  auto listed = point_files(dir);
  if (!listed.is_ok()) return listed.status();
  const std::vector<std::string>& files = *listed;
  MergedSweep out;
  std::string first_file;
  std::vector<SweepPoint> order;  // the sweep's points, from the first file's spec
  std::map<size_t, SweepPointResult> by_index;
  for (const std::string& file : files) {
    auto p = read_sweep_point(file);
    if (!p.is_ok()) return p.status();
    if (first_file.empty()) {
      first_file = file;
      out.id = p->id;
      out.spec = p->spec;
      order = sweep_points(out.spec);
    } else if (p->id != out.id || !same_spec(p->spec, out.spec)) {
      return bad_file(file, "sweep '" + p->id + "', but " + first_file + " is sweep '" + out.id +
                                "' (points of two sweeps, or of changed inputs, in one folder)");
    }
    const SweepPoint& point = p->result.point;
    if (point.index >= out.spec.points()) {
      return bad_file(file, "field 'index': " + std::to_string(point.index) + " is not below the sweep's " +
                                std::to_string(out.spec.points()) + " points");
    }
    const SweepPoint& expected = order[point.index];
    if (expected.mix != point.mix || expected.placement != point.placement || expected.seed != point.seed) {
      return bad_file(file, "point " + std::to_string(point.index) + " is " + describe(out.spec, point) +
                                ", but the sweep's order makes it " + describe(out.spec, expected));
    }
    const auto [it, inserted] = by_index.emplace(point.index, p->result);
    if (!inserted) {
      return bad_file(file,
                      "point " + describe(out.spec, point) + " again: " + it->second.file + " has it too (remove one)");
    }
  }
  for (const SweepPoint& point : order) {
    auto it = by_index.find(point.index);
    if (it == by_index.end()) {
      out.missing.push_back(point);
    } else {
      out.points.push_back(std::move(it->second));
    }
  }
  if (!out.missing.empty() && !allow_missing) {
    std::string list;
    for (const SweepPoint& p : out.missing)
      list += (list.empty() ? "" : ", ") + describe(out.spec, p);
    return Status::invalid_argument(dir + ": " + std::to_string(out.missing.size()) + " of " +
                                    std::to_string(out.spec.points()) + " points missing: " + list +
                                    " (rerun their shards, or pass --allow-missing)");
  }
  return out;
}

std::string merged_table(const MergedSweep& sweep) {
  const SweepSpec& spec = sweep.spec;
  const std::vector<std::string> mix_names = short_mix_names(spec);
  int mix_width = 3;
  int job_width = 3;
  for (const std::string& m : mix_names)
    mix_width = std::max(mix_width, static_cast<int>(m.size()));
  for (const SweepPointResult& p : sweep.points) {
    for (const SweepJobRow& j : p.jobs)
      job_width = std::max(job_width, static_cast<int>(j.job.size()));
  }
  std::string out = "# clustertwin sim sweep-merge: sweep " + sweep.id + ", " + std::to_string(spec.points()) +
                    " points (" + std::to_string(spec.mixes.size()) + " mixes x " +
                    std::to_string(spec.placements.size()) + " placements x " + std::to_string(spec.seeds.size()) +
                    " seeds), " + std::to_string(sweep.points.size()) + " merged\n";
  for (size_t m = 0; m < spec.mixes.size(); ++m) {
    if (mix_names[m] != spec.mixes[m]) out += "# " + mix_names[m] + ": " + spec.mixes[m] + "\n";
  }
  char line[1024];
  std::snprintf(line, sizeof line, "# %6s  %-*s  %-9s %6s  %-*s %12s %12s %9s\n", "point", mix_width, "mix",
                "placement", "seed", job_width, "job", "alone (ms)", "in mix (ms)", "slowdown");
  out += line;
  for (const SweepPointResult& p : sweep.points) {
    for (const SweepJobRow& j : p.jobs) {
      std::snprintf(line, sizeof line, "  %6zu  %-*s  %-9s %6llu  %-*s %12.3f %12.3f %8.4fx\n", p.point.index,
                    mix_width, mix_names[p.point.mix].c_str(), p.point.placement.c_str(),
                    static_cast<unsigned long long>(p.point.seed), job_width, j.job.c_str(), j.alone_s * 1e3,
                    j.mixed_s * 1e3, j.slowdown);
      out += line;
    }
  }
  out += "# slowdown per mix, placement and job over the seeds\n";
  std::snprintf(line, sizeof line, "# %-*s  %-9s  %-*s %6s %9s %9s %9s\n", mix_width, "mix", "placement", job_width,
                "job", "seeds", "mean", "min", "max");
  out += line;
  for (const Summary& s : summarize(sweep)) {
    std::snprintf(line, sizeof line, "  %-*s  %-9s  %-*s %6zu %8.4fx %8.4fx %8.4fx\n", mix_width,
                  mix_names[s.mix].c_str(), s.placement.c_str(), job_width, s.job.c_str(), s.slowdowns.size(), s.mean(),
                  s.min(), s.max());
    out += line;
  }
  if (!sweep.missing.empty()) {
    out += "# missing points (--allow-missing):";
    for (const SweepPoint& p : sweep.missing)
      out += " " + describe(spec, p) + (&p == &sweep.missing.back() ? "" : ",");
    out += "\n";
  }
  return out;
}

std::string merged_csv(const MergedSweep& sweep) {
  std::string out = "point,mix,placement,seed,job,alone_step_s,mix_step_s,slowdown\n";
  for (const SweepPointResult& p : sweep.points) {
    for (const SweepJobRow& j : p.jobs) {
      out += std::to_string(p.point.index) + "," + csv_field(sweep.spec.mixes[p.point.mix]) + "," + p.point.placement +
             "," + std::to_string(p.point.seed) + "," + csv_field(j.job) + "," + json_number(j.alone_s) + "," +
             json_number(j.mixed_s) + "," + json_number(j.slowdown) + "\n";
    }
  }
  return out;
}

std::string merged_json(const MergedSweep& sweep) {
  const SweepSpec& spec = sweep.spec;
  Json rows = Json::array();
  for (const SweepPointResult& p : sweep.points) {
    for (const SweepJobRow& j : p.jobs) {
      rows.push_back({{"point", p.point.index},
                      {"mix", spec.mixes[p.point.mix]},
                      {"placement", p.point.placement},
                      {"seed", p.point.seed},
                      {"job", j.job},
                      {"alone_step_s", j.alone_s},
                      {"mix_step_s", j.mixed_s},
                      {"slowdown", j.slowdown}});
    }
  }
  Json summary = Json::array();
  for (const Summary& s : summarize(sweep)) {
    summary.push_back({{"mix", spec.mixes[s.mix]},
                       {"placement", s.placement},
                       {"job", s.job},
                       {"seeds", s.slowdowns.size()},
                       {"mean_slowdown", s.mean()},
                       {"min_slowdown", s.min()},
                       {"max_slowdown", s.max()}});
  }
  Json missing = Json::array();
  for (const SweepPoint& p : sweep.missing)
    missing.push_back(p.index);
  return json_document(
      {{"sweep", sweep.id}, {"points", spec.points()}, {"rows", rows}, {"summary", summary}, {"missing", missing}});
}

}  // namespace clustertwin::sim::mix
