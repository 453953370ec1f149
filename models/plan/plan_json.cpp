// The plan reader's first half: JSON text to a document, with syntax errors
// and keys given twice named; the fields are checked in plan_json_parser.cpp.
#include "models/plan/plan_json.h"

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/file_io.h"
#include "models/plan/plan_json_internal.h"
#include "models/plan/plan_validator.h"

namespace clustertwin::models {
namespace {

using detail::index_path;
using detail::member_path;
using nlohmann::json;

// nlohmann keeps the last of two equal keys in an object; a plan written by
// hand must not lose the first silently. The parse callback sees each key;
// this follows where the parser is so that the duplicate can be named.
class DuplicateKeyFinder {
 public:
  void on_event(json::parse_event_t event, const json& parsed) {
    using Event = json::parse_event_t;
    if (event == Event::object_start || event == Event::array_start) {
      frames_.push_back({event == Event::object_start, {}, {}, 0});
    } else if (event == Event::key) {
      Frame& frame = frames_.back();
      frame.key = parsed.get<std::string>();
      if (!frame.keys.insert(frame.key).second && first_.empty()) first_ = path();
    } else if (event == Event::object_end || event == Event::array_end) {
      frames_.pop_back();
      element_done();
    } else {
      element_done();
    }
  }
  // The path of the first key given twice; "" when none was.
  const std::string& first() const { return first_; }

 private:
  struct Frame {
    bool object;
    std::set<std::string> keys;
    std::string key;  // object: the member being parsed
    size_t index;     // array: the element being parsed
  };
  void element_done() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
  }
  std::string path() const {
    std::string out;
    for (const Frame& frame : frames_)
      out = frame.object ? member_path(out, frame.key) : index_path(out, frame.index);
    return out;
  }
  std::vector<Frame> frames_;
  std::string first_;
};

}  // namespace

StatusOr<Plan> plan_from_json(std::string_view text, const std::string& name) {
  DuplicateKeyFinder duplicates;
  json doc;
  try {
    doc = json::parse(text.begin(), text.end(), [&duplicates](int, json::parse_event_t event, json& parsed) {
      duplicates.on_event(event, parsed);
      return true;
    });
  } catch (const json::exception& e) {
    // what() is "[json.exception.parse_error.101] parse error at line 1, column 5: ...".
    std::string what = e.what();
    if (const size_t end = what.find("] "); what.rfind("[json.exception.", 0) == 0 && end != std::string::npos) {
      what = what.substr(end + 2);
    }
    if (const auto* parse_error = dynamic_cast<const json::parse_error*>(&e)) {
      what += " (byte " + std::to_string(parse_error->byte) + ")";
    }
    return Status::invalid_argument(name + ": not valid JSON: " + what);
  }
  if (!duplicates.first().empty()) {
    return Status::invalid_argument(name + ": field '" + duplicates.first() + "': given twice");
  }
  StatusOr<Plan> plan = detail::plan_from_document(doc, name);
  if (!plan.is_ok()) return plan;
  CT_RETURN_IF_ERROR(validate_plan(*plan, name));
  return plan;
}

StatusOr<Plan> read_plan(const std::string& path) {
  StatusOr<std::string> text = read_file(path);
  if (!text.is_ok()) return text.status();
  return plan_from_json(*text, path);
}

}  // namespace clustertwin::models
