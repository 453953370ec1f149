#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace clustertwin {

/// Reads a file front to back, transparently decompressing gzip.
///
/// Plain and `.gz` files are read the same way (zlib passes plain data
/// through), so every reader of ours accepts both without asking.
class InputFile {
 public:
  /// Opens `path`. NotFound when it does not exist, IoError when it cannot be read.
  static StatusOr<std::unique_ptr<InputFile>> open(const std::string& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  /// Reads up to `capacity` bytes into `buffer`; returns the count, 0 at the
  /// end. A read error (or a corrupt or truncated gzip stream) sets `status()`
  /// and returns 0.
  size_t read(char* buffer, size_t capacity);
  const Status& status() const { return status_; }
  const std::string& path() const { return path_; }

 private:
  InputFile(std::string path, void* handle) : path_(std::move(path)), handle_(handle) {}
  std::string path_;
  void* handle_;  // gzFile; kept opaque so that zlib.h stays out of our headers
  Status status_;
};

/// Writes a file atomically: everything goes to a temporary file beside the
/// target, and only `commit()` renames it into place. A writer destroyed
/// before `commit()` removes the temporary file, so a crash or an error never
/// leaves a half-written result where the user expects a whole one.
/// A target ending in `.gz` is gzip-compressed.
class AtomicOutputFile {
 public:
  /// Creates the temporary file. IoError names the path when that fails;
  /// InvalidArgument when the path exists and is not a regular file (a
  /// directory or a device such as /dev/null, which the rename would replace).
  static StatusOr<std::unique_ptr<AtomicOutputFile>> create(const std::string& path);
  ~AtomicOutputFile();
  AtomicOutputFile(const AtomicOutputFile&) = delete;
  AtomicOutputFile& operator=(const AtomicOutputFile&) = delete;

  /// Appends bytes (buffered). Errors are kept and reported by `commit()`.
  void write(std::string_view bytes);
  /// Flushes, syncs and renames the temporary file onto the target.
  Status commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  AtomicOutputFile(std::string path, std::string temp_path, bool gzip, void* handle);
  void flush_buffer();

  std::string path_;
  std::string temp_path_;
  bool gzip_;
  void* handle_;  // gzFile or FILE*
  std::string buffer_;
  Status status_;
  bool committed_ = false;
};

/// Writes `contents` to `path` atomically (see AtomicOutputFile).
Status write_file_atomically(const std::string& path, std::string_view contents);

/// Reads a whole (possibly gzipped) file into a string.
StatusOr<std::string> read_file(const std::string& path);

/// Writes `text` to standard output and flushes it; IoError "<stdout>: write failed" when either fails.
Status write_stdout(std::string_view text);

/// Creates the folder `dir` and its parents (an existing one is fine); IoError naming it otherwise.
Status make_directories(const std::string& dir);

/// True when `text` ends with `suffix`.
bool ends_with(std::string_view text, std::string_view suffix);

}  // namespace clustertwin
