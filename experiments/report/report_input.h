#pragma once

// Reading the studies' JSON outputs for the demo's report. Every failure is
// an InputError whose message names the file and, past parsing, the field
// (as a path from the top: "rows[3].speedup"), so that ct_report prints it
// as its one line on stderr and exits 2.
//
//   JsonFile scaling(out / "nestpipe" / "scaling.json");   // throws if missing or malformed
//   double s = scaling.root()["rows"].find({{"variant", "nestpipe"}, {"workers", 1536}})["speedup"].number();

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace clustertwin::report {

/// A missing, unreadable or malformed input file, or a field that is absent
/// or of the wrong type. what() is the whole message: "FILE: ...".
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A value inside a JsonFile, with the file's name and its own path kept for
/// messages. It borrows from the JsonFile, which must outlive it.
class Field {
 public:
  Field(const nlohmann::json* value, const std::string* file, std::string path);

  /// The member `key` of this object. Throws "FILE: field PATH missing", or
  /// "FILE: field PATH is a T, expected an object" when this is not one.
  Field operator[](const std::string& key) const;
  /// The element `index` of this array; throws past its end or on a non-array.
  Field operator[](size_t index) const;
  /// Whether this is an object holding `key` (no throw).
  bool has(const std::string& key) const;
  /// Whether this is JSON null: the studies write NaN and "not defined" as null.
  bool is_null() const;

  /// A number; throws on any other type, null included.
  double number() const;
  /// A number, or nullopt for null (the studies' NaN).
  std::optional<double> number_or_null() const;
  /// An integer (a number with no fractional part).
  int64_t integer() const;
  std::string string() const;
  bool boolean() const;

  /// The elements of this array; throws on a non-array.
  std::vector<Field> elements() const;
  /// The first element of this array whose members equal every pair of
  /// `match`. Throws "FILE: no element of PATH has K = V and K2 = V2".
  Field find(std::initializer_list<std::pair<const char*, nlohmann::json>> match) const;
  /// As find(), nullopt instead of throwing when no element matches (the
  /// array itself must still exist).
  std::optional<Field> find_optional(std::initializer_list<std::pair<const char*, nlohmann::json>> match) const;

  const std::string& path() const { return path_; }
  const std::string& file() const { return *file_; }

 private:
  [[noreturn]] void fail(const std::string& what) const;
  /// "field PATH" (or "the top level" at the root) for messages.
  std::string name() const;
  void expect(bool ok, const char* expected) const;

  const nlohmann::json* value_;
  const std::string* file_;
  std::string path_;
};

/// One study output read and parsed. Neither copied nor moved: its Fields
/// point into it.
class JsonFile {
 public:
  /// Throws "PATH: cannot open (REASON)", "PATH: not a regular file" or
  /// "PATH: not valid JSON (DETAIL)".
  explicit JsonFile(const std::filesystem::path& path);
  JsonFile(const JsonFile&) = delete;
  JsonFile& operator=(const JsonFile&) = delete;

  Field root() const { return Field(&json_, &file_, ""); }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  nlohmann::json json_;
};

/// The distinct string values of `key` over the elements of `rows`, in order
/// of first appearance.
std::vector<std::string> distinct(const Field& rows, const std::string& key);

}  // namespace clustertwin::report
