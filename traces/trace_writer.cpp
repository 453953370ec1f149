#include "traces/trace_writer.h"

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
  const size_t args_at = text.size();
  text.append(",\"args\":{");
  bool any = false;
  auto field = [&](const char* name) {
    text.append(any ? ",\"" : "\"");
    text.append(name);
    text.append("\":");
    any = true;
  };
  if (e.task_id) {
    field("task_id");
    append_json_int(&text, *e.task_id);
  }
  if (!e.cost_key.empty()) {
    field("cost_key");
    append_json_string(&text, e.cost_key);
  }
  if (e.step) {
    field("step");
    append_json_int(&text, *e.step);
  }
  if (e.micro_batch) {
    field("micro_batch");
    append_json_int(&text, *e.micro_batch);
  }
  if (e.bytes) {
    field("bytes");
    append_json_int(&text, *e.bytes);
  }
  if (e.flops) {
    field("flops");
    append_json_number(&text, *e.flops);
  }
  if (!e.collective.empty()) {
    field("collective");
    append_json_string(&text, e.collective);
  }
  if (e.group_size) {
    field("group_size");
    append_json_int(&text, *e.group_size);
  }
  if (e.group_start) {
    field("group_start");
    append_json_int(&text, *e.group_start);
  }
  if (e.group_stride) {
    field("group_stride");
    append_json_int(&text, *e.group_stride);
  }
  if (e.peer) {
    field("peer");
    append_json_int(&text, *e.peer);
  }
  if (e.cpu_us) {
    field("cpu_us");
    append_json_number(&text, *e.cpu_us);
  }
  if (e.host_ts_us) {
    field("host_ts_us");
    append_json_number(&text, *e.host_ts_us);
  }
  if (e.host_dur_us) {
    field("host_dur_us");
    append_json_number(&text, *e.host_dur_us);
  }
  if (e.grad_bytes) {
    field("grad_bytes");
    append_json_int(&text, *e.grad_bytes);
  }
  if (any) {
    text.append("}}");
  } else {
    text.resize(args_at);
    text.push_back('}');
  }
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
