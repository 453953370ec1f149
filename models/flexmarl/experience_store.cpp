#include "models/flexmarl/experience_store.h"

#include <charconv>
#include <limits>

#include "common/text.h"

namespace clustertwin::models::flexmarl {
namespace {

// A non-negative integer filling all of `text`.
template <typename T>
bool parse_whole(std::string_view text, T* out) {
  if (text.empty()) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return error == std::errc() && end == text.data() + text.size() && *out >= 0;
}

}  // namespace

std::string SampleId::str() const {
  return std::to_string(input) + "_" + std::to_string(turn) + "_" + std::to_string(trajectory);
}

StatusOr<SampleId> parse_sample_id(std::string_view text) {
  const size_t first = text.find('_');
  const size_t second = first == std::string_view::npos ? first : text.find('_', first + 1);
  SampleId id;
  if (second == std::string_view::npos || !parse_whole(text.substr(0, first), &id.input) ||
      !parse_whole(text.substr(first + 1, second - first - 1), &id.turn) ||
      !parse_whole(text.substr(second + 1), &id.trajectory)) {
    return Status::invalid_argument("sample id " + quote_for_message(text) +
                                    ": expected INPUT_TURN_TRAJECTORY, three non-negative integers");
  }
  return id;
}

ExperienceTable::ExperienceTable(std::string agent, std::vector<std::string> fields)
    : agent_(std::move(agent)), fields_(std::move(fields)) {}

int64_t ExperienceTable::published_version() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return published_;
}

int ExperienceTable::field_index(const std::string& field) const {
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i] == field) return static_cast<int>(i);
  }
  return -1;
}

std::string ExperienceTable::where(const SampleId& id, int64_t version) const {
  return "experience store: agent " + agent_ + ": sample " + id.str() + " of policy version " + std::to_string(version);
}

Status ExperienceTable::publish(int64_t version) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (version != published_ + 1) {
    return Status::internal("experience store: agent " + agent_ + ": publishing version " + std::to_string(version) +
                            " after " + std::to_string(published_) + " (versions go up by one)");
  }
  published_ = version;
  return Status::ok();
}

Status ExperienceTable::insert(const SampleId& id, int64_t version) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (version != published_) {
    return Status::internal(where(id, version) + ": written while version " + std::to_string(published_) +
                            " is published (a rollout on a stale policy)");
  }
  Row row;
  row.values.resize(fields_.size());
  row.ready.assign(fields_.size(), false);
  if (!rows_.emplace(Key{version, id}, std::move(row)).second)
    return Status::internal(where(id, version) + ": inserted twice");
  return Status::ok();
}

Status ExperienceTable::put(const SampleId& id, int64_t version, const std::string& field, FieldValue value) {
  const int f = field_index(field);
  if (f < 0) return Status::internal(where(id, version) + ": no field '" + field + "' in this table");
  std::lock_guard<std::mutex> lock(mutex_);
  if (version != published_) {
    return Status::internal(where(id, version) + ": field '" + field + "' written while version " +
                            std::to_string(published_) + " is published (a rollout on a stale policy)");
  }
  const auto it = rows_.find(Key{version, id});
  if (it == rows_.end()) return Status::internal(where(id, version) + ": field '" + field + "' written before insert");
  Row& row = it->second;
  if (row.ready[static_cast<size_t>(f)])
    return Status::internal(where(id, version) + ": field '" + field + "' written twice");
  row.values[static_cast<size_t>(f)] = std::move(value);
  row.ready[static_cast<size_t>(f)] = true;
  ++row.ready_count;
  return Status::ok();
}

bool ExperienceTable::ready(const SampleId& id, int64_t version, const std::string& field) const {
  const int f = field_index(field);
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = rows_.find(Key{version, id});
  return f >= 0 && it != rows_.end() && it->second.ready[static_cast<size_t>(f)];
}

bool ExperienceTable::complete(const SampleId& id, int64_t version) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = rows_.find(Key{version, id});
  return it != rows_.end() && it->second.ready_count == fields_.size();
}

std::vector<SampleId> ExperienceTable::take(int64_t version, size_t n, bool all_or_nothing) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::map<Key, Row>::iterator> chosen;
  const SampleId lowest{std::numeric_limits<int64_t>::min(), std::numeric_limits<int32_t>::min(),
                        std::numeric_limits<int32_t>::min()};
  for (auto it = rows_.lower_bound(Key{version, lowest});
       it != rows_.end() && it->first.first == version && chosen.size() < n; ++it) {
    if (!it->second.taken && it->second.ready_count == fields_.size()) chosen.push_back(it);
  }
  std::vector<SampleId> out;
  if (all_or_nothing && chosen.size() < n) return out;
  for (auto it : chosen) {
    it->second.taken = true;
    out.push_back(it->first.second);
  }
  return out;
}

StatusOr<FieldValue> ExperienceTable::get(const SampleId& id, int64_t reader_version, const std::string& field) const {
  const int f = field_index(field);
  if (f < 0) return Status::internal(where(id, reader_version) + ": no field '" + field + "' in this table");
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = rows_.find(Key{reader_version, id});
  if (it == rows_.end()) {
    // Name the version the row does have, if any: the usual cause is a trainer on the wrong policy.
    for (const auto& [key, row] : rows_) {
      if (key.second == id) {
        return Status::internal(where(id, key.first) + ": read by policy version " + std::to_string(reader_version));
      }
    }
    return Status::internal(where(id, reader_version) + ": no such row");
  }
  if (!it->second.ready[static_cast<size_t>(f)])
    return Status::internal(where(id, reader_version) + ": field '" + field + "' read before it is ready");
  return it->second.values[static_cast<size_t>(f)];
}

Status ExperienceTable::mark_trained(const SampleId& id, int64_t version) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = rows_.find(Key{version, id});
  if (it == rows_.end() || !it->second.taken)
    return Status::internal(where(id, version) + ": marked trained without being taken");
  rows_.erase(it);
  return Status::ok();
}

ExperienceTable::Counts ExperienceTable::counts(int64_t version) const {
  std::lock_guard<std::mutex> lock(mutex_);
  Counts c;
  for (const auto& [key, row] : rows_) {
    if (key.first != version) continue;
    ++c.rows;
    c.complete += row.ready_count == fields_.size();
    c.taken += row.taken;
  }
  return c;
}

Status ExperienceStore::add_agent(const std::string& agent, std::vector<std::string> fields) {
  if (agent.empty()) return Status::invalid_argument("experience store: an agent needs a name");
  if (tables_.count(agent) != 0) return Status::invalid_argument("experience store: agent '" + agent + "' added twice");
  tables_.emplace(agent, std::make_unique<ExperienceTable>(agent, std::move(fields)));
  return Status::ok();
}

StatusOr<ExperienceTable*> ExperienceStore::table(const std::string& agent) {
  const auto it = tables_.find(agent);
  if (it != tables_.end()) return it->second.get();
  std::string known;
  for (const auto& [name, table] : tables_)
    known += (known.empty() ? "" : ", ") + name;
  return Status::not_found("experience store: no agent '" + agent + "' (agents: " + known + ")");
}

std::vector<std::string> ExperienceStore::agents() const {
  std::vector<std::string> out;
  for (const auto& [name, table] : tables_)
    out.push_back(name);
  return out;
}

}  // namespace clustertwin::models::flexmarl
