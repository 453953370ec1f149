// TraceReader: the document around the events (the top-level object, its
// 'metadata', where 'traceEvents' begins and ends) and read_trace. One event
// is read in trace_reader_event.cpp.
#include "traces/trace_reader.h"

#include <optional>
#include <set>

#include "common/file_io.h"
#include "common/text.h"
#include "traces/json_text.h"

namespace clustertwin::traces {
namespace {

using Token = JsonCursor::Token;

// What is wrong with a metadata field: the field as the message names it and the problem, or a syntax error
// the cursor reports itself.
struct MetadataProblem {
  std::string field;
  std::string problem;
  bool syntax = false;
};
using MaybeProblem = std::optional<MetadataProblem>;

MaybeProblem metadata_string(const std::string& key, Token v, const JsonCursor& c, std::string* out) {
  if (v != Token::kString) return MetadataProblem{key, "expected a string, got " + c.describe_value(v)};
  *out = std::string(c.text());
  return std::nullopt;
}

MaybeProblem metadata_format_version(const std::string& key, Token v, const JsonCursor& c, Metadata* m) {
  if (v != Token::kNumber || !c.is_integer()) {
    return MetadataProblem{key, "expected an integer, got " + c.describe_value(v)};
  }
  if (c.integer() != kFormatVersion) {
    return MetadataProblem{key, "version " + std::string(c.number_text()) + " is not supported (this build reads " +
                                    std::to_string(kFormatVersion) + ")"};
  }
  m->format_version = kFormatVersion;
  return std::nullopt;
}

MaybeProblem metadata_source(const std::string& key, Token v, const JsonCursor& c, Metadata* m) {
  std::string s;
  if (auto p = metadata_string(key, v, c, &s)) return p;
  auto source = source_from_name(s);
  if (!source)
    return MetadataProblem{key, "unknown source " + quote_for_message(s) + " (allowed: real, sim, imported)"};
  m->source = *source;
  return std::nullopt;
}

MaybeProblem metadata_world_size(const std::string& key, Token v, const JsonCursor& c, Metadata* m) {
  if (v != Token::kNumber || !c.is_integer()) {
    return MetadataProblem{key, "expected an integer, got " + c.describe_value(v)};
  }
  if (c.integer() < 1 || c.integer() > (1 << 24)) {
    return MetadataProblem{key, std::string(c.number_text()) + " is out of range (1 to 16777216)"};
  }
  m->world_size = static_cast<int>(c.integer());
  return std::nullopt;
}

MaybeProblem metadata_seed(const std::string& key, Token v, const JsonCursor& c, Metadata* m) {
  if (v != Token::kNumber || !c.is_integer() || c.integer() < 0) {
    return MetadataProblem{key, "expected a non-negative integer, got " + c.describe_value(v)};
  }
  m->seed = static_cast<uint64_t>(c.integer());
  return std::nullopt;
}

MaybeProblem metadata_streams(const std::string& key, Token v, JsonCursor& c, Metadata* m) {
  if (v != Token::kBeginArray) return MetadataProblem{key, "expected an array of strings, got " + c.describe_value(v)};
  for (;;) {
    const Token s = c.next();
    if (s == Token::kEndArray) break;
    if (s == Token::kError) return MetadataProblem{"", "", true};
    if (s != Token::kString) {
      return MetadataProblem{key + "[" + std::to_string(m->streams.size()) + "]",
                             "expected a string, got " + c.describe_value(s)};
    }
    m->streams.emplace_back(c.text());
  }
  return std::nullopt;
}

// Metadata field `key` (its value's first token `v`) into `m`.
MaybeProblem read_metadata_field(const std::string& key, Token v, JsonCursor& c, Metadata* m) {
  if (key == "format_version") return metadata_format_version(key, v, c, m);
  if (key == "source") return metadata_source(key, v, c, m);
  if (key == "system") return metadata_string(key, v, c, &m->system);
  if (key == "variant") return metadata_string(key, v, c, &m->variant);
  if (key == "hardware") return metadata_string(key, v, c, &m->hardware);
  if (key == "model") return metadata_string(key, v, c, &m->model);
  if (key == "clustertwin_version") return metadata_string(key, v, c, &m->clustertwin_version);
  if (key == "world_size") return metadata_world_size(key, v, c, m);
  if (key == "seed") return metadata_seed(key, v, c, m);
  if (key == "config") {
    if (v != Token::kBeginObject) return MetadataProblem{key, "expected an object, got " + c.describe_value(v)};
    m->config_json.clear();
    if (!copy_json_value(c, v, &m->config_json)) return MetadataProblem{"", "", true};
    return std::nullopt;
  }
  if (key == "streams") return metadata_streams(key, v, c, m);
  if (!c.skip_rest_of_value(v)) return MetadataProblem{"", "", true};  // "format" and fields of later versions
  return std::nullopt;
}

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
  std::set<std::string> seen;
  for (;;) {
    Token t = cursor_->next();
    if (t == Token::kError) return fail_syntax();
    if (t == Token::kEndObject) break;
    const std::string key(cursor_->text());
    const Token v = cursor_->next();
    if (v == Token::kError) return fail_syntax();
    if (auto p = read_metadata_field(key, v, *cursor_, &m)) {
      if (p->syntax) return fail_syntax();
      return fail(Status::invalid_argument(name_ + ": metadata: field '" + p->field + "': " + p->problem));
    }
    seen.insert(key);
  }
  for (const char* required : {"format_version", "source", "system", "world_size", "clustertwin_version"}) {
    if (seen.count(required) == 0) {
      return fail(Status::invalid_argument(name_ + ": metadata: missing field '" + required + "'"));
    }
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
