#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "models/cluster/units.h"

namespace clustertwin::cluster {

/// A configuration document as a plain tree, independent of the library that
/// parsed it: nothing, a scalar (its text), a list, or a mapping whose keys
/// keep their file order.
struct ConfigField;
struct ConfigNode {
  enum class Kind { kNull, kScalar, kList, kMap };
  Kind kind = Kind::kNull;
  std::string text;                 // kScalar
  std::vector<ConfigNode> items;    // kList
  std::vector<ConfigField> fields;  // kMap, keys unique

  /// "nothing", "the single value '5us'", "a list", "a mapping": for messages.
  std::string describe() const;
};

/// One field of a mapping: its key and value (named as std::pair's, which
/// clang's library cannot hold a node in while the node is incomplete).
struct ConfigField {
  std::string first;
  ConfigNode second;
};

/// Reads the fields of one mapping of a configuration file, each with its
/// type and range checked; errors name the file, the field path and the bad
/// value as written: "h100.yaml: field 'nics.bandwidth': -5GB/s must be > 0".
///
/// Every key asked for becomes known, whether present or not; `finish` then
/// names any other key as unknown, with the known ones, so that a typo never
/// passes silently. Getters leave `*out` unchanged when an optional key is
/// absent, so defaults are whatever `*out` held.
class FieldReader {
 public:
  enum Need { kRequired, kOptional };
  enum Bound { kAny, kPositive, kNonNegative, kAtLeastOne, kEfficiency };

  /// A reader of `node`, which must be a mapping and must outlive the reader.
  /// `path` is the field path of the mapping ("" at the top, "nics", "device_types[1]").
  static StatusOr<FieldReader> open(const std::string& source, const std::string& path, const ConfigNode& node);

  const std::string& source() const { return source_; }
  /// The keys present, in file order.
  std::vector<std::string> keys() const;
  /// "nics.bandwidth" for key "bandwidth" of "nics".
  std::string path_of(std::string_view key) const;
  /// "SOURCE: field 'PATH.KEY': MESSAGE" as an invalid-argument Status.
  Status error(std::string_view key, const std::string& message) const;

  /// The value of `key`, or nullptr when absent; `key` becomes known.
  const ConfigNode* child(std::string_view key);
  /// A reader of the mapping under `key`; an empty optional when absent and optional.
  StatusOr<std::optional<FieldReader>> section(std::string_view key, Need need);

  Status text(std::string_view key, std::string* out, Need need);
  /// A whole number >= `minimum`; `why` ends the range message (" when levels > 1").
  Status integer(std::string_view key, int minimum, int* out, Need need, std::string_view why = "");
  /// true or false.
  Status boolean(std::string_view key, bool* out, Need need);
  /// A plain number, no unit (efficiencies, slowdowns).
  Status number(std::string_view key, Bound bound, double* out, Need need);
  /// A number with an optional unit, in SI base units (units.h).
  Status quantity(std::string_view key, Quantity quantity, Bound bound, double* out, Need need);

  /// An error naming the first key never asked for, else ok.
  Status finish() const;

 private:
  FieldReader(std::string source, std::string path, const ConfigNode* node)
      : source_(std::move(source)), path_(std::move(path)), node_(node) {}
  /// The text of scalar `key`; an empty optional when absent and optional.
  StatusOr<std::optional<std::string>> scalar(std::string_view key, Need need);

  std::string source_;
  std::string path_;
  const ConfigNode* node_;
  std::vector<std::string> known_;  // asked for, in order
};

/// `yaml_text` as a ConfigNode tree; InvalidArgument naming `source` and the
/// line and column of a YAML syntax error, or a key given twice.
StatusOr<ConfigNode> parse_config_yaml(const std::string& yaml_text, const std::string& source);

/// Why `value` lies outside `bound` ("must be > 0"), or "" when it does not.
std::string_view bound_violation(double value, FieldReader::Bound bound);

/// `text` as a finite number with nothing after it, or nullopt.
std::optional<double> plain_number(std::string_view text);

/// `text` as a whole number with nothing after it, or nullopt.
std::optional<long long> whole_number(std::string_view text);

}  // namespace clustertwin::cluster
