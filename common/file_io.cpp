#include "common/file_io.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace clustertwin {
namespace {

constexpr size_t kBufferBytes = 1 << 20;

std::string errno_text() {
  return std::strerror(errno);
}

}  // namespace

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// ---------------------------------------------------------------- InputFile

StatusOr<std::unique_ptr<InputFile>> InputFile::open(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::not_found(path + ": no such file");
  if (std::filesystem::is_directory(path, ec)) return Status::invalid_argument(path + ": is a directory, not a file");
  gzFile handle = gzopen(path.c_str(), "rb");
  if (handle == nullptr) return Status::io_error(path + ": cannot open: " + errno_text());
  gzbuffer(handle, static_cast<unsigned>(kBufferBytes));
  return std::unique_ptr<InputFile>(new InputFile(path, handle));
}

InputFile::~InputFile() {
  if (handle_ != nullptr) gzclose(static_cast<gzFile>(handle_));
}

size_t InputFile::read(char* buffer, size_t capacity) {
  if (!status_.is_ok() || capacity == 0) return 0;
  const unsigned want = static_cast<unsigned>(std::min<size_t>(capacity, 1u << 30));
  const int got = gzread(static_cast<gzFile>(handle_), buffer, want);
  if (got < 0) {
    int zerr = 0;
    const char* text = gzerror(static_cast<gzFile>(handle_), &zerr);
    status_ = Status::invalid_argument(path_ + ": cannot read: " + (text != nullptr ? text : "unknown zlib error"));
    return 0;
  }
  if (got == 0) {
    // zlib reports a gzip stream cut short only through gzerror after EOF.
    int zerr = 0;
    const char* text = gzerror(static_cast<gzFile>(handle_), &zerr);
    if (zerr != Z_OK && zerr != Z_STREAM_END) {
      status_ = Status::invalid_argument(
          path_ + ": corrupt or truncated compressed data: " + (text != nullptr ? text : "unknown zlib error"));
    }
  }
  return static_cast<size_t>(got);
}

StatusOr<std::string> read_file(const std::string& path) {
  auto file = InputFile::open(path);
  if (!file.is_ok()) return file.status();
  std::string contents;
  std::string chunk(kBufferBytes, '\0');
  while (size_t got = (*file)->read(chunk.data(), chunk.size()))
    contents.append(chunk.data(), got);
  if (!(*file)->status().is_ok()) return (*file)->status();
  return contents;
}

// --------------------------------------------------------- AtomicOutputFile

AtomicOutputFile::AtomicOutputFile(std::string path, std::string temp_path, bool gzip, void* handle)
    : path_(std::move(path)), temp_path_(std::move(temp_path)), gzip_(gzip), handle_(handle) {
  buffer_.reserve(kBufferBytes);
}

StatusOr<std::unique_ptr<AtomicOutputFile>> AtomicOutputFile::create(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  const std::filesystem::path target(path);
  if (target.filename().empty()) return Status::invalid_argument(path + ": output path names no file");
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Status::not_found(path + ": output directory '" + dir.string() + "' does not exist");
  }
  // The rename would replace whatever the path is: a directory fails late, a device (/dev/null, /dev/full) would
  // be replaced by a regular file. Only a regular file (or a link to one) or a new path is written.
  const std::filesystem::file_status existing = std::filesystem::status(target, ec);
  if (std::filesystem::exists(existing) && !std::filesystem::is_regular_file(existing)) {
    return Status::invalid_argument(
        path + ": not a regular file (" +
        (std::filesystem::is_directory(existing) ? "a directory" : "a device or special file") +
        "); an output must be a file path");
  }
  // The temporary file sits in the target's directory so that the final
  // rename stays on one file system and is atomic.
  std::string temp_name(".");
  temp_name += target.filename().string();
  temp_name += ".tmp.";
  temp_name += std::to_string(::getpid());
  temp_name += ".";
  temp_name += std::to_string(counter.fetch_add(1));
  const std::string temp = (dir / temp_name).string();
  const bool gzip = ends_with(path, ".gz");
  void* handle = nullptr;
  if (gzip) {
    handle = gzopen(temp.c_str(), "wb6");
  } else {
    handle = std::fopen(temp.c_str(), "wb");
  }
  if (handle == nullptr)
    return Status::io_error(path + ": cannot create temporary file '" + temp + "': " + errno_text());
  return std::unique_ptr<AtomicOutputFile>(new AtomicOutputFile(path, temp, gzip, handle));
}

AtomicOutputFile::~AtomicOutputFile() {
  if (committed_) return;
  if (handle_ != nullptr) {
    if (gzip_) {
      gzclose(static_cast<gzFile>(handle_));
    } else {
      std::fclose(static_cast<FILE*>(handle_));
    }
  }
  std::remove(temp_path_.c_str());
}

void AtomicOutputFile::write(std::string_view bytes) {
  if (buffer_.size() + bytes.size() > kBufferBytes) flush_buffer();
  if (bytes.size() >= kBufferBytes) {
    buffer_.append(bytes);
    flush_buffer();
    return;
  }
  buffer_.append(bytes);
}

void AtomicOutputFile::flush_buffer() {
  if (buffer_.empty() || !status_.is_ok()) {
    buffer_.clear();
    return;
  }
  bool ok = true;
  if (gzip_) {
    ok = gzwrite(static_cast<gzFile>(handle_), buffer_.data(), static_cast<unsigned>(buffer_.size())) ==
         static_cast<int>(buffer_.size());
  } else {
    ok = std::fwrite(buffer_.data(), 1, buffer_.size(), static_cast<FILE*>(handle_)) == buffer_.size();
  }
  if (!ok) status_ = Status::io_error(path_ + ": write failed: " + errno_text());
  buffer_.clear();
}

Status AtomicOutputFile::commit() {
  if (committed_) return Status::internal(path_ + ": committed twice");
  flush_buffer();
  bool closed = true;
  if (gzip_) {
    closed = gzclose(static_cast<gzFile>(handle_)) == Z_OK;
  } else {
    FILE* file = static_cast<FILE*>(handle_);
    closed = std::fflush(file) == 0 && ::fsync(fileno(file)) == 0;
    closed = (std::fclose(file) == 0) && closed;
  }
  handle_ = nullptr;
  if (!closed && status_.is_ok()) status_ = Status::io_error(path_ + ": cannot finish writing: " + errno_text());
  if (!status_.is_ok()) return status_;
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    return Status::io_error(path_ + ": cannot rename temporary file into place: " + errno_text());
  }
  committed_ = true;
  return Status::ok();
}

Status write_file_atomically(const std::string& path, std::string_view contents) {
  auto out = AtomicOutputFile::create(path);
  if (!out.is_ok()) return out.status();
  (*out)->write(contents);
  return (*out)->commit();
}

Status write_stdout(std::string_view text) {
  const bool written = std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
  return written && std::fflush(stdout) == 0 ? Status::ok() : Status::io_error("<stdout>: write failed");
}

Status make_directories(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  return error ? Status::io_error(dir + ": " + error.message()) : Status::ok();
}

}  // namespace clustertwin
