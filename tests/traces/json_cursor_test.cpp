#include "traces/json_cursor.h"

#include <gtest/gtest.h>

#include "common/file_io.h"
#include "traces/json_text.h"

namespace clustertwin::traces {
namespace {

using Token = JsonCursor::Token;

std::vector<Token> tokens(std::string_view text) {
  JsonCursor cursor(text, "t.json");
  std::vector<Token> out;
  for (;;) {
    const Token t = cursor.next();
    out.push_back(t);
    if (t == Token::kEnd || t == Token::kError) return out;
  }
}

std::string error_of(std::string_view text) {
  JsonCursor cursor(text, "t.json");
  for (;;) {
    const Token t = cursor.next();
    if (t == Token::kEnd) return "";
    if (t == Token::kError) return cursor.status().message();
  }
}

TEST(JsonCursorTest, TokenizesNestedDocument) {
  const std::vector<Token> expected = {Token::kBeginObject, Token::kKey,       Token::kBeginArray, Token::kNumber,
                                       Token::kString,      Token::kTrue,      Token::kFalse,      Token::kNull,
                                       Token::kBeginObject, Token::kEndObject, Token::kEndArray,   Token::kEndObject,
                                       Token::kEnd};
  EXPECT_EQ(tokens(R"( {"a": [1, "x", true, false, null, {}]} )"), expected);
}

TEST(JsonCursorTest, DecodesNumbers) {
  JsonCursor cursor("[-0.5e2, 12, 9007199254740993, 1.0]", "t");
  ASSERT_EQ(cursor.next(), Token::kBeginArray);
  ASSERT_EQ(cursor.next(), Token::kNumber);
  EXPECT_DOUBLE_EQ(cursor.number(), -50.0);
  EXPECT_FALSE(cursor.is_integer());
  ASSERT_EQ(cursor.next(), Token::kNumber);
  EXPECT_TRUE(cursor.is_integer());
  EXPECT_EQ(cursor.integer(), 12);
  ASSERT_EQ(cursor.next(), Token::kNumber);
  EXPECT_EQ(cursor.integer(), 9007199254740993);  // 2^53 + 1: exact as an integer, not through a double
  ASSERT_EQ(cursor.next(), Token::kNumber);
  EXPECT_FALSE(cursor.is_integer());  // "1.0" has a fraction
}

TEST(JsonCursorTest, DecodesEscapes) {
  JsonCursor cursor(R"(["a\"b\\c\/\n\u00e9\ud83d\ude00"])", "t");
  ASSERT_EQ(cursor.next(), Token::kBeginArray);
  ASSERT_EQ(cursor.next(), Token::kString);
  EXPECT_EQ(cursor.text(), "a\"b\\c/\n\xC3\xA9\xF0\x9F\x98\x80");  // é is C3 A9; U+1F600 is F0 9F 98 80
}

struct BadCase {
  const char* text;
  const char* message_part;
};

class JsonCursorErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(JsonCursorErrorTest, RejectsWithMessage) {
  const std::string message = error_of(GetParam().text);
  EXPECT_NE(message.find(GetParam().message_part), std::string::npos) << "message: " << message;
  EXPECT_EQ(message.rfind("t.json: ", 0), 0u) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, JsonCursorErrorTest,
    ::testing::Values(BadCase{"", "not JSON: the input is empty"},
                      BadCase{"hello", "not JSON: unexpected 'h' at byte 0"}, BadCase{"[1,]", "unexpected ']'"},
                      BadCase{"[1 2]", "expected ',' or ']', got '2'"},
                      BadCase{R"({"a" 1})", "expected ':' after a member name"},
                      BadCase{"{1: 2}", "expected a member name in quotes"}, BadCase{"[01]", "bad number '01'"},
                      BadCase{"[1.]", "bad number '1.'"}, BadCase{"[1e]", "bad number '1e'"},
                      BadCase{R"(["\x"])", "bad escape"}, BadCase{"[\"a\nb\"]", "control character 0x0A"},
                      BadCase{"[1] [2]", "after the end of the document"},
                      BadCase{R"({"a": [1, 2)", "truncated: the input ends at byte 11 inside an array"},
                      BadCase{R"(["abc)", "truncated"}, BadCase{"[tru", "truncated"},
                      BadCase{"[nul]", "unexpected 'n'"}, BadCase{"[1e999]", "out of the range of a double"}));

TEST(JsonCursorTest, RejectsExcessiveNesting) {
  const std::string deep(JsonCursor::kMaxDepth + 1, '[');
  EXPECT_NE(error_of(deep).find("nesting deeper than 256 levels"), std::string::npos);
}

TEST(JsonCursorTest, StreamsTokensLongerThanTheWindowFromAFile) {
  // A 3 MiB string crosses the 1 MiB read window several times.
  const std::string path = ::testing::TempDir() + "ct_cursor_long.json.gz";
  const std::string payload(3 << 20, 'z');
  ASSERT_TRUE(write_file_atomically(path, "{\"k\": [\"" + payload + "\", 7]}").is_ok());
  auto file = InputFile::open(path);
  ASSERT_TRUE(file.is_ok());
  JsonCursor cursor(file->get(), path);
  ASSERT_EQ(cursor.next(), Token::kBeginObject);
  ASSERT_EQ(cursor.next(), Token::kKey);
  ASSERT_EQ(cursor.next(), Token::kBeginArray);
  ASSERT_EQ(cursor.next(), Token::kString);
  EXPECT_EQ(cursor.text().size(), payload.size());
  ASSERT_EQ(cursor.next(), Token::kNumber);
  EXPECT_EQ(cursor.integer(), 7);
  EXPECT_EQ(cursor.next(), Token::kEndArray);
  EXPECT_EQ(cursor.next(), Token::kEndObject);
  EXPECT_EQ(cursor.next(), Token::kEnd);
}

TEST(JsonTextTest, CopyValueIsCompactAndKeepsOrder) {
  JsonCursor cursor(R"({ "b" : [1, 2.50, {"x": null}], "a": "q\"" } )", "t");
  const Token first = cursor.next();
  std::string out;
  ASSERT_TRUE(copy_json_value(cursor, first, &out));
  EXPECT_EQ(out, R"({"b":[1,2.50,{"x":null}],"a":"q\""})");
}

TEST(JsonTextTest, NumbersRoundTripExactly) {
  for (double v : {0.0, 1.0 / 3.0, 123456789.123, 1e-300, 5e300}) {
    std::string text;
    append_json_number(&text, v);
    JsonCursor cursor(text, "t");
    ASSERT_EQ(cursor.next(), Token::kNumber) << text;
    EXPECT_EQ(cursor.number(), v) << text;
  }
}

}  // namespace
}  // namespace clustertwin::traces
