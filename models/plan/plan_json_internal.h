#pragma once

// The plan reader's parts (internal to models/plan/), one concept per file:
//
//   plan_json.cpp         text to a JSON document: its syntax, and no key
//                         given twice (plan_from_json, read_plan)
//   plan_json_parser.cpp  the document to a Plan: each field's type and
//                         range, and the stream and task names it uses

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "common/status.h"
#include "models/plan/plan.h"

namespace clustertwin::models::detail {

// Where a value lies in the document, for messages: "tasks[2].collective.op".
inline std::string member_path(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}
inline std::string index_path(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

// The plan `doc` describes, before validate_plan; InvalidArgument naming
// `name`, the field and the bad value for the first field that is wrong.
StatusOr<Plan> plan_from_document(const nlohmann::json& doc, const std::string& name);

}  // namespace clustertwin::models::detail
