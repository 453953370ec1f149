// Typed access to attributes, with errors that name the attribute and value (chakra_trace.h).

#include <cstdio>
#include <limits>

#include "traces/chakra/chakra_trace.h"

namespace clustertwin::traces::chakra {
namespace {

std::string list_text(const auto& values, auto&& item) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    if (i == 8) return out + "...]";
    out += item(values[i]);
  }
  return out + "]";
}

}  // namespace

StatusOr<int64_t> attr_int(const Attribute& a, const std::string& where) {
  if (const auto* v = std::get_if<int64_t>(&a.value)) return *v;
  if (const auto* v = std::get_if<uint64_t>(&a.value)) {
    if (*v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Status::invalid_argument(where + ": attribute '" + a.name + "': " + std::to_string(*v) +
                                      " is too large (at most " + std::to_string(std::numeric_limits<int64_t>::max()) +
                                      ")");
    }
    return static_cast<int64_t>(*v);
  }
  if (const auto* v = std::get_if<bool>(&a.value)) return int64_t{*v ? 1 : 0};
  return Status::invalid_argument(where + ": attribute '" + a.name + "': expected an integer, got " +
                                  attr_value_text(a.value));
}

StatusOr<bool> attr_bool(const Attribute& a, const std::string& where) {
  if (const auto* v = std::get_if<bool>(&a.value)) return *v;
  if (const auto* v = std::get_if<int64_t>(&a.value); v && (*v == 0 || *v == 1)) return *v == 1;
  if (const auto* v = std::get_if<uint64_t>(&a.value); v && (*v == 0 || *v == 1)) return *v == 1;
  return Status::invalid_argument(where + ": attribute '" + a.name + "': expected a bool, got " +
                                  attr_value_text(a.value));
}

StatusOr<std::string> attr_string(const Attribute& a, const std::string& where) {
  if (const auto* v = std::get_if<std::string>(&a.value)) return *v;
  // The PyTorch converter writes a process group's name as text; others as a number.
  if (const auto* v = std::get_if<int64_t>(&a.value)) return std::to_string(*v);
  if (const auto* v = std::get_if<uint64_t>(&a.value)) return std::to_string(*v);
  return Status::invalid_argument(where + ": attribute '" + a.name + "': expected a string, got " +
                                  attr_value_text(a.value));
}

StatusOr<std::vector<int64_t>> attr_int_list(const Attribute& a, const std::string& where) {
  if (const auto* v = std::get_if<std::vector<int64_t>>(&a.value)) return *v;
  if (const auto* v = std::get_if<std::vector<uint64_t>>(&a.value)) {
    std::vector<int64_t> out;
    for (uint64_t x : *v) {
      if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Status::invalid_argument(where + ": attribute '" + a.name + "': " + std::to_string(x) + " is too large");
      }
      out.push_back(static_cast<int64_t>(x));
    }
    return out;
  }
  auto single = attr_int(a, where);
  if (single.is_ok()) return std::vector<int64_t>{*single};
  return Status::invalid_argument(where + ": attribute '" + a.name + "': expected a list of integers, got " +
                                  attr_value_text(a.value));
}

StatusOr<std::vector<std::string>> attr_string_list(const Attribute& a, const std::string& where) {
  if (const auto* v = std::get_if<std::vector<std::string>>(&a.value)) return *v;
  return Status::invalid_argument(where + ": attribute '" + a.name + "': expected a list of strings, got " +
                                  attr_value_text(a.value));
}

std::string attr_value_text(const Attribute::Value& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          char buf[32];
          std::snprintf(buf, sizeof buf, "%g", v);
          return buf;
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return "'" + (v.size() > 60 ? v.substr(0, 60) + "..." : v) + "'";
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          return list_text(v, [](const std::string& s) { return "'" + s + "'"; });
        } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
          return list_text(v, [](bool b) { return std::string(b ? "true" : "false"); });
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          return list_text(v, [](double d) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%g", d);
            return std::string(buf);
          });
        } else {
          return list_text(v, [](auto x) { return std::to_string(x); });
        }
      },
      value);
}

}  // namespace clustertwin::traces::chakra
