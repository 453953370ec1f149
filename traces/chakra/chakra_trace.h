#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"

namespace clustertwin::traces::chakra {

/// Node types of a Chakra execution trace (NodeType in chakra_et.proto; the
/// numbers are the wire values).
enum class NodeType : int {
  kInvalid = 0,
  kMetadata = 1,
  kMemLoad = 2,
  kMemStore = 3,
  kComp = 4,
  kCommSend = 5,
  kCommRecv = 6,
  kCommColl = 7,
  kStorage = 8,
  kBatch = 9,
  kCheckpoint = 10,
};

/// The value of a collective node's `comm_type` attribute.
enum class CollectiveType : int {
  kAllReduce = 0,
  kReduce = 1,
  kAllGather = 2,
  kGather = 3,
  kScatter = 4,
  kBroadcast = 5,
  kAllToAll = 6,
  kReduceScatter = 7,
  kReduceScatterBlock = 8,
  kBarrier = 9,
};

/// "COMP_NODE", ...; "type 42" for a number the schema does not define.
std::string node_type_name(int type);
/// "ALL_REDUCE", ...; "comm_type 42" for a number the schema does not define.
std::string collective_type_name(int64_t type);

/// A typed attribute. The schema's many integer encodings (int32, sint64,
/// fixed32, ...) read as int64_t when signed and uint64_t when unsigned,
/// float as double, bytes as std::string; a file written here uses int64,
/// uint64, double, bool, string and their lists.
struct Attribute {
  using Value = std::variant<int64_t, uint64_t, double, bool, std::string, std::vector<int64_t>, std::vector<uint64_t>,
                             std::vector<double>, std::vector<bool>, std::vector<std::string>>;
  std::string name;
  Value value;
  bool operator==(const Attribute&) const = default;
};

/// An operator's inputs or outputs as text, as the PyTorch converter writes
/// them (values, shapes, types); kept so that a file reads and writes back
/// unchanged, not mapped to the plan.
struct IoInfo {
  std::string values;
  std::string shapes;
  std::string types;
  bool empty() const { return values.empty() && shapes.empty() && types.empty(); }
  bool operator==(const IoInfo&) const = default;
};

/// One node of a rank's execution graph. `type` is the wire number (see
/// NodeType), kept as read so that an unknown number can be reported.
struct Node {
  uint64_t id = 0;
  std::string name;
  int type = 0;
  std::vector<uint64_t> ctrl_deps;
  std::vector<uint64_t> data_deps;
  uint64_t start_time_micros = 0;
  uint64_t duration_micros = 0;
  IoInfo inputs;
  IoInfo outputs;
  std::vector<Attribute> attrs;
  bool operator==(const Node&) const = default;

  /// The attribute `name`, or nullptr.
  const Attribute* attr(std::string_view name) const;
};

struct GlobalMetadata {
  std::string version;
  std::vector<Attribute> attrs;
  bool operator==(const GlobalMetadata&) const = default;
  const Attribute* attr(std::string_view name) const;
};

/// One .et file: the execution graph of one rank.
struct EtFile {
  GlobalMetadata metadata;
  std::vector<Node> nodes;  // in file order
  bool operator==(const EtFile&) const = default;
};

/// Parses the bytes of a .et file: a varint length, then that many bytes of
/// GlobalMetadata; then, until the end, a varint length and a Node, each.
/// `name` prefixes every error, which is one line naming the message and
/// byte offset: a length prefix or message that runs past the end
/// ("truncated"), a length over 2 GiB, bytes that are not the message, an
/// empty file. Never crashes on any input.
StatusOr<EtFile> parse_et(std::string_view bytes, const std::string& name);

/// Reads and parses a file (NotFound when it does not exist).
StatusOr<EtFile> read_et(const std::string& path);

/// The bytes of `file` in the framing parse_et reads.
std::string serialize_et(const EtFile& file);

/// Writes `file` to `path` atomically (a temporary file, then a rename).
Status write_et(const std::string& path, const EtFile& file);

/// An attribute's value as an integer: any integer type, or a bool (0/1).
/// InvalidArgument, naming `where`, the attribute and its value, for any
/// other type or an unsigned value over INT64_MAX.
StatusOr<int64_t> attr_int(const Attribute& a, const std::string& where);
StatusOr<bool> attr_bool(const Attribute& a, const std::string& where);
StatusOr<std::string> attr_string(const Attribute& a, const std::string& where);
/// Any integer list (or a single integer, as a list of one).
StatusOr<std::vector<int64_t>> attr_int_list(const Attribute& a, const std::string& where);
StatusOr<std::vector<std::string>> attr_string_list(const Attribute& a, const std::string& where);

/// The value as text for error messages: `5`, `true`, `'abc'`, `[1, 2]`.
std::string attr_value_text(const Attribute::Value& v);

}  // namespace clustertwin::traces::chakra
