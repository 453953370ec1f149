#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "traces/event.h"
#include "traces/json_cursor.h"

namespace clustertwin {
class InputFile;
}

namespace clustertwin::traces {

/// Streams the complete events of a trace file (plain or `.json.gz`) one at a
/// time, in constant memory, checking each against traces/FORMAT.md.
///
///   auto reader = TraceReader::open("run.json.gz");
///   Event e;
///   while ((*reader)->next(&e)) use(e);
///   if (!(*reader)->status().is_ok()) report((*reader)->status());
///
/// Metadata events ("ph": "M", Perfetto's process and thread names) are
/// checked and skipped. The metadata object is available as soon as the
/// reader has passed it: at once for files we write (it comes first), after
/// the last event for files that put it last.
///
/// Errors name the file, the event's index in `traceEvents`, the field and
/// the bad value: "run.json: event 12: field 'dur': -5 is negative".
class TraceReader {
 public:
  /// Opens `path`. NotFound or IoError when the file cannot be read.
  static StatusOr<std::unique_ptr<TraceReader>> open(const std::string& path);
  /// Reads an in-memory document; `name` stands for the file in messages.
  static std::unique_ptr<TraceReader> from_text(std::string_view text, std::string name);
  ~TraceReader();

  /// Reads the next complete event into `*event`. Returns false at the end of
  /// the trace or on an error; `status()` tells which.
  bool next(Event* event);

  const Status& status() const { return status_; }
  bool has_metadata() const { return has_metadata_; }
  const Metadata& metadata() const { return metadata_; }
  /// Index in `traceEvents` of the event last returned by `next()`.
  int64_t event_index() const { return index_ - 1; }
  const std::string& name() const { return name_; }

 private:
  TraceReader(std::unique_ptr<InputFile> file, std::string name);
  TraceReader(std::string_view text, std::string name);

  bool fail(Status status);
  bool fail_syntax();
  bool seek_events();      // reads top-level members until inside `traceEvents`
  bool finish_document();  // reads the members after `traceEvents`
  bool read_metadata();    // cursor is at the metadata object's member value
  bool read_event(Event* event, bool* is_complete);
  bool read_args(Event* event);

  enum class State { kStart, kInEvents, kDone };

  std::unique_ptr<InputFile> file_;
  std::string name_;
  std::unique_ptr<JsonCursor> cursor_;
  State state_ = State::kStart;
  bool seen_events_ = false;
  bool has_metadata_ = false;
  Metadata metadata_;
  int64_t index_ = 0;
  Status status_;
};

/// Reads a whole trace into memory, requiring the metadata object.
StatusOr<Trace> read_trace(const std::string& path);

}  // namespace clustertwin::traces
