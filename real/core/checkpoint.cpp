// Checkpoint folders: writing them so that a kill never leaves a broken
// newest one, and choosing and checking the one a run resumes from.

#include "real/core/checkpoint.h"

#include <zlib.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "common/file_io.h"
#include "common/json.h"

namespace clustertwin::real {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

constexpr int kVersion = 1;
constexpr char kManifest[] = "manifest.json";

std::string hex32(uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", v);
  return text;
}

std::string format_of(const CheckpointIdentity& id) {
  return "clustertwin-" + id.system + "-checkpoint";
}

std::string rank_file_name(int rank) {
  return "rank-" + std::to_string(rank) + ".bin";
}

// FNV-1a 64 of the config fields: one number to compare before the fields.
std::string config_fingerprint(const CheckpointIdentity& id) {
  uint64_t h = 1469598103934665603ull;
  for (const auto& [field, value] : id.config) {
    for (char c : field + "=" + value + ";") {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ull;
    }
  }
  char text[24];
  std::snprintf(text, sizeof(text), "0x%016llx", static_cast<unsigned long long>(h));
  return text;
}

// The steps of DIR's step-NNNNNN folders, newest first.
std::vector<int64_t> checkpoint_steps(const std::string& dir) {
  std::vector<int64_t> steps;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= 5 || name.rfind("step-", 0) != 0 || !entry.is_directory()) continue;
    const std::string digits = name.substr(5);
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    if (digits.size() > 12) continue;
    steps.push_back(std::stoll(digits));
  }
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

bool has_manifest(const std::string& step_dir) {
  std::error_code ec;
  return fs::is_regular_file(fs::path(step_dir) / kManifest, ec);
}

// Removes every checkpoint folder older than the newest `keep` complete ones.
void prune_checkpoints(const std::string& dir, int keep) {
  int complete = 0;
  for (int64_t step : checkpoint_steps(dir)) {
    const std::string path = checkpoint_step_dir(dir, step);
    if (complete >= keep) {
      std::error_code ec;
      fs::remove_all(path, ec);
    } else if (has_manifest(path)) {
      ++complete;
    }
  }
}

Json manifest_json(int64_t step, const CheckpointIdentity& id, const std::vector<CheckpointRankFile>& ranks) {
  Json config = Json::object();
  for (const auto& [field, value] : id.config)
    config[field] = value;
  Json files = Json::array();
  for (size_t r = 0; r < ranks.size(); ++r) {
    files.push_back(
        {{"file", rank_file_name(static_cast<int>(r))}, {"bytes", ranks[r].bytes}, {"crc32", hex32(ranks[r].crc32)}});
  }
  return {{"format", format_of(id)},
          {"version", kVersion},
          {"step", step},
          {"world_size", id.world_size},
          {id.kind_field, id.kind},
          {"config", config},
          {"config_fingerprint", config_fingerprint(id)},
          {"ranks", files}};
}

// "FILE: FIELD THEIRS, this run has OURS"
Status mismatch(const std::string& file, const std::string& field, const std::string& theirs, const std::string& ours) {
  return Status::invalid_argument(file + ": " + field + " " + theirs + ", this run has " + ours);
}

// The string `key` of `m`; messages name it `label` (the key by default).
StatusOr<std::string> string_field(const Json& m, const std::string& file, const std::string& key,
                                   const std::string& label = "") {
  const auto it = m.find(key);
  if (it == m.end() || !it->is_string()) {
    return Status::invalid_argument(file + ": " + (label.empty() ? key : label) + ": missing or not a string");
  }
  return it->get<std::string>();
}

StatusOr<int64_t> int_field(const Json& m, const std::string& file, const std::string& field) {
  const auto it = m.find(field);
  if (it == m.end() || !it->is_number_integer()) {
    return Status::invalid_argument(file + ": " + field + ": missing or not an integer");
  }
  return it->get<int64_t>();
}

StatusOr<Json> read_manifest(const std::string& path, const std::string& want_format) {
  auto text = read_file(path);
  if (!text.is_ok()) return Status::invalid_argument(path + ": unreadable: " + text.status().message());
  Json m;
  try {  // nlohmann throws on a number beyond a double even when asked not to
    m = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
  } catch (const Json::exception&) {
    return Status::invalid_argument(path + ": not a JSON object (a number out of range)");
  }
  if (m.is_discarded() || !m.is_object()) return Status::invalid_argument(path + ": not a JSON object");
  auto format = string_field(m, path, "format");
  if (!format.is_ok()) return format.status();
  if (*format != want_format) return mismatch(path, "format", *format, want_format);
  auto version = int_field(m, path, "version");
  if (!version.is_ok()) return version.status();
  if (*version != kVersion) return mismatch(path, "version", std::to_string(*version), std::to_string(kVersion));
  return m;
}

Status check_config(const Json& m, const std::string& path, const CheckpointIdentity& id) {
  const auto config = m.find("config");
  if (config == m.end() || !config->is_object()) return Status::invalid_argument(path + ": config: missing");
  for (const auto& [field, ours] : id.config) {
    auto theirs = string_field(*config, path, field, "config." + field);
    if (!theirs.is_ok()) return theirs.status();
    if (*theirs != ours) return mismatch(path, "config." + field, *theirs, ours);
  }
  if (config->size() != id.config.size()) {
    for (const auto& item : config->items()) {
      const bool known =
          std::any_of(id.config.begin(), id.config.end(), [&](const auto& f) { return f.first == item.key(); });
      if (!known) return Status::invalid_argument(path + ": config." + item.key() + ": not a field of this run");
    }
  }
  auto fingerprint = string_field(m, path, "config_fingerprint");
  if (!fingerprint.is_ok()) return fingerprint.status();
  if (*fingerprint != config_fingerprint(id)) {
    return mismatch(path, "config_fingerprint", *fingerprint, config_fingerprint(id));
  }
  return Status::ok();
}

Status check_identity(const Json& m, const std::string& path, const CheckpointIdentity& id, int64_t step) {
  auto their_step = int_field(m, path, "step");
  if (!their_step.is_ok()) return their_step.status();
  if (*their_step != step) {
    return Status::invalid_argument(path + ": step " + std::to_string(*their_step) + ", its folder says " +
                                    std::to_string(step));
  }
  auto world = int_field(m, path, "world_size");
  if (!world.is_ok()) return world.status();
  if (*world != id.world_size)
    return mismatch(path, "world_size", std::to_string(*world), std::to_string(id.world_size));
  auto kind = string_field(m, path, id.kind_field);
  if (!kind.is_ok()) return kind.status();
  if (*kind != id.kind) return mismatch(path, id.kind_field, *kind, id.kind);
  return check_config(m, path, id);
}

// Every rank file against its manifest entry; returns `rank`'s bytes.
StatusOr<std::string> check_rank_files(const Json& m, const std::string& path, const std::string& step_dir, int world,
                                       int rank) {
  const auto ranks = m.find("ranks");
  if (ranks == m.end() || !ranks->is_array() || static_cast<int>(ranks->size()) != world) {
    return Status::invalid_argument(path + ": ranks: want an array of " + std::to_string(world) + " files");
  }
  std::string mine;
  for (int r = 0; r < world; ++r) {
    const Json& entry = (*ranks)[r];
    const std::string where = path + ": ranks[" + std::to_string(r) + "]";
    if (!entry.is_object()) return Status::invalid_argument(where + ": not an object");
    auto name = string_field(entry, where, "file");
    auto bytes = int_field(entry, where, "bytes");
    auto crc = string_field(entry, where, "crc32");
    if (!name.is_ok()) return name.status();
    if (!bytes.is_ok()) return bytes.status();
    if (!crc.is_ok()) return crc.status();
    if (*name != rank_file_name(r)) return mismatch(where, "file", *name, rank_file_name(r));
    const std::string file = (fs::path(step_dir) / *name).string();
    auto contents = read_file(file);
    if (!contents.is_ok()) return Status::invalid_argument(file + ": missing or unreadable (listed in " + path + ")");
    if (static_cast<int64_t>(contents->size()) != *bytes) {
      return Status::invalid_argument(file + ": " + std::to_string(contents->size()) + " bytes, " + path + " says " +
                                      std::to_string(*bytes));
    }
    const std::string actual = hex32(checkpoint_crc32(*contents));
    if (actual != *crc) return Status::invalid_argument(file + ": crc32 " + actual + ", " + path + " says " + *crc);
    if (r == rank) mine = std::move(*contents);
  }
  return mine;
}

}  // namespace

std::string checkpoint_step_dir(const std::string& dir, int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step-%06lld", static_cast<long long>(step));
  return (fs::path(dir) / name).string();
}

uint32_t checkpoint_crc32(const std::string& bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  size_t at = 0;
  while (at < bytes.size()) {  // zlib takes lengths as uInt
    const size_t n = std::min<size_t>(bytes.size() - at, 1u << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + at), static_cast<uInt>(n));
    at += n;
  }
  return static_cast<uint32_t>(crc);
}

void checkpoint_kill_point(const CheckpointKillHook& hook, int64_t step, const std::string& phase) {
  if (hook.step == step && hook.phase == phase) std::raise(SIGKILL);
}

Status write_checkpoint_rank_file(const std::string& dir, int64_t step, int rank, const std::string& bytes,
                                  const CheckpointKillHook& hook) {
  const std::string step_dir = checkpoint_step_dir(dir, step);
  CT_RETURN_IF_ERROR(make_directories(step_dir));
  auto file = AtomicOutputFile::create((fs::path(step_dir) / rank_file_name(rank)).string());
  if (!file.is_ok()) return file.status();
  (*file)->write(bytes);
  checkpoint_kill_point(hook, step, "before-rename");
  return (*file)->commit();
}

Status write_checkpoint_manifest(const std::string& dir, int64_t step, const CheckpointIdentity& identity,
                                 const std::vector<CheckpointRankFile>& ranks, const CheckpointKillHook& hook,
                                 int keep) {
  checkpoint_kill_point(hook, step, "before-manifest");
  const std::string path = (fs::path(checkpoint_step_dir(dir, step)) / kManifest).string();
  CT_RETURN_IF_ERROR(write_file_atomically(path, json_document(manifest_json(step, identity, ranks), 1)));
  prune_checkpoints(dir, keep);
  return Status::ok();
}

StatusOr<ResumePoint> find_resume_point(const std::string& dir, const CheckpointIdentity& identity, int rank) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::not_found("checkpoint_dir " + dir + ": no such folder to resume from");
  std::vector<std::string> incomplete;
  for (int64_t step : checkpoint_steps(dir)) {
    const std::string step_dir = checkpoint_step_dir(dir, step);
    if (!has_manifest(step_dir)) {
      incomplete.push_back(step_dir);
      continue;
    }
    const std::string path = (fs::path(step_dir) / kManifest).string();
    auto manifest = read_manifest(path, format_of(identity));
    if (!manifest.is_ok()) return manifest.status();
    CT_RETURN_IF_ERROR(check_identity(*manifest, path, identity, step));
    auto bytes = check_rank_files(*manifest, path, step_dir, identity.world_size, rank);
    if (!bytes.is_ok()) return bytes.status();
    ResumePoint point;
    point.step = step;
    point.step_dir = step_dir;
    point.rank_bytes = std::move(*bytes);
    point.rank_path = (fs::path(step_dir) / rank_file_name(rank)).string();
    if (!incomplete.empty()) {
      point.fallback_note = incomplete.front() + " is incomplete (no " + kManifest + "); resuming from " + step_dir;
    }
    return point;
  }
  return Status::not_found("checkpoint_dir " + dir + ": no complete checkpoint" +
                           (incomplete.empty() ? std::string(" (no step-NNNNNN folder)")
                                               : " (" + incomplete.front() + " has no " + kManifest + ")"));
}

}  // namespace clustertwin::real
