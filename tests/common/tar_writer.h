#pragma once

// The tests' own ustar writer, from the format's layout (common/tar.h):
// a header with its checksum, the data padded to whole blocks. Tests build
// archives with it, well-formed or broken on purpose.

#include <cstdio>
#include <string>

namespace clustertwin::testing {

/// The header's checksum: the sum of its bytes, the checksum field counted as spaces.
inline unsigned tar_header_sum(const std::string& block) {
  unsigned sum = 0;
  for (size_t i = 0; i < 512; ++i)
    sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(block[i]);
  return sum;
}

/// A header for `name` (below `prefix` when that is not empty) of `size`
/// bytes and `type`; `size_field`, when not empty, is written as the size
/// field instead of `size` in octal.
inline std::string tar_header(const std::string& name, size_t size, char type = '0', const std::string& prefix = "",
                              const std::string& size_field = "") {
  std::string block(512, '\0');
  block.replace(0, name.size(), name);
  char octal[13];
  std::snprintf(octal, sizeof octal, "%011zo", size);
  const std::string size_text = size_field.empty() ? std::string(octal, 12) : size_field;
  block.replace(124, size_text.size(), size_text);
  block[156] = type;
  block.replace(257, 8,
                std::string("ustar\0"
                            "00",
                            8));
  block.replace(345, prefix.size(), prefix);
  std::snprintf(octal, sizeof octal, "%06o", tar_header_sum(block));
  block.replace(148, 8, std::string(octal, 7) + " ");
  return block;
}

/// A regular file's header and data.
inline std::string tar_file(const std::string& name, const std::string& data, const std::string& prefix = "") {
  return tar_header(name, data.size(), '0', prefix) + data + std::string((512 - data.size() % 512) % 512, '\0');
}

/// The end-of-archive blocks.
inline std::string tar_end() {
  return std::string(1024, '\0');
}

}  // namespace clustertwin::testing
