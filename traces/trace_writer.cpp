// Hand-written JSON, on purpose: a trace is written event by event, and can be
// gigabytes, so it is streamed through traces/json_text.h rather than built as
// an nlohmann document (common/json.h, which everything else uses).

#include "traces/trace_writer.h"

#include <optional>
#include <string>

#include "common/check.h"
#include "common/file_io.h"
#include "traces/json_cursor.h"
#include "traces/json_text.h"

namespace clustertwin::traces {
namespace {

// The compact form of `text` when it is exactly one JSON object; false otherwise.
bool canonical_json_object(const std::string& text, std::string* out) {
  JsonCursor cursor(text, "config");
  const JsonCursor::Token first = cursor.next();
  if (first != JsonCursor::Token::kBeginObject) return false;
  out->clear();
  if (!copy_json_value(cursor, first, out)) return false;
  return cursor.next() == JsonCursor::Token::kEnd;
}

void append_name_event(std::string* out, const char* what, int64_t pid, int64_t tid, const std::string& name) {
  out->append("{\"ph\":\"M\",\"name\":\"");
  out->append(what);
  out->append("\",\"pid\":");
  append_json_int(out, pid);
  out->append(",\"tid\":");
  append_json_int(out, tid);
  out->append(",\"args\":{\"name\":");
  append_json_string(out, name);
  out->append("}}");
}

// An event's "args" object, each field written only where the event has it; the object left out when it has
// none.
class ArgsWriter {
 public:
  explicit ArgsWriter(std::string* text) : text_(*text), args_at_(text->size()) { text_.append(",\"args\":{"); }

  void integer(const char* name, const std::optional<int64_t>& value) {
    if (!value) return;
    key(name);
    append_json_int(&text_, *value);
  }
  void number(const char* name, const std::optional<double>& value) {
    if (!value) return;
    key(name);
    append_json_number(&text_, *value);
  }
  void string(const char* name, const std::string& value) {
    if (value.empty()) return;
    key(name);
    append_json_string(&text_, value);
  }
  // Closes the args and the event.
  void finish() {
    if (any_) {
      text_.append("}}");
    } else {
      text_.resize(args_at_);
      text_.push_back('}');
    }
  }

 private:
  void key(const char* name) {
    text_.append(any_ ? ",\"" : "\"");
    text_.append(name);
    text_.append("\":");
    any_ = true;
  }

  std::string& text_;
  size_t args_at_;
  bool any_ = false;
};

}  // namespace

std::string metadata_to_json(const Metadata& m) {
  std::string out = "{\"format\":\"clustertwin-trace\",\"format_version\":";
  append_json_int(&out, m.format_version);
  out += ",\"source\":";
  append_json_string(&out, source_name(m.source));
  out += ",\"system\":";
  append_json_string(&out, m.system);
  out += ",\"variant\":";
  append_json_string(&out, m.variant);
  out += ",\"world_size\":";
  append_json_int(&out, m.world_size);
  out += ",\"hardware\":";
  append_json_string(&out, m.hardware);
  out += ",\"model\":";
  append_json_string(&out, m.model);
  out += ",\"config\":";
  out += m.config_json.empty() ? "{}" : m.config_json;
  if (m.seed) {
    out += ",\"seed\":";
    append_json_int(&out, static_cast<int64_t>(*m.seed));
  }
  out += ",\"clustertwin_version\":";
  append_json_string(&out, m.clustertwin_version);
  out += ",\"streams\":[";
  for (size_t i = 0; i < m.streams.size(); ++i) {
    if (i > 0) out += ",";
    append_json_string(&out, m.streams[i]);
  }
  out += "]}";
  return out;
}

StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::create(const std::string& path, const Metadata& metadata) {
  if (metadata.world_size < 1) {
    return Status::invalid_argument(path + ": metadata: field 'world_size': " + std::to_string(metadata.world_size) +
                                    " must be at least 1");
  }
  Metadata canonical = metadata;
  if (metadata.config_json.empty()) canonical.config_json = "{}";
  if (!metadata.config_json.empty() && !canonical_json_object(metadata.config_json, &canonical.config_json)) {
    return Status::invalid_argument(path + ": metadata: field 'config': not a JSON object: " + metadata.config_json);
  }
  if (metadata.seed && *metadata.seed > static_cast<uint64_t>(INT64_MAX)) {
    return Status::invalid_argument(path + ": metadata: field 'seed': " + std::to_string(*metadata.seed) +
                                    " does not fit in a signed 64-bit integer");
  }
  auto out = AtomicOutputFile::create(path);
  if (!out.is_ok()) return out.status();
  std::unique_ptr<TraceWriter> writer(new TraceWriter(std::move(out).value()));
  std::string head =
      "{\"metadata\":" + metadata_to_json(canonical) + ",\n\"displayTimeUnit\":\"ms\",\n\"traceEvents\":[";
  // Perfetto names: a process per rank, a thread per stream.
  bool first = true;
  for (int64_t rank = 0; rank < metadata.world_size; ++rank) {
    head += first ? "\n" : ",\n";
    first = false;
    append_name_event(&head, "process_name", rank, 0, "rank " + std::to_string(rank));
    for (size_t s = 0; s < metadata.streams.size(); ++s) {
      head += ",\n";
      append_name_event(&head, "thread_name", rank, static_cast<int64_t>(s), metadata.streams[s]);
    }
    if (head.size() > (1 << 16)) {
      writer->out_->write(head);
      head.clear();
    }
  }
  writer->out_->write(head);
  writer->first_ = first;
  return writer;
}

TraceWriter::~TraceWriter() = default;

void append_event_json(std::string* out, const Event& e) {
  std::string& text = *out;
  text.append("{\"ph\":\"X\",\"name\":");
  append_json_string(&text, e.name);
  text.append(",\"cat\":\"");
  text.append(category_name(e.category));
  text.append("\",\"pid\":");
  append_json_int(&text, e.rank);
  text.append(",\"tid\":");
  append_json_int(&text, e.stream);
  text.append(",\"ts\":");
  append_json_number(&text, e.ts_us);
  text.append(",\"dur\":");
  append_json_number(&text, e.dur_us);
  ArgsWriter args(&text);
  args.integer("task_id", e.task_id);
  args.string("cost_key", e.cost_key);
  args.integer("step", e.step);
  args.integer("micro_batch", e.micro_batch);
  args.integer("bytes", e.bytes);
  args.number("flops", e.flops);
  args.string("collective", e.collective);
  args.integer("group_size", e.group_size);
  args.integer("group_start", e.group_start);
  args.integer("group_stride", e.group_stride);
  args.integer("peer", e.peer);
  args.number("cpu_us", e.cpu_us);
  args.number("host_ts_us", e.host_ts_us);
  args.number("host_dur_us", e.host_dur_us);
  args.integer("grad_bytes", e.grad_bytes);
  args.finish();
}

void TraceWriter::write(const Event& e) {
  line_.clear();
  line_.append(first_ ? "\n" : ",\n");
  first_ = false;
  append_event_json(&line_, e);
  out_->write(line_);
  ++count_;
}

Status TraceWriter::close() {
  CT_CHECK(out_ != nullptr) << "TraceWriter closed twice";
  out_->write("\n]}\n");
  Status s = out_->commit();
  out_.reset();
  return s;
}

Status write_trace(const std::string& path, const Trace& trace) {
  auto writer = TraceWriter::create(path, trace.metadata);
  if (!writer.is_ok()) return writer.status();
  for (const Event& e : trace.events)
    (*writer)->write(e);
  return (*writer)->close();
}

}  // namespace clustertwin::traces
