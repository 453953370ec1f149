#include "common/json.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "common/json_number.h"

namespace clustertwin {
namespace {

std::string json_temp_path(const std::string& name) {
  return ::testing::TempDir() + "ct_json_" + name;
}

TEST(JsonNumberTest, ShortestDecimalThatReadsBack) {
  EXPECT_EQ(json_number(0.05), "0.05");
  EXPECT_EQ(json_number(1e-8), "1e-08");  // shorter than 0.00000001
  EXPECT_EQ(json_number(3), "3");         // a whole value without ".0"
  EXPECT_EQ(json_number(-2.5), "-2.5");
  EXPECT_EQ(json_number(25e9), "2.5e+10");  // shorter than 25000000000
  for (double v : {1.0 / 3.0, 123456789.123, 1e-300, 5e300, 0.1 + 0.2}) {
    EXPECT_EQ(std::strtod(json_number(v).c_str(), nullptr), v) << json_number(v);
  }
}

TEST(JsonNumberTest, AppendsWithoutTemporary) {
  std::string out = "x=";
  append_json_number(&out, 0.25);
  EXPECT_EQ(out, "x=0.25");
}

TEST(JsonDocumentTest, CompactOrIndentedWithATrailingNewline) {
  const nlohmann::ordered_json doc = {{"b", 1}, {"a", 1.0}, {"s", "q\""}};
  // Members in the order they were set; an integer as 1, a whole double as 1.0.
  EXPECT_EQ(json_document(doc), "{\"b\":1,\"a\":1.0,\"s\":\"q\\\"\"}\n");
  EXPECT_EQ(json_document(doc, 1), "{\n \"b\": 1,\n \"a\": 1.0,\n \"s\": \"q\\\"\"\n}\n");
  // nlohmann writes a double in fixed notation up to 15 integer digits where json_number picks the shorter form.
  EXPECT_EQ(json_document(25e9), "25000000000.0\n");
  EXPECT_EQ(json_number(25e9), "2.5e+10");
}

TEST(ParseJsonTest, KeepsMemberOrder) {
  auto doc = parse_json("{\"z\": 1, \"a\": [true, null]}", "t.json");
  ASSERT_TRUE(doc.is_ok()) << doc.status().message();
  EXPECT_EQ(doc->dump(), "{\"z\":1,\"a\":[true,null]}");
}

TEST(ParseJsonTest, ASyntaxErrorIsOneLineNamingTheFileLineAndColumn) {
  auto doc = parse_json("{\n  \"a\": tru,\n}", "t.json");
  ASSERT_FALSE(doc.is_ok());
  EXPECT_TRUE(doc.status().is_user_error());
  // nlohmann reports the character that broke the literal: the ',' after "tru", line 2, column 11 (2 spaces,
  // "\"a\":" 4, a space, "tru," 4).
  EXPECT_EQ(doc.status().message().rfind("t.json: not valid JSON at line 2, column 11: ", 0), 0u)
      << doc.status().message();
  EXPECT_NE(doc.status().message().find("syntax error"), std::string::npos) << doc.status().message();
  EXPECT_EQ(doc.status().message().find('\n'), std::string::npos) << doc.status().message();
  EXPECT_EQ(doc.status().message().find("[json.exception"), std::string::npos) << doc.status().message();
}

TEST(ReadJsonFileTest, ReadsAFileAndNamesItOnErrors) {
  const std::string good = json_temp_path("good.json");
  std::ofstream(good) << "{\"rows\": [1, 2]}";
  auto doc = read_json_file(good);
  ASSERT_TRUE(doc.is_ok()) << doc.status().message();
  EXPECT_EQ((*doc)["rows"][1], 2);

  const std::string bad = json_temp_path("bad.json");
  std::ofstream(bad) << "{\"rows\": [1, 2]";
  auto cut = read_json_file(bad);
  ASSERT_FALSE(cut.is_ok());
  EXPECT_EQ(cut.status().message().rfind(bad + ": not valid JSON at line 1, column ", 0), 0u) << cut.status().message();

  const std::string missing = json_temp_path("missing.json");
  auto none = read_json_file(missing);
  ASSERT_FALSE(none.is_ok());
  EXPECT_EQ(none.status().message(), missing + ": no such file");
}

}  // namespace
}  // namespace clustertwin
