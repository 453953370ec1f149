#include "models/cluster/field_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "common/text.h"

namespace clustertwin::cluster {

std::string ConfigNode::describe() const {
  switch (kind) {
    case Kind::kNull:
      return "nothing";
    case Kind::kScalar:
      return "the single value " + quote_for_message(text);
    case Kind::kList:
      return "a list";
    case Kind::kMap:
      return "a mapping";
  }
  return "nothing";
}

std::string_view bound_violation(double value, FieldReader::Bound bound) {
  switch (bound) {
    case FieldReader::kAny:
      return "";
    case FieldReader::kPositive:
      return value > 0 ? "" : "must be > 0";
    case FieldReader::kNonNegative:
      return value >= 0 ? "" : "must be >= 0";
    case FieldReader::kAtLeastOne:
      return value >= 1 ? "" : "must be >= 1";
    case FieldReader::kEfficiency:
      return value >= 1e-3 && value <= 1 ? "" : "must be in [0.001, 1] (a share of a rate)";
  }
  return "";
}

std::optional<double> plain_number(std::string_view text) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<long long> whole_number(std::string_view text) {
  long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

StatusOr<FieldReader> FieldReader::open(const std::string& source, const std::string& path, const ConfigNode& node) {
  if (node.kind != ConfigNode::Kind::kMap) {
    const std::string where = path.empty() ? source + ": " : source + ": field '" + path + "': ";
    return Status::invalid_argument(where + "expected a mapping of fields, got " + node.describe());
  }
  return FieldReader(source, path, &node);
}

std::vector<std::string> FieldReader::keys() const {
  std::vector<std::string> keys;
  for (const auto& [key, value] : node_->fields)
    keys.push_back(key);
  return keys;
}

std::string FieldReader::path_of(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

Status FieldReader::error(std::string_view key, const std::string& message) const {
  return Status::invalid_argument(source_ + ": field '" + path_of(key) + "': " + message);
}

const ConfigNode* FieldReader::child(std::string_view key) {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.emplace_back(key);
  for (const auto& [name, value] : node_->fields) {
    if (name == key) return &value;
  }
  return nullptr;
}

StatusOr<std::optional<FieldReader>> FieldReader::section(std::string_view key, Need need) {
  const ConfigNode* node = child(key);
  if (node == nullptr) {
    if (need == kRequired) return error(key, "required but missing");
    return std::optional<FieldReader>();
  }
  StatusOr<FieldReader> reader = open(source_, path_of(key), *node);
  if (!reader.is_ok()) return reader.status();
  return std::optional<FieldReader>(std::move(reader).value());
}

StatusOr<std::optional<std::string>> FieldReader::scalar(std::string_view key, Need need) {
  const ConfigNode* node = child(key);
  if (node == nullptr) {
    if (need == kRequired) return error(key, "required but missing");
    return std::optional<std::string>();
  }
  if (node->kind != ConfigNode::Kind::kScalar || node->text.empty()) {
    return error(key, "expected a single value, got " + node->describe());
  }
  return std::optional<std::string>(node->text);
}

Status FieldReader::text(std::string_view key, std::string* out, Need need) {
  StatusOr<std::optional<std::string>> value = scalar(key, need);
  if (value.is_ok() && value->has_value()) *out = **value;
  return value.status();
}

Status FieldReader::integer(std::string_view key, int minimum, int* out, Need need, std::string_view why) {
  StatusOr<std::optional<std::string>> value = scalar(key, need);
  if (!value.is_ok() || !value->has_value()) return value.status();
  const std::optional<long long> number = whole_number(**value);
  if (!number) return error(key, "'" + **value + "' is not a whole number");
  if (*number < minimum) return error(key, **value + " must be >= " + std::to_string(minimum) + std::string(why));
  if (*number > std::numeric_limits<int>::max()) return error(key, **value + " is too large");
  *out = static_cast<int>(*number);
  return Status::ok();
}

Status FieldReader::boolean(std::string_view key, bool* out, Need need) {
  StatusOr<std::optional<std::string>> value = scalar(key, need);
  if (!value.is_ok() || !value->has_value()) return value.status();
  if (**value != "true" && **value != "false") return error(key, "'" + **value + "' is not true or false");
  *out = **value == "true";
  return Status::ok();
}

Status FieldReader::number(std::string_view key, Bound bound, double* out, Need need) {
  StatusOr<std::optional<std::string>> value = scalar(key, need);
  if (!value.is_ok() || !value->has_value()) return value.status();
  const std::optional<double> number = plain_number(**value);
  if (!number) return error(key, "'" + **value + "' is not a number");
  if (std::string_view why = bound_violation(*number, bound); !why.empty()) {
    return error(key, **value + " " + std::string(why));
  }
  *out = *number;
  return Status::ok();
}

Status FieldReader::quantity(std::string_view key, Quantity quantity, Bound bound, double* out, Need need) {
  StatusOr<std::optional<std::string>> value = scalar(key, need);
  if (!value.is_ok() || !value->has_value()) return value.status();
  StatusOr<double> parsed = parse_quantity(**value, quantity);
  if (!parsed.is_ok()) return error(key, parsed.status().message());
  if (std::string_view why = bound_violation(*parsed, bound); !why.empty()) {
    return error(key, **value + " " + std::string(why));
  }
  *out = *parsed;
  return Status::ok();
}

Status FieldReader::finish() const {
  for (const auto& [key, value] : node_->fields) {
    if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
    std::string known;
    for (const std::string& name : known_)
      known += (known.empty() ? "" : ", ") + name;
    return error(key, "unknown field (allowed" + (path_.empty() ? "" : " in '" + path_ + "'") + ": " + known + ")");
  }
  return Status::ok();
}

}  // namespace clustertwin::cluster
