#pragma once

#include <memory>
#include <string>

#include "common/file_io.h"
#include "common/status.h"
#include "traces/event.h"

namespace clustertwin::traces {

/// Writes a trace in the format of traces/FORMAT.md, streaming and atomically:
/// events go to a temporary file beside `path` that `close()` renames into
/// place, so a reader never sees half a trace. A path ending in `.gz` is
/// gzip-compressed. The file opens in Perfetto (https://ui.perfetto.dev) and
/// chrome://tracing: ranks show as processes and streams as threads.
class TraceWriter {
 public:
  /// Starts the file and writes the metadata object. InvalidArgument when the
  /// metadata is not writable (config_json not a JSON object, world size < 1).
  static StatusOr<std::unique_ptr<TraceWriter>> create(const std::string& path, const Metadata& metadata);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  /// Appends one complete event (times must be finite).
  void write(const Event& event);
  /// Ends the document and renames it into place. Without `close()` the file is discarded.
  Status close();

  int64_t events_written() const { return count_; }

 private:
  TraceWriter(std::unique_ptr<AtomicOutputFile> out) : out_(std::move(out)) {}

  std::unique_ptr<AtomicOutputFile> out_;
  std::string line_;
  int64_t count_ = 0;
  bool first_ = true;
};

/// Writes a whole in-memory trace (see TraceWriter).
Status write_trace(const std::string& path, const Trace& trace);

/// Appends one complete event as a JSON object (no separator).
void append_event_json(std::string* out, const Event& event);

/// The metadata object as compact JSON (also used for `trace summary --json`).
std::string metadata_to_json(const Metadata& metadata);

}  // namespace clustertwin::traces
