// The plan file's writer, by hand on purpose: a plan is a file people read,
// diff and edit, so it is laid out one task per line with its numbers in
// their shortest form ("1.2e+12" FLOPs; nlohmann would print
// 1200000000000.0), which nlohmann's dump cannot do. Strings go through
// nlohmann's escaping; tests/layering/json_writers.txt lists this file.

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/file_io.h"
#include "common/json_number.h"
#include "models/plan/plan_json.h"

namespace clustertwin::models {
namespace {

using nlohmann::json;

// Strings escaped by nlohmann, invalid UTF-8 replaced rather than thrown on.
std::string str(std::string_view text) {
  return json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace);
}

template <class T, class Format>
std::string list(const std::vector<T>& items, Format format) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i)
    out += (i == 0 ? "" : ", ") + format(items[i]);
  return out + "]";
}

std::string task_name(const Plan& plan, int id) {
  CT_CHECK(0 <= id && id < static_cast<int>(plan.tasks.size()))
      << "dep " << id << " in a plan of " << plan.tasks.size();
  return str(plan.tasks[id].name);
}

std::string group_json(const GroupSpec& group) {
  switch (group.kind) {
    case GroupSpec::Kind::kWorld:
      return "\"world\"";
    case GroupSpec::Kind::kNode:
      return "\"node\"";
    case GroupSpec::Kind::kBlock:
      return "{\"block\": " + std::to_string(group.size) + "}";
    case GroupSpec::Kind::kStride:
      return "{\"stride\": " + std::to_string(group.size) +
             (group.span > 0 ? ", \"span\": " + std::to_string(group.span) : std::string()) + "}";
  }
  CT_CHECK(false) << "group kind " << static_cast<int>(group.kind);
  return {};
}

std::string collective_json(const Collective& c) {
  std::string out = "{\"op\": " + str(collective_op_name(c.op));
  if (c.group != GroupSpec{}) out += ", \"group\": " + group_json(c.group);
  if (c.algorithm != Algorithm::kAuto) out += ", \"algorithm\": " + str(algorithm_name(c.algorithm));
  if (c.root != 0) out += ", \"root\": " + std::to_string(c.root);
  if (c.peer_offset != 0) out += ", \"peer_offset\": " + std::to_string(c.peer_offset);
  if (c.tag != 0) out += ", \"tag\": " + std::to_string(c.tag);
  if (!c.split_bytes.empty()) {
    out += ", \"split_bytes\": " + list(c.split_bytes, [](int64_t b) { return std::to_string(b); });
  }
  return out + "}";
}

// One line; fields that hold their plan.h default are left out.
std::string task_json(const Plan& plan, const Task& t) {
  CT_CHECK(0 <= t.stream && t.stream < static_cast<int>(plan.streams.size())) << "task " << t.name;
  std::string out = "{\"name\": " + str(t.name) + ", \"kind\": " + str(task_kind_name(t.kind)) +
                    ", \"stream\": " + str(plan.streams[t.stream]);
  if (t.flops != 0) out += ", \"flops\": " + json_number(t.flops);
  if (t.bytes != 0) out += ", \"bytes\": " + std::to_string(t.bytes);
  if (!t.cost_key.empty()) out += ", \"cost_key\": " + str(t.cost_key);
  if (!t.dtype.empty()) out += ", \"dtype\": " + str(t.dtype);
  if (t.collective) out += ", \"collective\": " + collective_json(*t.collective);
  const auto by_name = [&plan](int id) { return task_name(plan, id); };
  if (!t.deps.empty()) out += ", \"deps\": " + list(t.deps, by_name);
  if (!t.prev_step_deps.empty()) out += ", \"prev_step_deps\": " + list(t.prev_step_deps, by_name);
  if (t.micro_batch != -1) out += ", \"micro_batch\": " + std::to_string(t.micro_batch);
  if (t.batch_offset != 0) out += ", \"batch_offset\": " + std::to_string(t.batch_offset);
  if (t.requests != 0) out += ", \"requests\": " + std::to_string(t.requests);
  if (t.grad_bytes != 0) out += ", \"grad_bytes\": " + std::to_string(t.grad_bytes);
  if (t.launches != 0) out += ", \"launches\": " + std::to_string(t.launches);
  if (t.sync) out += ", \"sync\": true";
  if (!t.ranks.empty()) {
    out += ", \"ranks\": " + list(t.ranks, [](const RankRange& r) {
             return "[" + std::to_string(r.begin) + ", " + std::to_string(r.end) + "]";
           });
  }
  return out + "}";
}

}  // namespace

std::string plan_to_json(const Plan& plan) {
  std::string out = "{\n";
  out += "  \"system\": " + str(plan.system) + ",\n";
  out += "  \"variant\": " + str(plan.variant) + ",\n";
  out += "  \"streams\": " + list(plan.streams, [](const std::string& s) { return str(s); }) + ",\n";
  if (plan.tasks.empty()) return out + "  \"tasks\": []\n}\n";
  out += "  \"tasks\": [\n";
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    out += "    " + task_json(plan, plan.tasks[i]) + (i + 1 < plan.tasks.size() ? ",\n" : "\n");
  }
  return out + "  ]\n}\n";
}

Status write_plan(const std::string& path, const Plan& plan) {
  return write_file_atomically(path, plan_to_json(plan));
}

}  // namespace clustertwin::models
