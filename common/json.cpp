#include "common/json.h"

#include "common/file_io.h"
#include "common/text.h"

namespace clustertwin {

StatusOr<nlohmann::ordered_json> parse_json(const std::string& text, const std::string& name) {
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // what() reads "[json.exception.parse_error.101] parse error at line 2, column 3: syntax error while ...":
    // keep the position and the reason, without the tag.
    std::string detail = e.what();
    if (const size_t tag = detail.find("] "); tag != std::string::npos) detail = detail.substr(tag + 2);
    if (detail.rfind("parse error ", 0) == 0) detail = detail.substr(12);
    return Status::invalid_argument(name + ": not valid JSON " + (detail.rfind("at ", 0) == 0 ? "" : ": ") + detail);
  } catch (const nlohmann::json::exception& e) {
    // Thrown however the parse is asked: a number beyond a double ("1e99999": out_of_range.406).
    return Status::invalid_argument(name + ": not valid JSON: " + quote_for_message(e.what()));
  }
}

StatusOr<nlohmann::ordered_json> read_json_file(const std::string& path) {
  auto text = read_file(path);
  if (!text.is_ok()) return text.status();
  return parse_json(*text, path);
}

std::string json_document(const nlohmann::ordered_json& doc, int indent) {
  return doc.dump(indent) + "\n";
}

}  // namespace clustertwin
