// TraceReader's reading of one event of 'traceEvents': its fields checked
// against traces/FORMAT.md (phase, category, ids, times) and its args.
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
    unsigned bit = 0;
    int which = -1;
    if (key == "ph")
      bit = kPh;
    else if (key == "name")
      bit = kName;
    else if (key == "cat")
      bit = kCat;
    else if (key == "pid")
      bit = kPid;
    else if (key == "tid")
      bit = kTid;
    else if (key == "ts")
      bit = kTs;
    else if (key == "dur")
      bit = kDur;
    else if (key == "args")
      which = 0;
    const Token v = cursor_->next();
    if (v == Token::kError) return fail_syntax();
    if (bit == 0) {
      if (which == 0) {
        if (v != Token::kBeginObject) return bad("args", "expected an object, got " + cursor_->describe_value(v));
        if (!read_args(event)) return false;
      } else if (!cursor_->skip_rest_of_value(v)) {
        return fail_syntax();
      }
      continue;
    }
    const char* field = "";
    for (const auto& f : kFieldNames) {
      if (f.bit == bit) field = f.name;
    }
    if (seen & bit) return bad(field, "appears twice");
    seen |= bit;
    switch (bit) {
      case kPh:
        if (v != Token::kString) return bad(field, "expected a string, got " + cursor_->describe_value(v));
        if (cursor_->text() == "M") {
          is_metadata_event = true;
        } else if (cursor_->text() != "X") {
          return bad(field, "unsupported phase " + quote_for_message(cursor_->text()) +
                                " (allowed: X for complete events, M for names)");
        }
        break;
      case kName:
        if (v != Token::kString) return bad(field, "expected a string, got " + cursor_->describe_value(v));
        event->name.assign(cursor_->text());
        break;
      case kCat: {
        if (v != Token::kString) return bad(field, "expected a string, got " + cursor_->describe_value(v));
        auto category = category_from_name(cursor_->text());
        if (!category) {
          return bad(field,
                     "unknown category " + quote_for_message(cursor_->text()) + " (allowed: " + category_list() + ")");
        }
        event->category = *category;
        break;
      }
      case kPid:
      case kTid: {
        if (v != Token::kNumber || !cursor_->is_integer()) {
          return bad(field, "expected an integer, got " + cursor_->describe_value(v));
        }
        if (cursor_->integer() < 0) return bad(field, std::string(cursor_->number_text()) + " is negative");
        (bit == kPid ? event->rank : event->stream) = cursor_->integer();
        break;
      }
      case kTs:
      case kDur: {
        if (v != Token::kNumber) return bad(field, "expected a number, got " + cursor_->describe_value(v));
        const double x = cursor_->number();
        if (x < 0) return bad(field, std::string(cursor_->number_text()) + " is negative (must be >= 0)");
        (bit == kTs ? event->ts_us : event->dur_us) = x;
        break;
      }
      default:
        break;
    }
  }
  if (!(seen & kPh)) return fail(Status::invalid_argument(prefix + "missing field 'ph'"));
  if (is_metadata_event) {
    if (!(seen & kName)) return fail(Status::invalid_argument(prefix + "missing field 'name'"));
    *is_complete = false;
    return true;
  }
  for (const auto& f : kFieldNames) {
    if (!(seen & f.bit)) return fail(Status::invalid_argument(prefix + "missing field '" + f.name + "'"));
  }
  static_assert(kRequiredComplete == 0x7F);
  *is_complete = true;
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
    auto bad = [&](const std::string& problem) {
      return fail(Status::invalid_argument(prefix + key + "': " + problem));
    };
    auto want_int = [&](std::optional<int64_t>* out, int64_t min) {
      if (v != Token::kNumber || !cursor_->is_integer()) {
        return bad("expected an integer, got " + cursor_->describe_value(v));
      }
      if (cursor_->integer() < min) {
        return bad(std::string(cursor_->number_text()) + " is out of range (must be >= " + std::to_string(min) + ")");
      }
      *out = cursor_->integer();
      return true;
    };
    auto want_string = [&](std::string* out) {
      if (v != Token::kString) return bad("expected a string, got " + cursor_->describe_value(v));
      out->assign(cursor_->text());
      return true;
    };
    bool ok = true;
    if (key == "task_id")
      ok = want_int(&event->task_id, 0);
    else if (key == "cost_key")
      ok = want_string(&event->cost_key);
    else if (key == "step")
      ok = want_int(&event->step, 0);
    else if (key == "micro_batch")
      ok = want_int(&event->micro_batch, 0);
    else if (key == "bytes")
      ok = want_int(&event->bytes, 0);
    else if (key == "group_size")
      ok = want_int(&event->group_size, 1);
    else if (key == "group_start")
      ok = want_int(&event->group_start, 0);
    else if (key == "group_stride")
      ok = want_int(&event->group_stride, 1);
    else if (key == "peer")
      ok = want_int(&event->peer, 0);
    else if (key == "grad_bytes")
      ok = want_int(&event->grad_bytes, 0);
    else if (key == "collective")
      ok = want_string(&event->collective);
    else if (key == "flops") {
      if (v != Token::kNumber) return bad("expected a number, got " + cursor_->describe_value(v));
      if (cursor_->number() < 0) return bad(std::string(cursor_->number_text()) + " is negative (must be >= 0)");
      event->flops = cursor_->number();
    } else if (key == "cpu_us" || key == "host_ts_us" || key == "host_dur_us") {
      if (v != Token::kNumber) return bad("expected a number, got " + cursor_->describe_value(v));
      if (cursor_->number() < 0) return bad(std::string(cursor_->number_text()) + " is negative (must be >= 0)");
      (key == "cpu_us"       ? event->cpu_us
       : key == "host_ts_us" ? event->host_ts_us
                             : event->host_dur_us) = cursor_->number();
    } else if (!cursor_->skip_rest_of_value(v)) {
      return fail_syntax();
    }
    if (!ok) return false;
  }
}

}  // namespace clustertwin::traces
