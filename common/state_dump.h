#pragma once

// One rank's training state as a file, for comparing runs bit for bit
// (`run nestpipe --dump-state DIR` and `run flexmarl --dump-params DIR`
// write DIR/rank-R.bin). No torch here, so tests and tools read dumps
// without it.
//
// Layout, little-endian, no padding:
//   "CTNPDUMP"           8 bytes
//   u32 format version   1
//   u32 rank, u32 world, u32 tensor count
//   per tensor:  u32 name length, name bytes,
//                u8 dtype (0 float32, 1 int64, 2 float64), u32 rank of the shape,
//                i64 dims..., u64 byte count, the raw elements (row-major)

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace clustertwin {

struct DumpTensor {
  enum class Type : uint8_t { kFloat32 = 0, kInt64 = 1, kFloat64 = 2 };
  std::string name;
  Type type = Type::kFloat32;
  std::vector<int64_t> shape;
  std::string bytes;  // raw elements, row-major

  int64_t elements() const;
  /// The elements as doubles (int64 converted), for comparisons.
  std::vector<double> values() const;
};

struct StateDump {
  int rank = 0;
  int world = 1;
  std::vector<DumpTensor> tensors;
};

std::string encode_state_dump(const StateDump& dump);
/// InvalidArgument "NAME: ..." naming what is wrong (magic, version, a
/// tensor whose byte count does not match its shape, a truncated file).
StatusOr<StateDump> decode_state_dump(const std::string& bytes, const std::string& name);

/// Writes `dump` to DIR/rank-R.bin, creating DIR when missing, atomically
/// (write to a temporary file, then rename): a reader never sees half a dump.
Status write_state_dump(const std::string& dir, const StateDump& dump);
StatusOr<StateDump> read_state_dump(const std::string& path);
std::string state_dump_path(const std::string& dir, int rank);

}  // namespace clustertwin
