#include "models/nestpipe/criteo.h"

#include <charconv>

#include "common/check.h"
#include "models/nestpipe/key_generator.h"

namespace clustertwin::models::nestpipe {
namespace {

constexpr size_t kChunkBytes = 1 << 20;
constexpr size_t kShownChars = 32;  // a bad value longer than this is cut in messages

// The field's name as in the data set's description: label, I1..I13, C1..C26.
std::string field_name(int field) {
  if (field == 0) return "label";
  if (field <= kCriteoDenseFeatures) return "I" + std::to_string(field);
  return "C" + std::to_string(field - kCriteoDenseFeatures);
}

std::string shown(std::string_view text) {
  if (text.size() <= kShownChars) return std::string(text);
  return std::string(text.substr(0, kShownChars)) + "...";
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

StatusOr<CriteoSample> parse_criteo_line(std::string_view line, const std::string& file, int64_t line_number) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const std::string where = file + ":" + std::to_string(line_number) + ": ";
  std::array<std::string_view, kCriteoFields> fields;
  int found = 0;
  for (size_t start = 0;;) {
    const size_t tab = line.find('\t', start);
    const std::string_view field = line.substr(start, tab == std::string_view::npos ? line.npos : tab - start);
    if (found < kCriteoFields) fields[static_cast<size_t>(found)] = field;
    ++found;
    if (tab == std::string_view::npos) break;
    start = tab + 1;
  }
  if (found != kCriteoFields) {
    return Status::invalid_argument(where + "expected " + std::to_string(kCriteoFields) +
                                    " tab-separated fields, found " + std::to_string(found));
  }
  auto bad = [&](int field, std::string_view text, const std::string& why) {
    return Status::invalid_argument(where + "field '" + field_name(field) + "' (column " + std::to_string(field + 1) +
                                    "): '" + shown(text) + "' " + why);
  };

  CriteoSample sample;
  if (fields[0] != "0" && fields[0] != "1") return bad(0, fields[0], "is not 0 or 1");
  sample.label = fields[0] == "1" ? 1 : 0;
  for (int i = 0; i < kCriteoDenseFeatures; ++i) {
    const int field = 1 + i;
    const std::string_view text = fields[static_cast<size_t>(field)];
    if (text.empty()) continue;
    int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error == std::errc::result_out_of_range) return bad(field, text, "is out of the 64-bit integer range");
    if (error != std::errc() || end != text.data() + text.size()) return bad(field, text, "is not an integer");
    sample.dense[static_cast<size_t>(i)] = value;
  }
  for (int i = 0; i < kCriteoCategoricalFeatures; ++i) {
    const int field = 1 + kCriteoDenseFeatures + i;
    const std::string_view text = fields[static_cast<size_t>(field)];
    if (text.empty()) continue;
    uint32_t value = 0;
    bool ok = text.size() == 8;
    for (size_t c = 0; ok && c < text.size(); ++c) {
      const int digit = hex_digit(text[c]);
      ok = digit >= 0;
      value = value << 4 | static_cast<uint32_t>(digit);
    }
    if (!ok) return bad(field, text, "is not 8 hex digits");
    sample.categorical[static_cast<size_t>(i)] = value;
  }
  return sample;
}

int64_t criteo_key(int column, std::optional<uint32_t> value, int64_t vocabulary) {
  CT_CHECK(0 <= column && column < kCriteoCategoricalFeatures && vocabulary >= 1)
      << "column " << column << ", vocabulary " << vocabulary;
  const uint64_t word = (static_cast<uint64_t>(column) + 1) << 33 | (value ? *value : uint64_t{1} << 32);
  return static_cast<int64_t>(mix64(word) % static_cast<uint64_t>(vocabulary));
}

std::vector<int64_t> criteo_keys(const CriteoSample& sample, int64_t vocabulary) {
  std::vector<int64_t> keys;
  keys.reserve(kCriteoCategoricalFeatures);
  for (int c = 0; c < kCriteoCategoricalFeatures; ++c)
    keys.push_back(criteo_key(c, sample.categorical[static_cast<size_t>(c)], vocabulary));
  return keys;
}

// ------------------------------------------------------------ CriteoReader

StatusOr<std::unique_ptr<CriteoReader>> CriteoReader::open(const std::string& path) {
  StatusOr<std::unique_ptr<InputFile>> file = InputFile::open(path);
  if (!file.is_ok()) return file.status();
  return std::unique_ptr<CriteoReader>(new CriteoReader(std::move(*file)));
}

bool CriteoReader::next_line(std::string_view* line) {
  for (;;) {
    const size_t newline = buffer_.find('\n', begin_);
    if (newline != std::string::npos) {
      *line = std::string_view(buffer_).substr(begin_, newline - begin_);
      begin_ = newline + 1;
      return true;
    }
    if (at_end_) {
      if (begin_ >= buffer_.size()) return false;
      *line = std::string_view(buffer_).substr(begin_);  // the last line has no newline
      begin_ = buffer_.size();
      return true;
    }
    buffer_.erase(0, begin_);
    begin_ = 0;
    const size_t kept = buffer_.size();
    buffer_.resize(kept + kChunkBytes);
    const size_t got = file_->read(buffer_.data() + kept, kChunkBytes);
    buffer_.resize(kept + got);
    if (got == 0) {
      if (!file_->status().is_ok()) {
        status_ = file_->status();
        return false;
      }
      at_end_ = true;
    }
  }
}

bool CriteoReader::next(CriteoSample* sample) {
  if (!status_.is_ok()) return false;
  std::string_view line;
  if (!next_line(&line)) return false;
  ++line_number_;
  StatusOr<CriteoSample> parsed = parse_criteo_line(line, file_->path(), line_number_);
  if (!parsed.is_ok()) {
    status_ = parsed.status();
    return false;
  }
  *sample = std::move(*parsed);
  return true;
}

}  // namespace clustertwin::models::nestpipe
