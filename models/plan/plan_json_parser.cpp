// The plan reader's second half: a parsed JSON document to a Plan, each
// field checked for its type and range (the schema of plan_json.h), and the
// stream and task names resolved.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <span>

#include "common/text.h"
#include "models/plan/plan_json_internal.h"

namespace clustertwin::models {
namespace {

using detail::index_path;
using detail::member_path;
using nlohmann::json;
using Fields = std::span<const std::string_view>;

constexpr std::string_view kTopFields[] = {"system", "variant", "streams", "tasks"};
constexpr std::string_view kTaskFields[] = {"name",        "kind",         "stream",     "flops",      "bytes",
                                            "cost_key",    "dtype",        "collective", "deps",       "prev_step_deps",
                                            "micro_batch", "batch_offset", "requests",   "grad_bytes", "ranks",
                                            "launches",    "sync"};
constexpr std::string_view kCollectiveFields[] = {"op",          "group", "algorithm",  "root",
                                                  "peer_offset", "tag",   "split_bytes"};
constexpr std::string_view kGroupFields[] = {"block", "stride", "span"};

constexpr TaskKind kAllKinds[] = {TaskKind::kCompute, TaskKind::kCollective, TaskKind::kCopy, TaskKind::kLookup,
                                  TaskKind::kHost};
constexpr CollectiveOp kAllOps[] = {CollectiveOp::kAllReduce,     CollectiveOp::kAllToAll,  CollectiveOp::kAllGather,
                                    CollectiveOp::kReduceScatter, CollectiveOp::kBroadcast, CollectiveOp::kSend,
                                    CollectiveOp::kRecv};
constexpr Algorithm kAllAlgorithms[] = {Algorithm::kAuto,         Algorithm::kRing,
                                        Algorithm::kTree,         Algorithm::kHalvingDoubling,
                                        Algorithm::kHierarchical, Algorithm::kDirect};

template <class Range, class Name>
std::string join(const Range& items, Name name) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    out += name(item);
  }
  return out;
}

std::string dumped(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A number as the user wrote it, near enough: "-5", "1.5", "inf".
std::string number_text(const json& value) {
  if (value.is_number_float() && !std::isfinite(value.get<double>())) {
    const double d = value.get<double>();
    return std::isnan(d) ? "nan" : d > 0 ? "inf" : "-inf";
  }
  return dumped(value);
}

// "a string ('abc')", "a number (1.5)", "an object", ...
std::string describe(const json& value) {
  if (value.is_string()) return "a string (" + quote_for_message(value.get_ref<const std::string&>()) + ")";
  if (value.is_number()) return "a number (" + number_text(value) + ")";
  if (value.is_boolean()) return std::string("a boolean (") + (value.get<bool>() ? "true" : "false") + ")";
  if (value.is_object()) return "an object";
  if (value.is_array()) return "an array";
  return "null";
}

// Turns a parsed document into a Plan; each method checks one kind of value
// and returns the error for the first bad one.
class PlanParser {
 public:
  explicit PlanParser(const std::string& name) : name_(name) {}

  StatusOr<Plan> parse(const json& doc) {
    Plan plan;
    CT_RETURN_IF_ERROR(object(doc, "", kTopFields));
    if (const json* v = member(doc, "system")) CT_RETURN_IF_ERROR(string(*v, "system", &plan.system));
    if (const json* v = member(doc, "variant")) CT_RETURN_IF_ERROR(string(*v, "variant", &plan.variant));
    const json* streams = nullptr;
    CT_RETURN_IF_ERROR(required(doc, "", "streams", &streams));
    CT_RETURN_IF_ERROR(string_list(*streams, "streams", &plan.streams));
    for (size_t i = 0; i < plan.streams.size(); ++i) {
      if (!stream_ids_.emplace(plan.streams[i], static_cast<int>(i)).second) {
        return error(index_path("streams", i), "duplicate stream " + quote_for_message(plan.streams[i]));
      }
    }
    stream_list_ = join(plan.streams, [](const std::string& s) { return s; });
    const json* tasks = nullptr;
    CT_RETURN_IF_ERROR(required(doc, "", "tasks", &tasks));
    if (!tasks->is_array()) return error("tasks", "expected an array, got " + describe(*tasks));
    plan.tasks.resize(tasks->size());
    dep_names_.resize(tasks->size());
    for (size_t i = 0; i < tasks->size(); ++i) {
      plan.tasks[i].id = static_cast<int>(i);
      CT_RETURN_IF_ERROR(task((*tasks)[i], index_path("tasks", i), &plan.tasks[i], &dep_names_[i]));
    }
    // Names are resolved after all tasks are read: a dep may name a later task.
    CT_RETURN_IF_ERROR(index_names(plan));
    for (Task& t : plan.tasks) {
      CT_RETURN_IF_ERROR(resolve(t, "deps", dep_names_[t.id].first, &t.deps));
      CT_RETURN_IF_ERROR(resolve(t, "prev_step_deps", dep_names_[t.id].second, &t.prev_step_deps));
    }
    return plan;
  }

 private:
  using DepNames = std::pair<std::vector<std::string>, std::vector<std::string>>;

  Status error(const std::string& path, const std::string& message) const {
    return Status::invalid_argument(name_ + ": " + (path.empty() ? "top level" : "field '" + path + "'") + ": " +
                                    message);
  }

  static const json* member(const json& obj, std::string_view key) {
    const auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  Status required(const json& obj, const std::string& path, std::string_view key, const json** out) const {
    *out = member(obj, key);
    if (*out == nullptr) return error(member_path(path, key), "missing (the field is required)");
    return Status::ok();
  }

  // An object whose keys are all in `allowed`.
  Status object(const json& v, const std::string& path, Fields allowed) const {
    if (!v.is_object()) return error(path, "expected an object, got " + describe(v));
    for (const auto& item : v.items()) {
      if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end()) {
        const std::string names = join(allowed, [](std::string_view f) { return f; });
        return error(member_path(path, item.key()), "unknown field (allowed: " + names + ")");
      }
    }
    return Status::ok();
  }

  Status string(const json& v, const std::string& path, std::string* out) const {
    if (!v.is_string()) return error(path, "expected a string, got " + describe(v));
    *out = v.get<std::string>();
    return Status::ok();
  }

  Status string_list(const json& v, const std::string& path, std::vector<std::string>* out) const {
    if (!v.is_array()) return error(path, "expected an array of strings, got " + describe(v));
    out->resize(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      CT_RETURN_IF_ERROR(string(v[i], index_path(path, i), &(*out)[i]));
    return Status::ok();
  }

  // An integer in [min, max]; a float with an integral value (1e8) counts.
  Status integer(const json& v, const std::string& path, int64_t min, int64_t max, int64_t* out) const {
    const std::string expected = min >= 0 ? "a non-negative integer" : "an integer";
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(max)) {
      return error(path, number_text(v) + " must be <= " + std::to_string(max));
    } else if (v.is_number_integer()) {
      *out = v.get<int64_t>();
    } else if (v.is_number_float()) {
      const double d = v.get<double>();
      constexpr double kTwoTo63 = 9223372036854775808.0;
      if (!std::isfinite(d) || d != std::floor(d) || d < -kTwoTo63 || d >= kTwoTo63) {
        return error(path, "expected " + expected + ", got " + describe(v));
      }
      *out = static_cast<int64_t>(d);
    } else {
      return error(path, "expected " + expected + ", got " + describe(v));
    }
    if (*out < min) return error(path, number_text(v) + " must be >= " + std::to_string(min));
    if (*out > max) return error(path, number_text(v) + " must be <= " + std::to_string(max));
    return Status::ok();
  }

  // One of the names of an enum: "unknown kind 'gpu' (allowed: compute, ...)" otherwise.
  template <class Enum, size_t N>
  Status named(const json& v, const std::string& path, std::string_view what, const Enum (&all)[N],
               std::string_view (*name_of)(Enum), Enum* out) const {
    std::string text;
    CT_RETURN_IF_ERROR(string(v, path, &text));
    for (Enum value : all) {
      if (name_of(value) == text) {
        *out = value;
        return Status::ok();
      }
    }
    return error(path, "unknown " + std::string(what) + " " + quote_for_message(text) +
                           " (allowed: " + join(all, name_of) + ")");
  }

  Status int32(const json& v, const std::string& path, int min, int* out) const {
    int64_t value = 0;
    CT_RETURN_IF_ERROR(integer(v, path, min, std::numeric_limits<int>::max(), &value));
    *out = static_cast<int>(value);
    return Status::ok();
  }

  Status task(const json& v, const std::string& path, Task* t, DepNames* dep_names) const {
    CT_RETURN_IF_ERROR(object(v, path, kTaskFields));
    const json* field = nullptr;
    CT_RETURN_IF_ERROR(required(v, path, "name", &field));
    CT_RETURN_IF_ERROR(string(*field, member_path(path, "name"), &t->name));
    CT_RETURN_IF_ERROR(required(v, path, "kind", &field));
    CT_RETURN_IF_ERROR(named(*field, member_path(path, "kind"), "kind", kAllKinds, task_kind_name, &t->kind));
    std::string text;
    CT_RETURN_IF_ERROR(required(v, path, "stream", &field));
    CT_RETURN_IF_ERROR(string(*field, member_path(path, "stream"), &text));
    const auto stream = stream_ids_.find(text);
    if (stream == stream_ids_.end()) {
      return Status::invalid_argument(name_ + ": task " + quote_for_message(t->name) +
                                      ": field 'stream': unknown stream " + quote_for_message(text) +
                                      " (streams: " + stream_list_ + ")");
    }
    t->stream = stream->second;
    if ((field = member(v, "flops"))) {
      if (!field->is_number()) return error(member_path(path, "flops"), "expected a number, got " + describe(*field));
      t->flops = field->get<double>();
      if (!std::isfinite(t->flops)) return error(member_path(path, "flops"), number_text(*field) + " is not finite");
      if (t->flops < 0) return error(member_path(path, "flops"), number_text(*field) + " must be >= 0");
    }
    if ((field = member(v, "bytes"))) {
      CT_RETURN_IF_ERROR(
          integer(*field, member_path(path, "bytes"), 0, std::numeric_limits<int64_t>::max(), &t->bytes));
    }
    if ((field = member(v, "cost_key")))
      CT_RETURN_IF_ERROR(string(*field, member_path(path, "cost_key"), &t->cost_key));
    if ((field = member(v, "dtype"))) CT_RETURN_IF_ERROR(string(*field, member_path(path, "dtype"), &t->dtype));
    if ((field = member(v, "collective"))) {
      t->collective.emplace();
      CT_RETURN_IF_ERROR(collective(*field, member_path(path, "collective"), &*t->collective));
    }
    if ((field = member(v, "deps")))
      CT_RETURN_IF_ERROR(string_list(*field, member_path(path, "deps"), &dep_names->first));
    if ((field = member(v, "prev_step_deps"))) {
      CT_RETURN_IF_ERROR(string_list(*field, member_path(path, "prev_step_deps"), &dep_names->second));
    }
    if ((field = member(v, "micro_batch")))
      CT_RETURN_IF_ERROR(int32(*field, member_path(path, "micro_batch"), -1, &t->micro_batch));
    if ((field = member(v, "batch_offset")))
      CT_RETURN_IF_ERROR(int32(*field, member_path(path, "batch_offset"), 0, &t->batch_offset));
    if ((field = member(v, "requests")))
      CT_RETURN_IF_ERROR(
          integer(*field, member_path(path, "requests"), 0, std::numeric_limits<int64_t>::max(), &t->requests));
    if ((field = member(v, "grad_bytes"))) {
      CT_RETURN_IF_ERROR(
          integer(*field, member_path(path, "grad_bytes"), 0, std::numeric_limits<int64_t>::max(), &t->grad_bytes));
    }
    if ((field = member(v, "ranks"))) CT_RETURN_IF_ERROR(ranks(*field, member_path(path, "ranks"), &t->ranks));
    if ((field = member(v, "launches")))
      CT_RETURN_IF_ERROR(int32(*field, member_path(path, "launches"), 0, &t->launches));
    if ((field = member(v, "sync"))) {
      if (!field->is_boolean())
        return error(member_path(path, "sync"), "expected true or false, got " + describe(*field));
      t->sync = field->get<bool>();
    }
    return Status::ok();
  }

  Status ranks(const json& v, const std::string& path, std::vector<RankRange>* out) const {
    if (!v.is_array()) return error(path, "expected an array of [begin, end] ranges, got " + describe(v));
    out->resize(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string range_path = index_path(path, i);
      if (!v[i].is_array() || v[i].size() != 2) {
        return error(range_path, "expected a range [begin, end], got " +
                                     (v[i].is_array() ? "an array of " + std::to_string(v[i].size()) : describe(v[i])));
      }
      CT_RETURN_IF_ERROR(int32(v[i][0], index_path(range_path, 0), 0, &(*out)[i].begin));
      CT_RETURN_IF_ERROR(int32(v[i][1], index_path(range_path, 1), -1, &(*out)[i].end));
    }
    return Status::ok();
  }

  Status collective(const json& v, const std::string& path, Collective* c) const {
    CT_RETURN_IF_ERROR(object(v, path, kCollectiveFields));
    const json* field = nullptr;
    CT_RETURN_IF_ERROR(required(v, path, "op", &field));
    CT_RETURN_IF_ERROR(named(*field, member_path(path, "op"), "op", kAllOps, collective_op_name, &c->op));
    if ((field = member(v, "group"))) CT_RETURN_IF_ERROR(group(*field, member_path(path, "group"), &c->group));
    if ((field = member(v, "algorithm"))) {
      CT_RETURN_IF_ERROR(
          named(*field, member_path(path, "algorithm"), "algorithm", kAllAlgorithms, algorithm_name, &c->algorithm));
    }
    constexpr int kMinInt = std::numeric_limits<int>::min();
    if ((field = member(v, "root"))) CT_RETURN_IF_ERROR(int32(*field, member_path(path, "root"), 0, &c->root));
    if ((field = member(v, "peer_offset"))) {
      CT_RETURN_IF_ERROR(int32(*field, member_path(path, "peer_offset"), kMinInt, &c->peer_offset));
    }
    if ((field = member(v, "tag"))) CT_RETURN_IF_ERROR(int32(*field, member_path(path, "tag"), kMinInt, &c->tag));
    if ((field = member(v, "split_bytes"))) {
      const std::string split_path = member_path(path, "split_bytes");
      if (!field->is_array()) return error(split_path, "expected an array of integers, got " + describe(*field));
      c->split_bytes.resize(field->size());
      for (size_t i = 0; i < field->size(); ++i) {
        CT_RETURN_IF_ERROR(integer((*field)[i], index_path(split_path, i), 0, std::numeric_limits<int64_t>::max(),
                                   &c->split_bytes[i]));
      }
    }
    return Status::ok();
  }

  Status group(const json& v, const std::string& path, GroupSpec* g) const {
    const std::string allowed = "(allowed: \"world\", \"node\", {\"block\": G}, {\"stride\": G[, \"span\": S]})";
    if (v.is_string()) {
      const std::string& text = v.get_ref<const std::string&>();
      if (text == "world") return Status::ok();
      if (text != "node") return error(path, "unknown group " + quote_for_message(text) + " " + allowed);
      g->kind = GroupSpec::Kind::kNode;
      return Status::ok();
    }
    if (!v.is_object()) return error(path, "expected a group " + allowed + ", got " + describe(v));
    CT_RETURN_IF_ERROR(object(v, path, kGroupFields));
    const bool block = v.contains("block"), stride = v.contains("stride");
    if (block == stride) return error(path, "expected exactly one of 'block' or 'stride' " + allowed);
    if (v.contains("span") && !stride) return error(path, "'span' is only for a 'stride' group " + allowed);
    g->kind = block ? GroupSpec::Kind::kBlock : GroupSpec::Kind::kStride;
    const char* key = block ? "block" : "stride";
    CT_RETURN_IF_ERROR(int32(v.at(key), member_path(path, key), 1, &g->size));
    if (v.contains("span")) CT_RETURN_IF_ERROR(int32(v.at("span"), member_path(path, "span"), 1, &g->span));
    return Status::ok();
  }

  Status resolve(const Task& t, std::string_view field, const std::vector<std::string>& names,
                 std::vector<int>* out) const {
    out->clear();
    for (const std::string& dep : names) {
      const auto it = task_ids_.find(dep);
      if (it == task_ids_.end()) {
        return Status::invalid_argument(name_ + ": task " + quote_for_message(t.name) + ": field '" +
                                        std::string(field) + "': unknown task " + quote_for_message(dep));
      }
      out->push_back(it->second);
    }
    return Status::ok();
  }

  // Task names must be unique before deps can be resolved; returns the error
  // for the first name given twice.
  Status index_names(const Plan& plan) {
    for (const Task& t : plan.tasks) {
      const auto [it, inserted] = task_ids_.emplace(t.name, t.id);
      if (!inserted) {
        return error(index_path("tasks", t.id) + ".name", "duplicate task name " + quote_for_message(t.name) +
                                                              " (also tasks[" + std::to_string(it->second) + "])");
      }
    }
    return Status::ok();
  }

  const std::string& name_;
  std::map<std::string, int> stream_ids_;
  std::string stream_list_;  // "compute, comm"
  std::map<std::string, int> task_ids_;
  std::vector<DepNames> dep_names_;
};

}  // namespace

namespace detail {

StatusOr<Plan> plan_from_document(const nlohmann::json& doc, const std::string& name) {
  return PlanParser(name).parse(doc);
}

}  // namespace detail
}  // namespace clustertwin::models
