#include "common/state_dump.h"

#include <cstring>
#include <filesystem>
#include <system_error>

#include "common/file_io.h"
#include "common/text.h"

namespace clustertwin {
namespace {

constexpr char kMagic[8] = {'C', 'T', 'N', 'P', 'D', 'U', 'M', 'P'};
constexpr uint32_t kFormatVersion = 1;

template <class T>
void put(std::string* out, T value) {
  char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  out->append(raw, sizeof(T));
}

class Cursor {
 public:
  Cursor(const std::string& bytes, const std::string& name) : bytes_(bytes), name_(name) {}
  template <class T>
  bool get(T* value, const char* what) {
    if (!take(sizeof(T), what)) return false;
    std::memcpy(value, bytes_.data() + at_ - sizeof(T), sizeof(T));
    return true;
  }
  bool get_bytes(size_t n, std::string* out, const char* what) {
    if (!take(n, what)) return false;
    out->assign(bytes_.data() + at_ - n, n);
    return true;
  }
  const Status& status() const { return status_; }
  bool at_end() const { return at_ == bytes_.size(); }
  size_t remaining() const { return bytes_.size() - at_; }

 private:
  bool take(size_t n, const char* what) {
    if (bytes_.size() - at_ < n) {
      status_ =
          Status::invalid_argument(name_ + ": truncated at byte " + std::to_string(at_) + " (reading " + what + ")");
      return false;
    }
    at_ += n;
    return true;
  }
  const std::string& bytes_;
  const std::string& name_;
  size_t at_ = 0;
  Status status_;
};

}  // namespace

int64_t DumpTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<double> DumpTensor::values() const {
  std::vector<double> out(static_cast<size_t>(elements()));
  for (size_t i = 0; i < out.size(); ++i) {
    if (type == Type::kFloat32) {
      float f;
      std::memcpy(&f, bytes.data() + i * 4, 4);
      out[i] = f;
    } else if (type == Type::kFloat64) {
      std::memcpy(&out[i], bytes.data() + i * 8, 8);
    } else {
      int64_t v;
      std::memcpy(&v, bytes.data() + i * 8, 8);
      out[i] = static_cast<double>(v);
    }
  }
  return out;
}

std::string encode_state_dump(const StateDump& dump) {
  std::string out(kMagic, sizeof(kMagic));
  put<uint32_t>(&out, kFormatVersion);
  put<uint32_t>(&out, static_cast<uint32_t>(dump.rank));
  put<uint32_t>(&out, static_cast<uint32_t>(dump.world));
  put<uint32_t>(&out, static_cast<uint32_t>(dump.tensors.size()));
  for (const DumpTensor& t : dump.tensors) {
    put<uint32_t>(&out, static_cast<uint32_t>(t.name.size()));
    out += t.name;
    put<uint8_t>(&out, static_cast<uint8_t>(t.type));
    put<uint32_t>(&out, static_cast<uint32_t>(t.shape.size()));
    for (int64_t d : t.shape)
      put<int64_t>(&out, d);
    put<uint64_t>(&out, static_cast<uint64_t>(t.bytes.size()));
    out += t.bytes;
  }
  return out;
}

StatusOr<StateDump> decode_state_dump(const std::string& bytes, const std::string& name) {
  Cursor c(bytes, name);
  std::string magic;
  if (!c.get_bytes(sizeof(kMagic), &magic, "the magic")) return c.status();
  if (magic != std::string(kMagic, sizeof(kMagic))) return Status::invalid_argument(name + ": not a state dump");
  uint32_t version = 0, rank = 0, world = 0, count = 0;
  if (!c.get(&version, "the version") || !c.get(&rank, "the rank") || !c.get(&world, "the world") ||
      !c.get(&count, "the tensor count")) {
    return c.status();
  }
  if (version != kFormatVersion) {
    return Status::invalid_argument(name + ": format version " + std::to_string(version) + ", this build reads " +
                                    std::to_string(kFormatVersion));
  }
  StateDump dump;
  dump.rank = static_cast<int>(rank);
  dump.world = static_cast<int>(world);
  for (uint32_t i = 0; i < count; ++i) {
    DumpTensor t;
    uint32_t name_size = 0, dims = 0;
    uint8_t type = 0;
    uint64_t size = 0;
    if (!c.get(&name_size, "a name length") || !c.get_bytes(name_size, &t.name, "a name") || !c.get(&type, "a dtype") ||
        !c.get(&dims, "a shape rank")) {
      return c.status();
    }
    const std::string tensor = name + ": tensor " + quote_for_message(t.name);
    if (type > 2) return Status::invalid_argument(tensor + ": dtype " + std::to_string(type));
    t.type = static_cast<DumpTensor::Type>(type);
    // Each dimension is 8 bytes of the file: a shape longer than what is left is refused before it is allocated.
    if (dims > c.remaining() / sizeof(int64_t)) {
      return Status::invalid_argument(tensor + ": a shape of " + std::to_string(dims) +
                                      " dimensions runs past the end");
    }
    t.shape.resize(dims);
    const uint64_t element_bytes = t.type == DumpTensor::Type::kFloat32 ? 4 : 8;
    uint64_t want = element_bytes;
    for (int64_t& d : t.shape) {
      if (!c.get(&d, "a dimension")) return c.status();
      if (d < 0 || (d > 0 && want > bytes.size() / static_cast<uint64_t>(d))) {
        return Status::invalid_argument(tensor + ": dimension " + std::to_string(d) + " is negative or more than the " +
                                        std::to_string(bytes.size()) + " bytes of the file hold");
      }
      want *= static_cast<uint64_t>(d);
    }
    if (!c.get(&size, "a byte count") || !c.get_bytes(size, &t.bytes, "the elements")) return c.status();
    if (size != want) {
      return Status::invalid_argument(tensor + ": " + std::to_string(size) + " bytes for its shape's " +
                                      std::to_string(want));
    }
    dump.tensors.push_back(std::move(t));
  }
  if (!c.at_end()) return Status::invalid_argument(name + ": trailing bytes after the last tensor");
  return dump;
}

std::string state_dump_path(const std::string& dir, int rank) {
  return (std::filesystem::path(dir) / ("rank-" + std::to_string(rank) + ".bin")).string();
}

Status write_state_dump(const std::string& dir, const StateDump& dump) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return Status::io_error(dir + ": cannot create the folder: " + error.message());
  return write_file_atomically(state_dump_path(dir, dump.rank), encode_state_dump(dump));
}

StatusOr<StateDump> read_state_dump(const std::string& path) {
  auto bytes = read_file(path);
  if (!bytes.is_ok()) return bytes.status();
  return decode_state_dump(*bytes, path);
}

}  // namespace clustertwin
