// Reading and writing .et files: the generated protobuf classes stay in
// this file; the rest of clustertwin sees chakra_trace.h's plain structs.

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/stubs/logging.h>

#include <cstdint>
#include <limits>

#include "common/file_io.h"
#include "traces/chakra/chakra_et.pb.h"
#include "traces/chakra/chakra_trace.h"

namespace clustertwin::traces::chakra {
namespace {

namespace pb = ::clustertwin::chakra_et;

constexpr const char* kNodeTypeNames[] = {"INVALID_NODE", "METADATA_NODE",  "MEM_LOAD_NODE",  "MEM_STORE_NODE",
                                          "COMP_NODE",    "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE",
                                          "STORAGE_NODE", "BATCH_NODE",     "CHECKPOINT_NODE"};
constexpr const char* kCollectiveNames[] = {
    "ALL_REDUCE", "REDUCE",         "ALL_GATHER",           "GATHER", "SCATTER", "BROADCAST",
    "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER"};

template <class List>
std::vector<int64_t> signed_values(const List& list) {
  return std::vector<int64_t>(list.values().begin(), list.values().end());
}
template <class List>
std::vector<uint64_t> unsigned_values(const List& list) {
  return std::vector<uint64_t>(list.values().begin(), list.values().end());
}

// A scalar value case (or none set) of `a` into `out`; false for any other case.
bool read_scalar(const pb::AttributeProto& a, Attribute::Value* out) {
  using P = pb::AttributeProto;
  switch (a.value_case()) {
    case P::kDoubleVal:
      *out = a.double_val();
      return true;
    case P::kFloatVal:
      *out = static_cast<double>(a.float_val());
      return true;
    case P::kInt32Val:
      *out = int64_t{a.int32_val()};
      return true;
    case P::kInt64Val:
      *out = int64_t{a.int64_val()};
      return true;
    case P::kSint32Val:
      *out = int64_t{a.sint32_val()};
      return true;
    case P::kSint64Val:
      *out = int64_t{a.sint64_val()};
      return true;
    case P::kSfixed32Val:
      *out = int64_t{a.sfixed32_val()};
      return true;
    case P::kSfixed64Val:
      *out = int64_t{a.sfixed64_val()};
      return true;
    case P::kUint32Val:
      *out = uint64_t{a.uint32_val()};
      return true;
    case P::kUint64Val:
      *out = uint64_t{a.uint64_val()};
      return true;
    case P::kFixed32Val:
      *out = uint64_t{a.fixed32_val()};
      return true;
    case P::kFixed64Val:
      *out = uint64_t{a.fixed64_val()};
      return true;
    case P::kBoolVal:
      *out = a.bool_val();
      return true;
    case P::kStringVal:
      *out = a.string_val();
      return true;
    case P::kBytesVal:
      *out = a.bytes_val();
      return true;
    case P::VALUE_NOT_SET:
      *out = std::string();
      return true;
    default:
      return false;
  }
}

// A list value case of `a` into `out`; false for any other case.
bool read_list(const pb::AttributeProto& a, Attribute::Value* out) {
  using P = pb::AttributeProto;
  switch (a.value_case()) {
    case P::kDoubleList:
      *out = std::vector<double>(a.double_list().values().begin(), a.double_list().values().end());
      return true;
    case P::kFloatList:
      *out = std::vector<double>(a.float_list().values().begin(), a.float_list().values().end());
      return true;
    case P::kInt32List:
      *out = signed_values(a.int32_list());
      return true;
    case P::kInt64List:
      *out = signed_values(a.int64_list());
      return true;
    case P::kSint32List:
      *out = signed_values(a.sint32_list());
      return true;
    case P::kSint64List:
      *out = signed_values(a.sint64_list());
      return true;
    case P::kSfixed32List:
      *out = signed_values(a.sfixed32_list());
      return true;
    case P::kSfixed64List:
      *out = signed_values(a.sfixed64_list());
      return true;
    case P::kUint32List:
      *out = unsigned_values(a.uint32_list());
      return true;
    case P::kUint64List:
      *out = unsigned_values(a.uint64_list());
      return true;
    case P::kFixed32List:
      *out = unsigned_values(a.fixed32_list());
      return true;
    case P::kFixed64List:
      *out = unsigned_values(a.fixed64_list());
      return true;
    case P::kBoolList:
      *out = std::vector<bool>(a.bool_list().values().begin(), a.bool_list().values().end());
      return true;
    case P::kStringList:
      *out = std::vector<std::string>(a.string_list().values().begin(), a.string_list().values().end());
      return true;
    case P::kBytesList:
      *out = std::vector<std::string>(a.bytes_list().values().begin(), a.bytes_list().values().end());
      return true;
    default:
      return false;
  }
}

// A value case the reader does not know (a newer schema): kept as its name only.
Attribute from_proto(const pb::AttributeProto& a) {
  Attribute out;
  out.name = a.name();
  if (!read_scalar(a, &out.value)) read_list(a, &out.value);
  return out;
}

void to_proto(const Attribute& a, pb::AttributeProto* out) {
  out->set_name(a.name);
  std::visit(
      [out](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          out->set_int64_val(v);
        } else if constexpr (std::is_same_v<T, uint64_t>) {
          out->set_uint64_val(v);
        } else if constexpr (std::is_same_v<T, double>) {
          out->set_double_val(v);
        } else if constexpr (std::is_same_v<T, bool>) {
          out->set_bool_val(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          out->set_string_val(v);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          for (int64_t x : v)
            out->mutable_int64_list()->add_values(x);
        } else if constexpr (std::is_same_v<T, std::vector<uint64_t>>) {
          for (uint64_t x : v)
            out->mutable_uint64_list()->add_values(x);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          for (double x : v)
            out->mutable_double_list()->add_values(x);
        } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
          for (bool x : v)
            out->mutable_bool_list()->add_values(x);
        } else {
          for (const std::string& x : v)
            out->mutable_string_list()->add_values(x);
        }
      },
      a.value);
}

// Reads a base-128 varint of at most 5 bytes (a 32-bit length) at `*pos`.
enum class VarintResult { kOk, kTruncated, kTooLong };
VarintResult read_length(std::string_view bytes, size_t* pos, uint64_t* value) {
  *value = 0;
  for (int i = 0; i < 5; ++i) {
    if (*pos >= bytes.size()) return VarintResult::kTruncated;
    const auto byte = static_cast<uint8_t>(bytes[(*pos)++]);
    *value |= uint64_t{byte & 0x7fu} << (7 * i);
    if ((byte & 0x80u) == 0) return VarintResult::kOk;
  }
  return VarintResult::kTooLong;
}

template <class Message>
Status read_message(std::string_view bytes, size_t* pos, const std::string& what, Message* message) {
  const size_t start = *pos;
  const std::string at = what + " at byte " + std::to_string(start);
  uint64_t length = 0;
  switch (read_length(bytes, pos, &length)) {
    case VarintResult::kTruncated:
      return Status::invalid_argument("truncated: the length prefix of " + at + " runs past the end of the file (" +
                                      std::to_string(bytes.size()) + " bytes)");
    case VarintResult::kTooLong:
      return Status::invalid_argument("the length prefix of " + at +
                                      " is longer than 5 bytes: not a Chakra execution trace");
    case VarintResult::kOk:
      break;
  }
  if (length > static_cast<uint64_t>(std::numeric_limits<int>::max())) {
    return Status::invalid_argument("the length prefix of " + at + " says " + std::to_string(length) +
                                    " bytes (over 2 GiB): not a Chakra execution trace");
  }
  if (length > bytes.size() - *pos) {
    return Status::invalid_argument("truncated: " + at + " declares " + std::to_string(length) + " bytes, but " +
                                    std::to_string(bytes.size() - *pos) + " remain");
  }
  // libprotobuf logs what it refuses ("[libprotobuf ERROR ...] String field ... contains invalid UTF-8") besides
  // failing the parse; the failure below is the one line a user sees.
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)quiet;
  if (!message->ParseFromArray(bytes.data() + *pos, static_cast<int>(length))) {
    return Status::invalid_argument(at + " (" + std::to_string(length) + " bytes) does not parse as a Chakra " +
                                    Message::descriptor()->name() + ": not a Chakra execution trace");
  }
  *pos += length;
  return Status::ok();
}

void append_message(const google::protobuf::MessageLite& message, std::string* out) {
  const size_t size = message.ByteSizeLong();
  uint8_t prefix[10];
  const uint8_t* end =
      google::protobuf::io::CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(size), prefix);
  out->append(reinterpret_cast<const char*>(prefix), static_cast<size_t>(end - prefix));
  out->append(message.SerializeAsString());
}

void set_io(const IoInfo& io, pb::IOInfo* out) {
  out->set_values(io.values);
  out->set_shapes(io.shapes);
  out->set_types(io.types);
}

}  // namespace

std::string node_type_name(int type) {
  if (type >= 0 && type < static_cast<int>(std::size(kNodeTypeNames))) return kNodeTypeNames[type];
  return "type " + std::to_string(type);
}

std::string collective_type_name(int64_t type) {
  if (type >= 0 && type < static_cast<int64_t>(std::size(kCollectiveNames))) return kCollectiveNames[type];
  return "comm_type " + std::to_string(type);
}

const Attribute* Node::attr(std::string_view name) const {
  for (const Attribute& a : attrs)
    if (a.name == name) return &a;
  return nullptr;
}

const Attribute* GlobalMetadata::attr(std::string_view name) const {
  for (const Attribute& a : attrs)
    if (a.name == name) return &a;
  return nullptr;
}

StatusOr<EtFile> parse_et(std::string_view bytes, const std::string& name) {
  const auto fail = [&name](const Status& s) { return s.with_context(name); };
  if (bytes.empty()) {
    return Status::invalid_argument(name + ": empty file (a Chakra execution trace starts with its GlobalMetadata)");
  }
  EtFile file;
  size_t pos = 0;
  pb::GlobalMetadata metadata;
  if (Status s = read_message(bytes, &pos, "the GlobalMetadata", &metadata); !s.is_ok()) return fail(s);
  file.metadata.version = metadata.version();
  for (const auto& a : metadata.attr())
    file.metadata.attrs.push_back(from_proto(a));
  pb::Node node;
  while (pos < bytes.size()) {
    const std::string what = "node message " + std::to_string(file.nodes.size() + 1);
    node.Clear();
    if (Status s = read_message(bytes, &pos, what, &node); !s.is_ok()) return fail(s);
    Node& n = file.nodes.emplace_back();
    n.id = node.id();
    n.name = node.name();
    n.type = static_cast<int>(node.type());
    n.ctrl_deps.assign(node.ctrl_deps().begin(), node.ctrl_deps().end());
    n.data_deps.assign(node.data_deps().begin(), node.data_deps().end());
    n.start_time_micros = node.start_time_micros();
    n.duration_micros = node.duration_micros();
    n.inputs = {node.inputs().values(), node.inputs().shapes(), node.inputs().types()};
    n.outputs = {node.outputs().values(), node.outputs().shapes(), node.outputs().types()};
    for (const auto& a : node.attr())
      n.attrs.push_back(from_proto(a));
  }
  return file;
}

StatusOr<EtFile> read_et(const std::string& path) {
  auto bytes = read_file(path);
  if (!bytes.is_ok()) return bytes.status();
  return parse_et(*bytes, path);
}

std::string serialize_et(const EtFile& file) {
  std::string out;
  pb::GlobalMetadata metadata;
  metadata.set_version(file.metadata.version);
  for (const Attribute& a : file.metadata.attrs)
    to_proto(a, metadata.add_attr());
  append_message(metadata, &out);
  pb::Node node;
  for (const Node& n : file.nodes) {
    node.Clear();
    node.set_id(n.id);
    node.set_name(n.name);
    node.set_type(static_cast<pb::NodeType>(n.type));
    for (uint64_t d : n.ctrl_deps)
      node.add_ctrl_deps(d);
    for (uint64_t d : n.data_deps)
      node.add_data_deps(d);
    node.set_start_time_micros(n.start_time_micros);
    node.set_duration_micros(n.duration_micros);
    if (!n.inputs.empty()) set_io(n.inputs, node.mutable_inputs());
    if (!n.outputs.empty()) set_io(n.outputs, node.mutable_outputs());
    for (const Attribute& a : n.attrs)
      to_proto(a, node.add_attr());
    append_message(node, &out);
  }
  return out;
}

Status write_et(const std::string& path, const EtFile& file) {
  return write_file_atomically(path, serialize_et(file));
}

}  // namespace clustertwin::traces::chakra
