#include "traces/json_text.h"

#include <charconv>

#include "common/check.h"

namespace clustertwin::traces {

void append_json_string(std::string* out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t run_start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out->append(text.data() + run_start, i - run_start);
    run_start = i + 1;
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\r':
        out->append("\\r");
        break;
      default:
        out->append("\\u00");
        out->push_back(kHex[c >> 4]);
        out->push_back(kHex[c & 0xF]);
    }
  }
  out->append(text.data() + run_start, text.size() - run_start);
  out->push_back('"');
}

void append_json_int(std::string* out, int64_t value) {
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  CT_CHECK(ec == std::errc()) << "to_chars failed for " << value;
  out->append(buffer, end);
}

bool copy_json_value(JsonCursor& cursor, JsonCursor::Token first, std::string* out) {
  using Token = JsonCursor::Token;
  const size_t base_depth = cursor.depth() - ((first == Token::kBeginObject || first == Token::kBeginArray) ? 1 : 0);
  Token token = first;
  bool need_comma = false;
  for (;;) {
    switch (token) {
      case Token::kBeginObject:
      case Token::kBeginArray:
        if (need_comma) out->push_back(',');
        out->push_back(token == Token::kBeginObject ? '{' : '[');
        need_comma = false;
        break;
      case Token::kEndObject:
      case Token::kEndArray:
        out->push_back(token == Token::kEndObject ? '}' : ']');
        need_comma = true;
        break;
      case Token::kKey:
        if (need_comma) out->push_back(',');
        append_json_string(out, cursor.text());
        out->push_back(':');
        need_comma = false;
        break;
      case Token::kString:
        if (need_comma) out->push_back(',');
        append_json_string(out, cursor.text());
        need_comma = true;
        break;
      case Token::kNumber:
        if (need_comma) out->push_back(',');
        out->append(cursor.number_text());
        need_comma = true;
        break;
      case Token::kTrue:
      case Token::kFalse:
      case Token::kNull:
        if (need_comma) out->push_back(',');
        out->append(token == Token::kTrue ? "true" : token == Token::kFalse ? "false" : "null");
        need_comma = true;
        break;
      case Token::kEnd:
      case Token::kError:
        return false;
    }
    if (cursor.depth() == base_depth) return true;
    token = cursor.next();
  }
}

}  // namespace clustertwin::traces
