// TraceReader's reading of one event of 'traceEvents': its fields checked
// against traces/FORMAT.md (phase, category, ids, times) and its args.
#include <optional>
#include <string>

#include "common/text.h"
#include "traces/trace_reader.h"

namespace clustertwin::traces {
namespace {

using Token = JsonCursor::Token;

// Bit per required field of a complete event.
enum FieldBit : unsigned {
  kPh = 1u << 0,
  kName = 1u << 1,
  kCat = 1u << 2,
  kPid = 1u << 3,
  kTid = 1u << 4,
  kTs = 1u << 5,
  kDur = 1u << 6,
};
constexpr unsigned kRequiredComplete = kPh | kName | kCat | kPid | kTid | kTs | kDur;
constexpr struct {
  unsigned bit;
  const char* name;
} kFieldNames[] = {{kPh, "ph"},   {kName, "name"}, {kCat, "cat"}, {kPid, "pid"},
                   {kTid, "tid"}, {kTs, "ts"},     {kDur, "dur"}};

// The required field `key` names, 0 for any other key.
unsigned field_bit(std::string_view key) {
  for (const auto& f : kFieldNames) {
    if (key == f.name) return f.bit;
  }
  return 0;
}

const char* field_name(unsigned bit) {
  const char* field = "";
  for (const auto& f : kFieldNames) {
    if (f.bit == bit) field = f.name;
  }
  return field;
}

// Required field `bit`'s value (token `v` at `cursor`) into `event`; what is wrong with it, or nothing.
std::optional<std::string> read_required_field(unsigned bit, Token v, const JsonCursor& cursor, Event* event,
                                               bool* is_metadata_event) {
  switch (bit) {
    case kPh:
      if (v != Token::kString) return "expected a string, got " + cursor.describe_value(v);
      if (cursor.text() == "M") {
        *is_metadata_event = true;
      } else if (cursor.text() != "X") {
        return "unsupported phase " + quote_for_message(cursor.text()) +
               " (allowed: X for complete events, M for names)";
      }
      break;
    case kName:
      if (v != Token::kString) return "expected a string, got " + cursor.describe_value(v);
      event->name.assign(cursor.text());
      break;
    case kCat: {
      if (v != Token::kString) return "expected a string, got " + cursor.describe_value(v);
      auto category = category_from_name(cursor.text());
      if (!category) {
        return "unknown category " + quote_for_message(cursor.text()) + " (allowed: " + category_list() + ")";
      }
      event->category = *category;
      break;
    }
    case kPid:
    case kTid: {
      if (v != Token::kNumber || !cursor.is_integer()) return "expected an integer, got " + cursor.describe_value(v);
      if (cursor.integer() < 0) return std::string(cursor.number_text()) + " is negative";
      (bit == kPid ? event->rank : event->stream) = cursor.integer();
      break;
    }
    case kTs:
    case kDur: {
      if (v != Token::kNumber) return "expected a number, got " + cursor.describe_value(v);
      const double x = cursor.number();
      if (x < 0) return std::string(cursor.number_text()) + " is negative (must be >= 0)";
      (bit == kTs ? event->ts_us : event->dur_us) = x;
      break;
    }
    default:
      break;
  }
  return std::nullopt;
}

// The first required field an event lacks, given the fields `seen`: a metadata event needs ph and name only.
const char* missing_field(unsigned seen, bool is_metadata_event) {
  if (!(seen & kPh)) return "ph";
  if (is_metadata_event) return (seen & kName) ? nullptr : "name";
  for (const auto& f : kFieldNames) {
    if (!(seen & f.bit)) return f.name;
  }
  static_assert(kRequiredComplete == 0x7F);
  return nullptr;
}

// The args a trace event may carry (traces/FORMAT.md): integers with their least value, numbers >= 0, strings.
constexpr struct {
  const char* name;
  int64_t min;
  std::optional<int64_t> Event::*field;
} kIntegerArgs[] = {{"task_id", 0, &Event::task_id},           {"step", 0, &Event::step},
                    {"micro_batch", 0, &Event::micro_batch},   {"bytes", 0, &Event::bytes},
                    {"group_size", 1, &Event::group_size},     {"group_start", 0, &Event::group_start},
                    {"group_stride", 1, &Event::group_stride}, {"peer", 0, &Event::peer},
                    {"grad_bytes", 0, &Event::grad_bytes}};
constexpr struct {
  const char* name;
  std::optional<double> Event::*field;
} kNumberArgs[] = {{"flops", &Event::flops},
                   {"cpu_us", &Event::cpu_us},
                   {"host_ts_us", &Event::host_ts_us},
                   {"host_dur_us", &Event::host_dur_us}};
constexpr struct {
  const char* name;
  std::string Event::*field;
} kStringArgs[] = {{"cost_key", &Event::cost_key}, {"collective", &Event::collective}};

// What is wrong with an arg's value, or a syntax error the cursor reports itself.
struct ArgProblem {
  std::string what;
  bool syntax = false;
};

// Arg `key` (its value's first token `v`) into `event`; other keys are skipped.
std::optional<ArgProblem> read_arg(const std::string& key, Token v, JsonCursor& cursor, Event* event) {
  for (const auto& a : kIntegerArgs) {
    if (key != a.name) continue;
    if (v != Token::kNumber || !cursor.is_integer()) {
      return ArgProblem{"expected an integer, got " + cursor.describe_value(v)};
    }
    if (cursor.integer() < a.min) {
      return ArgProblem{std::string(cursor.number_text()) + " is out of range (must be >= " + std::to_string(a.min) +
                        ")"};
    }
    event->*a.field = cursor.integer();
    return std::nullopt;
  }
  for (const auto& a : kNumberArgs) {
    if (key != a.name) continue;
    if (v != Token::kNumber) return ArgProblem{"expected a number, got " + cursor.describe_value(v)};
    if (cursor.number() < 0) return ArgProblem{std::string(cursor.number_text()) + " is negative (must be >= 0)"};
    event->*a.field = cursor.number();
    return std::nullopt;
  }
  for (const auto& a : kStringArgs) {
    if (key != a.name) continue;
    if (v != Token::kString) return ArgProblem{"expected a string, got " + cursor.describe_value(v)};
    (event->*a.field).assign(cursor.text());
    return std::nullopt;
  }
  if (!cursor.skip_rest_of_value(v)) return ArgProblem{"", true};
  return std::nullopt;
}

}  // namespace

bool TraceReader::read_event(Event* event, bool* is_complete) {
  const std::string prefix = name_ + ": event " + std::to_string(index_) + ": ";
  auto bad = [&](const char* field, const std::string& problem) {
    return fail(Status::invalid_argument(prefix + "field '" + field + "': " + problem));
  };
  unsigned seen = 0;
  bool is_metadata_event = false;
  *event = Event();
  for (;;) {
    const Token t = cursor_->next();
    if (t == Token::kError) return fail_syntax();
    if (t == Token::kEndObject) break;
    // Keys are compared before the value is read: the view dies with the next token.
    const std::string_view key = cursor_->text();
    const unsigned bit = field_bit(key);
    const bool is_args = key == "args";
    const Token v = cursor_->next();
    if (v == Token::kError) return fail_syntax();
    if (bit == 0) {
      if (is_args) {
        if (v != Token::kBeginObject) return bad("args", "expected an object, got " + cursor_->describe_value(v));
        if (!read_args(event)) return false;
      } else if (!cursor_->skip_rest_of_value(v)) {
        return fail_syntax();
      }
      continue;
    }
    const char* field = field_name(bit);
    if (seen & bit) return bad(field, "appears twice");
    seen |= bit;
    if (auto problem = read_required_field(bit, v, *cursor_, event, &is_metadata_event)) return bad(field, *problem);
  }
  if (const char* missing = missing_field(seen, is_metadata_event)) {
    return fail(Status::invalid_argument(prefix + "missing field '" + missing + "'"));
  }
  *is_complete = !is_metadata_event;
  return true;
}

bool TraceReader::read_args(Event* event) {
  const std::string prefix = name_ + ": event " + std::to_string(index_) + ": field 'args.";
  for (;;) {
    const Token t = cursor_->next();
    if (t == Token::kError) return fail_syntax();
    if (t == Token::kEndObject) return true;
    const std::string key(cursor_->text());
    const Token v = cursor_->next();
    if (v == Token::kError) return fail_syntax();
    if (auto problem = read_arg(key, v, *cursor_, event)) {
      if (problem->syntax) return fail_syntax();
      return fail(Status::invalid_argument(prefix + key + "': " + problem->what));
    }
  }
}

}  // namespace clustertwin::traces
