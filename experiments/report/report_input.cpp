#include "experiments/report/report_input.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

namespace clustertwin::report {

Field::Field(const nlohmann::json* value, const std::string* file, std::string path)
    : value_(value), file_(file), path_(std::move(path)) {}

void Field::fail(const std::string& what) const {
  throw InputError(*file_ + ": " + what);
}

std::string Field::name() const {
  return path_.empty() ? "the top level" : "field " + path_;
}

void Field::expect(bool ok, const char* expected) const {
  if (ok) return;
  // nlohmann's type names: null, object, array, string, boolean, number, binary.
  const std::string type = value_->type_name();
  const bool vowel = type[0] == 'a' || type[0] == 'o';
  fail(name() + " is " + (value_->is_null() ? type : (vowel ? "an " : "a ") + type) + ", expected " + expected);
}

Field Field::operator[](const std::string& key) const {
  expect(value_->is_object(), "an object");
  const std::string path = path_.empty() ? key : path_ + "." + key;
  const auto it = value_->find(key);
  if (it == value_->end()) fail("field " + path + " missing");
  return Field(&*it, file_, path);
}

Field Field::operator[](size_t index) const {
  expect(value_->is_array(), "an array");
  const std::string path = path_ + "[" + std::to_string(index) + "]";
  if (index >= value_->size()) {
    fail("field " + path + " missing (" + path_ + " has " + std::to_string(value_->size()) +
         (value_->size() == 1 ? " element)" : " elements)"));
  }
  return Field(&(*value_)[index], file_, path);
}

bool Field::has(const std::string& key) const {
  return value_->is_object() && value_->contains(key);
}

bool Field::is_null() const {
  return value_->is_null();
}

double Field::number() const {
  expect(value_->is_number(), "a number");
  return value_->get<double>();
}

std::optional<double> Field::number_or_null() const {
  if (value_->is_null()) return std::nullopt;
  return number();
}

int64_t Field::integer() const {
  expect(value_->is_number(), "an integer");
  if (value_->is_number_integer()) return value_->get<int64_t>();
  const double v = value_->get<double>();
  if (v != std::floor(v)) fail(name() + " is " + value_->dump() + ", expected an integer");
  return static_cast<int64_t>(v);
}

std::string Field::string() const {
  expect(value_->is_string(), "a string");
  return value_->get<std::string>();
}

bool Field::boolean() const {
  expect(value_->is_boolean(), "a boolean");
  return value_->get<bool>();
}

std::vector<Field> Field::elements() const {
  expect(value_->is_array(), "an array");
  std::vector<Field> out;
  for (size_t i = 0; i < value_->size(); ++i)
    out.push_back((*this)[i]);
  return out;
}

std::optional<Field> Field::find_optional(std::initializer_list<std::pair<const char*, nlohmann::json>> match) const {
  expect(value_->is_array(), "an array");
  for (size_t i = 0; i < value_->size(); ++i) {
    const nlohmann::json& element = (*value_)[i];
    bool all = element.is_object();
    for (const auto& [key, wanted] : match) {
      if (!all) break;
      const auto it = element.find(key);
      all = it != element.end() && *it == wanted;
    }
    if (all) return (*this)[i];
  }
  return std::nullopt;
}

Field Field::find(std::initializer_list<std::pair<const char*, nlohmann::json>> match) const {
  if (std::optional<Field> f = find_optional(match)) return *f;
  std::string what;
  for (const auto& [key, wanted] : match)
    what += std::string(what.empty() ? "" : " and ") + key + " = " + wanted.dump();
  fail("no element of " + (path_.empty() ? std::string("the top-level array") : path_) + " has " + what);
}

JsonFile::JsonFile(const std::filesystem::path& path) : file_(path.string()) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    throw InputError(file_ + ": cannot open (" + (ec ? ec.message() : std::strerror(ENOENT)) + ")");
  }
  // An ifstream opens a folder without complaint and then reads nothing.
  if (!std::filesystem::is_regular_file(status)) throw InputError(file_ + ": not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(file_ + ": cannot open (" + std::strerror(errno) + ")");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(file_ + ": cannot read (" + std::strerror(errno) + ")");
  try {
    json_ = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    // what() reads "[json.exception.parse_error.101] parse error at line 1, ...": keep what follows the tag.
    std::string detail = e.what();
    if (const size_t tag = detail.find("] "); tag != std::string::npos) detail = detail.substr(tag + 2);
    throw InputError(file_ + ": not valid JSON (" + detail + ")");
  }
}

std::vector<std::string> distinct(const Field& rows, const std::string& key) {
  std::vector<std::string> out;
  for (const Field& r : rows.elements()) {
    const std::string v = r[key].string();
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

}  // namespace clustertwin::report
