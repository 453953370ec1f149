#include "traces/event.h"

namespace clustertwin::traces {

std::string_view category_name(Category category) {
  switch (category) {
    case Category::kCompute:
      return "compute";
    case Category::kComm:
      return "comm";
    case Category::kCopy:
      return "copy";
    case Category::kLookup:
      return "lookup";
    case Category::kHost:
      return "host";
    case Category::kIdle:
      return "idle";
  }
  return "?";
}

std::optional<Category> category_from_name(std::string_view name) {
  for (Category c : kAllCategories) {
    if (category_name(c) == name) return c;
  }
  return std::nullopt;
}

std::string category_list() {
  std::string list;
  for (Category c : kAllCategories) {
    if (!list.empty()) list += ", ";
    list += category_name(c);
  }
  return list;
}

std::string_view source_name(Source source) {
  switch (source) {
    case Source::kReal:
      return "real";
    case Source::kSim:
      return "sim";
    case Source::kImported:
      return "imported";
  }
  return "?";
}

std::optional<Source> source_from_name(std::string_view name) {
  for (Source s : {Source::kReal, Source::kSim, Source::kImported}) {
    if (source_name(s) == name) return s;
  }
  return std::nullopt;
}

}  // namespace clustertwin::traces
