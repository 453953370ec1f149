#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_io.h"
#include "common/status.h"

namespace clustertwin::models::nestpipe {

constexpr int kCriteoDenseFeatures = 13;        // I1..I13, integer counts (some negative in the data set)
constexpr int kCriteoCategoricalFeatures = 26;  // C1..C26, 32-bit ids written as 8 hex digits
constexpr int kCriteoFields = 1 + kCriteoDenseFeatures + kCriteoCategoricalFeatures;

/// One line of Criteo's click logs (the Kaggle Display Advertising Challenge
/// and Terabyte layout): label, I1..I13, C1..C26, tab-separated. An empty
/// field is a missing value.
struct CriteoSample {
  int label = 0;  // 1: clicked
  std::array<std::optional<int64_t>, kCriteoDenseFeatures> dense;
  std::array<std::optional<uint32_t>, kCriteoCategoricalFeatures> categorical;
};

/// Parses one line (without its newline; a trailing '\r' is ignored).
/// InvalidArgument "FILE:LINE: ..." naming the field, its column (1-based)
/// and the bad text:
///   "expected 40 tab-separated fields, found 12"
///   "field 'label' (column 1): '2' is not 0 or 1"
///   "field 'I5' (column 6): 'abc' is not an integer"
///   "field 'C3' (column 17): 'xyz' is not 8 hex digits"
StatusOr<CriteoSample> parse_criteo_line(std::string_view line, const std::string& file, int64_t line_number);

/// The embedding key of categorical column `column` (0-based: 0 is C1) with
/// `value` (nullopt: missing) in one shared table of `vocabulary` rows:
///   key = mix64((column + 1) * 2^33 + (missing ? 2^32 : value)) mod vocabulary.
/// The word hashed is distinct for every (column, value) pair, missing
/// included, and mix64 is a bijection, so keys collide only through the
/// final modulo, as in any hashed embedding table (TorchRec's Criteo
/// preprocessing takes each value mod its table's size). Every column has
/// its own "missing" key rather than none, so every sample has 26 keys.
int64_t criteo_key(int column, std::optional<uint32_t> value, int64_t vocabulary);

/// The 26 keys of a sample (criteo_key of C1..C26), in column order.
std::vector<int64_t> criteo_keys(const CriteoSample& sample, int64_t vocabulary);

/// Streams the samples of a Criteo file, plain or gzip-compressed, line by
/// line in constant memory (the Terabyte logs are ~1 TB).
class CriteoReader {
 public:
  /// NotFound or IoError naming the path when it cannot be opened.
  static StatusOr<std::unique_ptr<CriteoReader>> open(const std::string& path);

  /// Reads the next sample. True when one was read; false at the end of the
  /// file or on an error, which `status()` then holds ("FILE:LINE: ..." for
  /// a malformed line; the reader stops there).
  bool next(CriteoSample* sample);
  const Status& status() const { return status_; }
  /// The 1-based number of the last line read.
  int64_t line_number() const { return line_number_; }

 private:
  explicit CriteoReader(std::unique_ptr<InputFile> file) : file_(std::move(file)) {}
  bool next_line(std::string_view* line);

  std::unique_ptr<InputFile> file_;
  std::string buffer_;
  size_t begin_ = 0;  // the first byte of buffer_ not yet returned
  bool at_end_ = false;
  int64_t line_number_ = 0;
  Status status_;
};

}  // namespace clustertwin::models::nestpipe
