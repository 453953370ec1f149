#include "traces/kineto_reader.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

#include "common/file_io.h"
#include "common/text.h"
#include "traces/json_cursor.h"

namespace clustertwin::traces::kineto {
namespace {

using Token = JsonCursor::Token;

// Larger times (about 3,000 years) are a broken file, not a trace.
constexpr double kMaxMicros = 1e17;

// The last kNumber as Micros, keeping every digit of "1700000000123.456".
std::optional<Micros> micros_from(const JsonCursor& cursor) {
  if (cursor.is_integer()) {
    if (std::fabs(static_cast<double>(cursor.integer())) >= kMaxMicros) return std::nullopt;
    return Micros{cursor.integer(), 0};
  }
  const std::string_view text = cursor.number_text();
  const size_t dot = text.find('.');
  Micros m;
  if (text[0] != '-' && dot != std::string_view::npos && dot <= 16 &&
      text.find_first_of("eE") == std::string_view::npos) {
    std::from_chars(text.data(), text.data() + dot, m.whole);
    const std::string fraction = "0" + std::string(text.substr(dot));
    std::from_chars(fraction.data(), fraction.data() + fraction.size(), m.frac);
  } else {
    const double x = cursor.number();
    if (!(std::fabs(x) < kMaxMicros)) return std::nullopt;
    const double whole = std::floor(x);
    m = Micros{static_cast<int64_t>(whole), x - whole};
  }
  m.normalise();
  return m;
}

Status syntax_error(const JsonCursor& cursor, const std::string& path) {
  if (!cursor.status().is_ok()) return cursor.status();
  return Status::internal(path + ": JSON cursor stopped without an error");
}

// A pid or tid written as a string. Older Kineto versions write GPU streams
// as "stream 7"; Kineto's own spans use "Spans" and "PyTorch Profiler", which
// name no device or thread: those events are not imported.
std::optional<int64_t> id_from_string(std::string_view text) {
  if (text.substr(0, 7) == "stream ") text.remove_prefix(7);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// "Process Group Ranks" as c10d writes it, "[0, 2, 4]": the ranks, or empty
// for anything else (a truncated list "[0, 1, ...]", an empty one).
std::vector<int64_t> parse_rank_list(std::string_view text) {
  std::vector<int64_t> ranks;
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return {};
  text = text.substr(1, text.size() - 2);
  while (!text.empty()) {
    while (!text.empty() && text.front() == ' ')
      text.remove_prefix(1);
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || value < 0 || value >= (1 << 24)) return {};
    ranks.push_back(value);
    text.remove_prefix(static_cast<size_t>(end - text.data()));
    while (!text.empty() && text.front() == ' ')
      text.remove_prefix(1);
    if (text.empty()) break;
    if (text.front() != ',') return {};
    text.remove_prefix(1);
  }
  return ranks;
}

// Reads one Kineto file front to back; see read_kineto_file.
class KinetoFileReader {
 public:
  KinetoFileReader(InputFile* file, std::string path) : path_(std::move(path)), cursor_(file, path_) {}

  // Reads the whole file, calling `on_event` for every trace event in order.
  Status read(FileHeader* header, const EventFn& on_event);

 private:
  Status bad(const std::string& where, const std::string& problem) const {
    return Status::invalid_argument(path_ + ": " + where + ": " + problem);
  }
  std::string event_where() const { return "event " + std::to_string(index_); }
  Status read_events(const EventFn& on_event);
  Status read_event(KinetoEvent* e);
  Status read_args(KinetoEvent* e);
  bool read_c10d_arg(const std::string& key, Token v, KinetoEvent* e);  // false: not a c10d arg
  void read_operator_arg(const std::string& key, Token v, KinetoEvent* e);
  void note_field(const std::string& field, const std::string& problem);  // the event's first problem
  void read_event_id(const std::string& key, Token v, KinetoEvent* e);
  void arg_int(const std::string& key, Token v, int64_t min, int64_t max, std::optional<int64_t>* out);
  Status read_first_dims(KinetoEvent* e);
  Status read_first_type(KinetoEvent* e);
  Status check_complete(const KinetoEvent& e) const;
  Status read_header_member(const std::string& key, Token value, FileHeader* header);
  Status read_int(const std::string& field, Token value, int64_t min, std::optional<int64_t>* out);

  std::string path_;
  JsonCursor cursor_;
  int64_t index_ = 0;
  // The first bad value in the current event. Only the events we import must
  // be well formed: a bad counter or flow is dropped whatever it holds.
  Status problem_;
};

Status KinetoFileReader::read(FileHeader* header, const EventFn& on_event) {
  Token t = cursor_.next();
  if (t == Token::kError) return syntax_error(cursor_, path_);
  if (t != Token::kBeginObject) {
    return bad("top level", "expected an object with 'traceEvents', got " + cursor_.describe_value(t));
  }
  bool seen_events = false, seen_nodes = false, seen_schema = false;
  for (t = cursor_.next(); t != Token::kEndObject; t = cursor_.next()) {
    if (t == Token::kError) return syntax_error(cursor_, path_);
    const std::string key(cursor_.text());
    seen_nodes |= key == "nodes";
    seen_schema |= key == "schema";
    const Token value = cursor_.next();
    if (value == Token::kError) return syntax_error(cursor_, path_);
    if (key == "traceEvents") {
      if (value != Token::kBeginArray) {
        return bad("top level", "field 'traceEvents': expected an array, got " + cursor_.describe_value(value));
      }
      seen_events = true;
      CT_RETURN_IF_ERROR(read_events(on_event));
    } else {
      CT_RETURN_IF_ERROR(read_header_member(key, value, header));
    }
  }
  if (cursor_.next() != Token::kEnd) return syntax_error(cursor_, path_);
  if (!seen_events && seen_nodes && seen_schema) {
    // PyTorch's execution trace (ExecutionTraceObserver, the *_et.json Chakra's converter starts from): the
    // operators and their tensors, without device times.
    return bad("top level",
               "a PyTorch execution trace (top-level 'schema' and 'nodes', from ExecutionTraceObserver), not a "
               "Kineto trace: it has no kernel times; import the profiler (Kineto) trace of the same steps "
               "(torch.profiler's on_trace_ready or export_chrome_trace)");
  }
  if (!seen_events) return bad("top level", "missing field 'traceEvents'");
  return Status::ok();
}

Status KinetoFileReader::read_int(const std::string& field, Token value, int64_t min, std::optional<int64_t>* out) {
  if (value != Token::kNumber || !cursor_.is_integer()) {
    return bad("top level", "field '" + field + "': expected an integer, got " + cursor_.describe_value(value));
  }
  if (cursor_.integer() < min) {
    return bad("top level", "field '" + field + "': " + std::string(cursor_.number_text()) +
                                " is out of range (must be >= " + std::to_string(min) + ")");
  }
  *out = cursor_.integer();
  return Status::ok();
}

Status KinetoFileReader::read_header_member(const std::string& key, Token value, FileHeader* header) {
  if (key == "baseTimeNanoseconds") {
    std::optional<int64_t> base;
    CT_RETURN_IF_ERROR(read_int(key, value, 0, &base));
    header->base_ns = *base;
    return Status::ok();
  }
  if (key == "distributedInfo" && value == Token::kBeginObject) {
    for (Token t = cursor_.next(); t != Token::kEndObject; t = cursor_.next()) {
      if (t == Token::kError) return syntax_error(cursor_, path_);
      const std::string member(cursor_.text());
      const Token v = cursor_.next();
      if (v == Token::kError) return syntax_error(cursor_, path_);
      if (member == "rank") {
        CT_RETURN_IF_ERROR(read_int("distributedInfo.rank", v, 0, &header->rank));
      } else if (member == "world_size") {
        CT_RETURN_IF_ERROR(read_int("distributedInfo.world_size", v, 1, &header->world_size));
      } else if (!cursor_.skip_rest_of_value(v)) {
        return syntax_error(cursor_, path_);
      }
    }
    return Status::ok();
  }
  if (key == "deviceProperties" && value == Token::kBeginArray) {
    // The first device's "name" names the hardware; the rest is skipped.
    for (Token t = cursor_.next(); t != Token::kEndArray; t = cursor_.next()) {
      if (t != Token::kBeginObject || !header->device_name.empty()) {
        if (!cursor_.skip_rest_of_value(t)) return syntax_error(cursor_, path_);
        continue;
      }
      for (Token m = cursor_.next(); m != Token::kEndObject; m = cursor_.next()) {
        if (m == Token::kError) return syntax_error(cursor_, path_);
        const bool is_name = cursor_.text() == "name";
        const Token v = cursor_.next();
        if (is_name && v == Token::kString) header->device_name.assign(cursor_.text());
        if (!cursor_.skip_rest_of_value(v)) return syntax_error(cursor_, path_);
      }
    }
    return Status::ok();
  }
  if (!cursor_.skip_rest_of_value(value)) return syntax_error(cursor_, path_);
  return Status::ok();
}

Status KinetoFileReader::read_events(const EventFn& on_event) {
  KinetoEvent e;
  for (index_ = 0;; ++index_) {
    const Token t = cursor_.next();
    if (t == Token::kEndArray) return Status::ok();
    if (t == Token::kError) return syntax_error(cursor_, path_);
    if (t != Token::kBeginObject) return bad(event_where(), "expected an object, got " + cursor_.describe_value(t));
    Status s = read_event(&e);
    if (!s.is_ok() && s.message().find(": truncated: ") != std::string::npos) {
      s = Status::invalid_argument(s.message() + " (in event " + std::to_string(index_) + " of 'traceEvents')");
    }
    CT_RETURN_IF_ERROR(s);
    if (e.ph == "X") CT_RETURN_IF_ERROR(check_complete(e));
    CT_RETURN_IF_ERROR(on_event(e));
  }
}

Status KinetoFileReader::read_event(KinetoEvent* e) {
  *e = KinetoEvent();
  problem_ = Status::ok();
  bool has_ph = false;
  for (Token t = cursor_.next(); t != Token::kEndObject; t = cursor_.next()) {
    if (t == Token::kError) return syntax_error(cursor_, path_);
    const std::string key(cursor_.text());
    const Token v = cursor_.next();
    if (v == Token::kError) return syntax_error(cursor_, path_);
    const bool is_string = v == Token::kString;
    if (key == "ph") {
      if (!is_string) return bad(event_where(), "field 'ph': expected a string, got " + cursor_.describe_value(v));
      e->ph.assign(cursor_.text());
      has_ph = true;
    } else if (key == "name" || key == "cat") {
      if (!is_string) note_field(key, "expected a string, got " + cursor_.describe_value(v));
      if (is_string) (key == "name" ? e->name : e->cat).assign(cursor_.text());
      if (key == "name") e->has_name = is_string;
    } else if (key == "pid" || key == "tid") {
      read_event_id(key, v, e);
    } else if (key == "ts") {
      std::optional<Micros> ts;
      if (v != Token::kNumber) {
        note_field("ts", "expected a number, got " + cursor_.describe_value(v));
      } else if (!(ts = micros_from(cursor_))) {
        note_field("ts", std::string(cursor_.number_text()) + " is out of range (|ts| must be below 1e17 us)");
      } else {
        e->ts = *ts;
        e->has_ts = true;
      }
    } else if (key == "dur") {
      if (v != Token::kNumber) {
        note_field("dur", "expected a number, got " + cursor_.describe_value(v));
      } else {
        e->dur = cursor_.number();
        e->dur_text.assign(cursor_.number_text());
        e->has_dur = true;
      }
    } else if (key == "args") {
      if (v == Token::kBeginObject) {
        CT_RETURN_IF_ERROR(read_args(e));
        continue;
      }
      note_field("args", "expected an object, got " + cursor_.describe_value(v));
    }
    if (!cursor_.skip_rest_of_value(v)) return syntax_error(cursor_, path_);
  }
  if (!has_ph) return bad(event_where(), "missing field 'ph'");
  return Status::ok();
}

// "pid" or "tid": an integer, or a string (a thread's name) made an id.
void KinetoFileReader::read_event_id(const std::string& key, Token v, KinetoEvent* e) {
  const bool is_pid = key == "pid";
  std::optional<int64_t>& id = is_pid ? e->pid : e->tid;
  if (v == Token::kNumber && cursor_.is_integer()) {
    id = cursor_.integer();
  } else if (v == Token::kString) {
    id = id_from_string(cursor_.text());
  } else {
    note_field(key, "expected an integer or a string, got " + cursor_.describe_value(v));
  }
  (is_pid ? e->has_pid : e->has_tid) = true;
}

Status KinetoFileReader::read_args(KinetoEvent* e) {
  for (Token t = cursor_.next(); t != Token::kEndObject; t = cursor_.next()) {
    if (t == Token::kError) return syntax_error(cursor_, path_);
    const std::string key(cursor_.text());
    const Token v = cursor_.next();
    if (v == Token::kError) return syntax_error(cursor_, path_);
    if (key == "Input Dims" && v == Token::kBeginArray) {
      CT_RETURN_IF_ERROR(read_first_dims(e));
      continue;  // read_first_dims consumed the array
    }
    if (key == "Input type" && v == Token::kBeginArray) {
      CT_RETURN_IF_ERROR(read_first_type(e));
      continue;
    }
    if (!read_c10d_arg(key, v, e)) read_operator_arg(key, v, e);
    if (!cursor_.skip_rest_of_value(v)) return syntax_error(cursor_, path_);
  }
  return Status::ok();
}

void KinetoFileReader::note_field(const std::string& field, const std::string& problem) {
  if (problem_.is_ok()) problem_ = bad(event_where(), "field '" + field + "': " + problem);
}

void KinetoFileReader::arg_int(const std::string& key, Token v, int64_t min, int64_t max, std::optional<int64_t>* out) {
  if (v != Token::kNumber || !cursor_.is_integer()) {
    note_field("args." + key, "expected an integer, got " + cursor_.describe_value(v));
  } else if (cursor_.integer() < min || cursor_.integer() > max) {
    note_field("args." + key, std::string(cursor_.number_text()) + " is out of range (" + std::to_string(min) + " to " +
                                  std::to_string(max) + ")");
  } else {
    *out = cursor_.integer();
  }
}

// c10d's record_param_comms args: the collective, its size, its group and the ranks.
bool KinetoFileReader::read_c10d_arg(const std::string& key, Token v, KinetoEvent* e) {
  if (key == "Collective name" || key == "dtype") {
    if (v != Token::kString) {
      note_field("args." + key, "expected a string, got " + cursor_.describe_value(v));
    } else {
      (key == "dtype" ? e->dtype : e->collective).assign(cursor_.text());
    }
    if (key == "Collective name") e->has_collective = v == Token::kString;
  } else if (key == "In msg nelems") {
    // Bounded so that nelems x the widest dtype (16 B) fits in int64.
    arg_int(key, v, 0, std::numeric_limits<int64_t>::max() / 16, &e->in_nelems);
  } else if (key == "Group size") {
    arg_int(key, v, 1, 1 << 24, &e->group_size);
  } else if (key == "Rank" || key == "Dst Rank" || key == "Src Rank" || key == "Global rank start" ||
             key == "Global rank stride") {
    // Optional and version-dependent: a value we cannot use (-1 for "not strided") is left out, not refused.
    const int64_t min = key == "Global rank stride" ? 1 : 0;
    if (v == Token::kNumber && cursor_.is_integer() && cursor_.integer() >= min && cursor_.integer() < (1 << 24)) {
      std::optional<int64_t>* out = key == "Rank"                ? &e->rank_arg
                                    : key == "Dst Rank"          ? &e->dst_rank
                                    : key == "Src Rank"          ? &e->src_rank
                                    : key == "Global rank start" ? &e->global_rank_start
                                                                 : &e->global_rank_stride;
      *out = cursor_.integer();
    }
  } else if (key == "Process Group Ranks") {
    if (v == Token::kString) e->group_ranks = parse_rank_list(cursor_.text());
  } else {
    return false;
  }
  return true;
}

// An operator's or a runtime call's args: its name, FLOPs, bytes and correlation id.
void KinetoFileReader::read_operator_arg(const std::string& key, Token v, KinetoEvent* e) {
  if (key == "name" && v == Token::kString) {
    e->name_arg.assign(cursor_.text());  // the name given by a "ph": "M" event
  } else if (key == "flops") {
    // torch.profiler(with_flops=True) writes it on the operators it can count (GEMMs, convolutions).
    if (v != Token::kNumber || !(cursor_.number() >= 0) || !std::isfinite(cursor_.number())) {
      note_field("args." + key, "expected a number >= 0, got " + cursor_.describe_value(v));
    } else {
      e->flops = cursor_.number();
    }
  } else if (key == "bytes" && v == Token::kNumber && cursor_.is_integer() && cursor_.integer() >= 0) {
    e->bytes = cursor_.integer();  // memcpy and memset sizes; other uses of the name are not ours to check
  } else if (key == "correlation" && v == Token::kNumber && cursor_.is_integer()) {
    e->correlation = cursor_.integer();
  }
}

// "Input Dims": [[d0, d1, ...], [...], ...], the opening '[' read. The first
// inner array's product is the first input's element count; an empty one (a
// scalar, a list) leaves it unset, as does anything but non-negative integers.
Status KinetoFileReader::read_first_dims(KinetoEvent* e) {
  bool first = true;
  for (Token t = cursor_.next(); t != Token::kEndArray; t = cursor_.next()) {
    if (t == Token::kError) return syntax_error(cursor_, path_);
    if (!first || t != Token::kBeginArray) {
      if (!cursor_.skip_rest_of_value(t)) return syntax_error(cursor_, path_);
      first = false;
      continue;
    }
    first = false;
    int64_t product = 1;
    bool dims = false, valid = true;
    for (Token d = cursor_.next(); d != Token::kEndArray; d = cursor_.next()) {
      if (d == Token::kError) return syntax_error(cursor_, path_);
      if (d == Token::kNumber && cursor_.is_integer() && cursor_.integer() >= 0) {
        dims = true;
        const int64_t n = cursor_.integer();
        if (n != 0 && product > std::numeric_limits<int64_t>::max() / 16 / n) valid = false;  // x 16 B still fits
        product = valid ? product * n : product;
      } else {
        valid = false;
        if (!cursor_.skip_rest_of_value(d)) return syntax_error(cursor_, path_);
      }
    }
    if (dims && valid) e->first_input_nelems = product;
  }
  return Status::ok();
}

// "Input type": ["float", "Scalar", ...], the opening '[' read: the first string.
Status KinetoFileReader::read_first_type(KinetoEvent* e) {
  bool first = true;
  for (Token t = cursor_.next(); t != Token::kEndArray; t = cursor_.next()) {
    if (t == Token::kError) return syntax_error(cursor_, path_);
    if (first && t == Token::kString) e->first_input_type.assign(cursor_.text());
    first = false;
    if (!cursor_.skip_rest_of_value(t)) return syntax_error(cursor_, path_);
  }
  return Status::ok();
}

Status KinetoFileReader::check_complete(const KinetoEvent& e) const {
  if (!problem_.is_ok()) return problem_;
  const std::pair<bool, const char*> required[] = {
      {e.has_name, "name"}, {e.has_pid, "pid"}, {e.has_tid, "tid"}, {e.has_ts, "ts"}, {e.has_dur, "dur"}};
  for (const auto& [present, field] : required) {
    if (!present) return bad(event_where(), std::string("missing field '") + field + "'");
  }
  if (e.dur < 0) return bad(event_where(), "field 'dur': " + e.dur_text + " is negative (must be >= 0)");
  if (e.name.empty()) return bad(event_where(), "field 'name': must not be empty");
  return Status::ok();
}

}  // namespace

Status read_kineto_file(const std::string& path, FileHeader* header, const EventFn& on_event) {
  auto file = InputFile::open(path);
  if (!file.is_ok()) return file.status();
  KinetoFileReader reader(file->get(), path);
  return reader.read(header, on_event);
}

}  // namespace clustertwin::traces::kineto
