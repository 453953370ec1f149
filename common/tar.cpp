#include "common/tar.h"

#include <cstdint>
#include <set>

#include "common/file_io.h"

namespace clustertwin {
namespace {

constexpr size_t kTarBlock = 512;
// The header's fields: offset and width (POSIX.1-1988 ustar).
constexpr size_t kNameAt = 0, kNameWidth = 100;
constexpr size_t kSizeAt = 124, kSizeWidth = 12;
constexpr size_t kChecksumAt = 148, kChecksumWidth = 8;
constexpr size_t kTypeAt = 156;
constexpr size_t kMagicAt = 257, kMagicWidth = 5;
constexpr size_t kPrefixAt = 345, kPrefixWidth = 155;

// A text field: up to its first NUL, or its whole width.
std::string_view tar_text(std::string_view header, size_t at, size_t width) {
  std::string_view field = header.substr(at, width);
  const size_t nul = field.find('\0');
  return nul == std::string_view::npos ? field : field.substr(0, nul);
}

// A field as a message can show it: other than printable ASCII as \xNN.
std::string tar_shown(std::string_view raw) {
  std::string out;
  for (unsigned char c : raw) {
    if (c >= 32 && c < 127) {
      out.push_back(static_cast<char>(c));
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// A numeric field: leading spaces, octal digits, then only NULs and spaces.
bool tar_octal(std::string_view raw, uint64_t* value) {
  size_t i = 0;
  while (i < raw.size() && raw[i] == ' ')
    ++i;
  const size_t first = i;
  uint64_t v = 0;
  for (; i < raw.size() && raw[i] >= '0' && raw[i] <= '7'; ++i)
    v = v * 8 + static_cast<uint64_t>(raw[i] - '0');
  if (i == first) return false;
  for (; i < raw.size(); ++i) {
    if (raw[i] != '\0' && raw[i] != ' ') return false;
  }
  *value = v;
  return true;
}

bool tar_zero_block(std::string_view block) {
  return block.find_first_not_of('\0') == std::string_view::npos;
}

}  // namespace

StatusOr<std::vector<TarEntry>> parse_tar(std::string_view bytes, const std::string& label) {
  std::vector<TarEntry> entries;
  std::set<std::string, std::less<>> names;
  size_t at = 0;
  for (int number = 1;; ++number) {
    const std::string entry = label + ": entry " + std::to_string(number);
    if (at == bytes.size()) {
      if (number == 1) return Status::invalid_argument(label + ": empty (not even an end-of-archive block)");
      return Status::invalid_argument(label + ": ends after entry " + std::to_string(number - 1) +
                                      " without the end-of-archive block: truncated");
    }
    if (bytes.size() - at < kTarBlock) {
      return Status::invalid_argument(entry + ": the archive ends inside its header, at byte " +
                                      std::to_string(bytes.size()) + ": truncated");
    }
    const std::string_view header = bytes.substr(at, kTarBlock);
    if (tar_zero_block(header)) break;  // the end-of-archive block
    const std::string_view magic = header.substr(kMagicAt, kMagicWidth);
    if (magic != "ustar") {
      return Status::invalid_argument(entry + " (header at byte " + std::to_string(at) + "): magic '" +
                                      tar_shown(magic) + "' is not 'ustar' (not a ustar archive)");
    }
    const std::string_view name_field = tar_text(header, kNameAt, kNameWidth);
    const std::string_view prefix_field = tar_text(header, kPrefixAt, kPrefixWidth);
    std::string name =
        prefix_field.empty() ? std::string(name_field) : std::string(prefix_field) + "/" + std::string(name_field);
    const std::string named = entry + " (" + tar_shown(name) + ")";

    uint64_t stored_sum = 0;
    const std::string_view sum_field = header.substr(kChecksumAt, kChecksumWidth);
    if (!tar_octal(sum_field, &stored_sum)) {
      return Status::invalid_argument(named + ": checksum field '" + tar_shown(sum_field) + "' is not octal");
    }
    uint64_t sum = 0;
    for (size_t i = 0; i < kTarBlock; ++i) {
      const bool in_sum = i >= kChecksumAt && i < kChecksumAt + kChecksumWidth;
      sum += in_sum ? static_cast<uint64_t>(' ') : static_cast<unsigned char>(header[i]);
    }
    if (sum != stored_sum) {
      return Status::invalid_argument(named + ": header checksum " + std::to_string(stored_sum) + " stored, " +
                                      std::to_string(sum) + " computed (a corrupt header)");
    }
    if (name_field.empty()) return Status::invalid_argument(entry + ": empty name");

    uint64_t size = 0;
    const std::string_view size_field = header.substr(kSizeAt, kSizeWidth);
    if ((static_cast<unsigned char>(size_field[0]) & 0x80) != 0) {
      return Status::invalid_argument(named + ": size field in base-256 (a file of 8 GiB or more): not read here");
    }
    if (!tar_octal(size_field, &size)) {
      return Status::invalid_argument(named + ": size field '" + tar_shown(size_field) + "' is not octal");
    }
    const size_t data_at = at + kTarBlock;
    if (size > bytes.size() - data_at) {
      return Status::invalid_argument(named + ": its " + std::to_string(size) + " bytes of data run past the end (" +
                                      std::to_string(bytes.size() - data_at) + " left): truncated");
    }
    const char type = header[kTypeAt];
    if (type == '0' || type == '\0') {
      if (!names.insert(name).second) return Status::invalid_argument(named + ": the name appears twice");
      entries.push_back({std::move(name), std::string(bytes.substr(data_at, size))});
    } else if (type != '5') {  // a directory: nothing to read
      return Status::invalid_argument(named + ": type '" + tar_shown(std::string_view(&type, 1)) +
                                      "' is not a regular file or a directory (only those are read)");
    }
    at = data_at + (size + kTarBlock - 1) / kTarBlock * kTarBlock;
    if (at > bytes.size()) at = bytes.size();  // the last block's padding cut off: the end-of-archive check says so
  }
  return entries;
}

StatusOr<std::vector<TarEntry>> read_tar(const std::string& path) {
  StatusOr<std::string> bytes = read_file(path);
  if (!bytes.is_ok()) return bytes.status();
  return parse_tar(*bytes, path);
}

bool is_tar_name(std::string_view path) {
  return ends_with(path, ".tar") || ends_with(path, ".tar.gz");
}

}  // namespace clustertwin
