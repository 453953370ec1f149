// TraceReader: the document around the events (the top-level object, its
// 'metadata', where 'traceEvents' begins and ends) and read_trace. One event
// is read in trace_reader_event.cpp.
#include "traces/trace_reader.h"


#include "common/file_io.h"
#include "common/text.h"
#include "traces/json_text.h"

namespace clustertwin::traces {
namespace {

using Token = JsonCursor::Token;

}  // namespace

TraceReader::TraceReader(std::unique_ptr<InputFile> file, std::string name)
    : file_(std::move(file)), name_(std::move(name)), cursor_(std::make_unique<JsonCursor>(file_.get(), name_)) {}

TraceReader::TraceReader(std::string_view text, std::string name)
    : name_(std::move(name)), cursor_(std::make_unique<JsonCursor>(text, name_)) {}

TraceReader::~TraceReader() = default;

StatusOr<std::unique_ptr<TraceReader>> TraceReader::open(const std::string& path) {
  auto file = InputFile::open(path);
  if (!file.is_ok()) return file.status();
  return std::unique_ptr<TraceReader>(new TraceReader(std::move(file).value(), path));
}

std::unique_ptr<TraceReader> TraceReader::from_text(std::string_view text, std::string name) {
  return std::unique_ptr<TraceReader>(new TraceReader(text, std::move(name)));
}

bool TraceReader::fail(Status status) {
  if (status_.is_ok()) status_ = std::move(status);
  state_ = State::kDone;
  return false;
}

bool TraceReader::fail_syntax() {
  Status s = cursor_->status();
  if (s.is_ok()) s = Status::internal(name_ + ": JSON cursor stopped without an error");
  if (state_ == State::kInEvents && s.message().find("truncated") != std::string::npos) {
    s = Status::invalid_argument(s.message() + " (in event " + std::to_string(index_) + " of 'traceEvents')");
  }
  return fail(s);
}

bool TraceReader::next(Event* event) {
  for (;;) {
    if (state_ == State::kDone) return false;
    if (state_ == State::kStart) {
      if (!seek_events()) return false;
      continue;
    }
    const Token t = cursor_->next();
    if (t == Token::kEndArray) {
      return finish_document();
    }
    if (t != Token::kBeginObject) {
      if (t == Token::kError) return fail_syntax();
      return fail(Status::invalid_argument(name_ + ": event " + std::to_string(index_) + ": expected an object, got " +
                                           cursor_->describe_value(t)));
    }
    bool is_complete = false;
    if (!read_event(event, &is_complete)) return false;
    ++index_;
    if (is_complete) return true;
  }
}

bool TraceReader::seek_events() {
  Token t = cursor_->next();
  if (t == Token::kError) return fail_syntax();
  if (t != Token::kBeginObject) {
    return fail(Status::invalid_argument(name_ + ": top level: expected an object with 'traceEvents', got " +
                                         cursor_->describe_value(t)));
  }
  for (t = cursor_->next();; t = cursor_->next()) {
    if (t == Token::kError) return fail_syntax();
    if (t == Token::kEndObject) {
      return fail(Status::invalid_argument(name_ + ": top level: missing field 'traceEvents'"));
    }
    if (t != Token::kKey) return fail(Status::internal(name_ + ": expected a member name at top level"));
    const std::string key(cursor_->text());
    const Token value = cursor_->next();
    if (value == Token::kError) return fail_syntax();
    if (key == "traceEvents") {
      if (seen_events_) return fail(Status::invalid_argument(name_ + ": top level: 'traceEvents' appears twice"));
      if (value != Token::kBeginArray) {
        return fail(Status::invalid_argument(name_ + ": top level: field 'traceEvents': expected an array, got " +
                                             cursor_->describe_value(value)));
      }
      seen_events_ = true;
      state_ = State::kInEvents;
      return true;
    }
    if (key == "metadata") {
      if (value != Token::kBeginObject) {
        return fail(Status::invalid_argument(name_ + ": top level: field 'metadata': expected an object, got " +
                                             cursor_->describe_value(value)));
      }
      if (!read_metadata()) return false;
      continue;
    }
    if (!cursor_->skip_rest_of_value(value)) return fail_syntax();
  }
}

bool TraceReader::finish_document() {
  for (;;) {
    const Token t = cursor_->next();
    if (t == Token::kError) return fail_syntax();
    if (t == Token::kEndObject) break;
    const std::string key(cursor_->text());
    const Token value = cursor_->next();
    if (value == Token::kError) return fail_syntax();
    if (key == "traceEvents") return fail(Status::invalid_argument(name_ + ": top level: 'traceEvents' appears twice"));
    if (key == "metadata") {
      if (value != Token::kBeginObject) {
        return fail(Status::invalid_argument(name_ + ": top level: field 'metadata': expected an object, got " +
                                             cursor_->describe_value(value)));
      }
      if (!read_metadata()) return false;
      continue;
    }
    if (!cursor_->skip_rest_of_value(value)) return fail_syntax();
  }
  const Token end = cursor_->next();
  if (end != Token::kEnd) return fail_syntax();
  state_ = State::kDone;
  return false;
}

bool TraceReader::read_metadata() {
  if (has_metadata_) return fail(Status::invalid_argument(name_ + ": top level: 'metadata' appears twice"));
  Metadata m;
  bool seen_version = false, seen_source = false, seen_world = false, seen_ctversion = false, seen_system = false;
  auto bad = [&](const std::string& field, const std::string& problem) {
    return fail(Status::invalid_argument(name_ + ": metadata: field '" + field + "': " + problem));
  };
  for (;;) {
    Token t = cursor_->next();
    if (t == Token::kError) return fail_syntax();
    if (t == Token::kEndObject) break;
    const std::string key(cursor_->text());
    const Token v = cursor_->next();
    if (v == Token::kError) return fail_syntax();
    auto want_string = [&](std::string* out) {
      if (v != Token::kString) return bad(key, "expected a string, got " + cursor_->describe_value(v));
      *out = std::string(cursor_->text());
      return true;
    };
    if (key == "format_version") {
      if (v != Token::kNumber || !cursor_->is_integer()) {
        return bad(key, "expected an integer, got " + cursor_->describe_value(v));
      }
      if (cursor_->integer() != kFormatVersion) {
        return bad(key, "version " + std::string(cursor_->number_text()) + " is not supported (this build reads " +
                            std::to_string(kFormatVersion) + ")");
      }
      m.format_version = kFormatVersion;
      seen_version = true;
    } else if (key == "source") {
      std::string s;
      if (!want_string(&s)) return false;
      auto source = source_from_name(s);
      if (!source) return bad(key, "unknown source " + quote_for_message(s) + " (allowed: real, sim, imported)");
      m.source = *source;
      seen_source = true;
    } else if (key == "system") {
      if (!want_string(&m.system)) return false;
      seen_system = true;
    } else if (key == "variant") {
      if (!want_string(&m.variant)) return false;
    } else if (key == "hardware") {
      if (!want_string(&m.hardware)) return false;
    } else if (key == "model") {
      if (!want_string(&m.model)) return false;
    } else if (key == "clustertwin_version") {
      if (!want_string(&m.clustertwin_version)) return false;
      seen_ctversion = true;
    } else if (key == "world_size") {
      if (v != Token::kNumber || !cursor_->is_integer()) {
        return bad(key, "expected an integer, got " + cursor_->describe_value(v));
      }
      if (cursor_->integer() < 1 || cursor_->integer() > (1 << 24)) {
        return bad(key, std::string(cursor_->number_text()) + " is out of range (1 to 16777216)");
      }
      m.world_size = static_cast<int>(cursor_->integer());
      seen_world = true;
    } else if (key == "seed") {
      if (v != Token::kNumber || !cursor_->is_integer() || cursor_->integer() < 0) {
        return bad(key, "expected a non-negative integer, got " + cursor_->describe_value(v));
      }
      m.seed = static_cast<uint64_t>(cursor_->integer());
    } else if (key == "config") {
      if (v != Token::kBeginObject) return bad(key, "expected an object, got " + cursor_->describe_value(v));
      m.config_json.clear();
      if (!copy_json_value(*cursor_, v, &m.config_json)) return fail_syntax();
    } else if (key == "streams") {
      if (v != Token::kBeginArray) return bad(key, "expected an array of strings, got " + cursor_->describe_value(v));
      for (;;) {
        const Token s = cursor_->next();
        if (s == Token::kEndArray) break;
        if (s == Token::kError) return fail_syntax();
        if (s != Token::kString) {
          return bad(key + "[" + std::to_string(m.streams.size()) + "]",
                     "expected a string, got " + cursor_->describe_value(s));
        }
        m.streams.emplace_back(cursor_->text());
      }
    } else {
      if (!cursor_->skip_rest_of_value(v)) return fail_syntax();  // "format" and fields of later versions
    }
  }
  const char* missing = !seen_version     ? "format_version"
                        : !seen_source    ? "source"
                        : !seen_system    ? "system"
                        : !seen_world     ? "world_size"
                        : !seen_ctversion ? "clustertwin_version"
                                          : nullptr;
  if (missing != nullptr) {
    return fail(Status::invalid_argument(name_ + ": metadata: missing field '" + missing + "'"));
  }
  metadata_ = std::move(m);
  has_metadata_ = true;
  return true;
}

StatusOr<Trace> read_trace(const std::string& path) {
  auto reader = TraceReader::open(path);
  if (!reader.is_ok()) return reader.status();
  Trace trace;
  Event event;
  while ((*reader)->next(&event))
    trace.events.push_back(event);
  if (!(*reader)->status().is_ok()) return (*reader)->status();
  if (!(*reader)->has_metadata()) return Status::invalid_argument(path + ": top level: missing field 'metadata'");
  trace.metadata = (*reader)->metadata();
  return trace;
}

}  // namespace clustertwin::traces
