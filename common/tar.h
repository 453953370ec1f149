#pragma once

// Reading the regular files of a ustar archive (POSIX.1-1988 tar, what
// `tar --format=ustar` writes), plain or gzipped. Our own small reader: the
// repository ships data as such archives (models/igsp/data/corpus), and one
// reader of a fixed format is less than a library.
//
//   archive: header block, data blocks, header block, data blocks, ..., two zero blocks
//   header (512 bytes): name[100] @0, size[12] @124 (octal), checksum[8] @148,
//                       typeflag @156, magic "ustar" @257, prefix[155] @345
//   an entry's name is prefix + "/" + name (just name when prefix is empty)

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace clustertwin {

/// One regular file of an archive.
struct TarEntry {
  std::string name;  // as stored: "doc/bc/README"
  std::string data;
};

/// The regular files of the ustar archive `bytes`, in stored order;
/// directory entries are skipped. InvalidArgument, naming `label`, the entry
/// (its number from 1, and its name once known) and the field, for anything
/// else: a header without the "ustar" magic or with a wrong checksum, a size
/// that is not octal, an entry of another type (links, devices, pax or GNU
/// extension headers), an empty or repeated name, data running past the end,
/// or no end-of-archive block.
StatusOr<std::vector<TarEntry>> parse_tar(std::string_view bytes, const std::string& label);

/// parse_tar of the file at `path` (gzipped or not, as read_file reads it),
/// its errors naming `path`; read_file's errors for a file it cannot read.
StatusOr<std::vector<TarEntry>> read_tar(const std::string& path);

/// True for a name a pack is known by: ends with ".tar" or ".tar.gz".
bool is_tar_name(std::string_view path);

}  // namespace clustertwin
