#include "models/plan/plan.h"

#include <algorithm>
#include <array>
#include <utility>

#include "common/check.h"

namespace clustertwin::models {
namespace {

// One table per enum, so that a name and its parser can never disagree.
constexpr std::array<std::pair<TaskKind, std::string_view>, 5> kTaskKindNames = {{
    {TaskKind::kCompute, "compute"},
    {TaskKind::kCollective, "collective"},
    {TaskKind::kCopy, "copy"},
    {TaskKind::kLookup, "lookup"},
    {TaskKind::kHost, "host"},
}};

constexpr std::array<std::pair<CollectiveOp, std::string_view>, 7> kCollectiveOpNames = {{
    {CollectiveOp::kAllReduce, "allreduce"},
    {CollectiveOp::kAllToAll, "alltoall"},
    {CollectiveOp::kAllGather, "allgather"},
    {CollectiveOp::kReduceScatter, "reducescatter"},
    {CollectiveOp::kBroadcast, "broadcast"},
    {CollectiveOp::kSend, "send"},
    {CollectiveOp::kRecv, "recv"},
}};

constexpr std::array<std::pair<Algorithm, std::string_view>, 6> kAlgorithmNames = {{
    {Algorithm::kAuto, "auto"},
    {Algorithm::kRing, "ring"},
    {Algorithm::kTree, "tree"},
    {Algorithm::kHalvingDoubling, "halving_doubling"},
    {Algorithm::kHierarchical, "hierarchical"},
    {Algorithm::kDirect, "direct"},
}};

template <class Enum, size_t N>
std::string_view name_of(const std::array<std::pair<Enum, std::string_view>, N>& table, Enum value) {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  CT_CHECK(false) << "enum value " << static_cast<int>(value) << " has no name";
  return {};
}

template <class Enum, size_t N>
std::optional<Enum> value_of(const std::array<std::pair<Enum, std::string_view>, N>& table, std::string_view name) {
  for (const auto& [v, n] : table) {
    if (n == name) return v;
  }
  return std::nullopt;
}

}  // namespace

std::string_view task_kind_name(TaskKind kind) {
  return name_of(kTaskKindNames, kind);
}
std::optional<TaskKind> task_kind_from_name(std::string_view name) {
  return value_of(kTaskKindNames, name);
}
std::string_view collective_op_name(CollectiveOp op) {
  return name_of(kCollectiveOpNames, op);
}
std::optional<CollectiveOp> collective_op_from_name(std::string_view name) {
  return value_of(kCollectiveOpNames, name);
}
std::string_view algorithm_name(Algorithm algorithm) {
  return name_of(kAlgorithmNames, algorithm);
}
std::optional<Algorithm> algorithm_from_name(std::string_view name) {
  return value_of(kAlgorithmNames, name);
}

bool runs_on(const Task& task, int rank, int world_size) {
  if (task.ranks.empty()) return true;
  return std::any_of(task.ranks.begin(), task.ranks.end(), [&](const RankRange& range) {
    const int end = range.end == -1 ? world_size : range.end;
    return range.begin <= rank && rank < end;
  });
}

namespace {

// A stride group's first member and the end of the ranks it runs in: [first, end) every spec.size ranks.
std::pair<int, int> stride_extent(const GroupSpec& spec, int rank, int world_size) {
  const int base = spec.span > 0 ? rank / spec.span * spec.span : 0;
  const int end = spec.span > 0 ? std::min(base + spec.span, world_size) : world_size;
  return {base + (rank - base) % spec.size, end};
}

}  // namespace

std::vector<int> group_members(const GroupSpec& spec, int rank, int world_size, int devices_per_node) {
  CT_CHECK(0 <= rank && rank < world_size) << "rank " << rank << " outside a world of " << world_size;
  // Every kind below is "the block containing rank" except stride; a block
  // is clamped to the world so that a world smaller than a node is one node.
  int block = 0;
  switch (spec.kind) {
    case GroupSpec::Kind::kWorld:
      block = world_size;
      break;
    case GroupSpec::Kind::kNode:
      CT_CHECK(devices_per_node >= 1) << "devices_per_node " << devices_per_node;
      block = devices_per_node;
      break;
    case GroupSpec::Kind::kBlock:
      CT_CHECK(spec.size >= 1) << "block size " << spec.size;
      block = spec.size;
      break;
    case GroupSpec::Kind::kStride: {
      CT_CHECK(spec.size >= 1) << "stride size " << spec.size;
      const auto [first, end] = stride_extent(spec, rank, world_size);
      std::vector<int> members;
      for (int r = first; r < end; r += spec.size)
        members.push_back(r);
      return members;
    }
  }
  const int first = rank / block * block;
  const int last = std::min(first + block, world_size);
  std::vector<int> members;
  members.reserve(last - first);
  for (int r = first; r < last; ++r)
    members.push_back(r);
  return members;
}

namespace {

// The block of ranks [first, last) that group_members lists for every kind but stride.
std::pair<int, int> block_of(const GroupSpec& spec, int rank, int world_size, int devices_per_node) {
  const int block = spec.kind == GroupSpec::Kind::kWorld  ? world_size
                    : spec.kind == GroupSpec::Kind::kNode ? devices_per_node
                                                          : spec.size;
  CT_CHECK(block >= 1) << "group of " << block << " ranks";
  const int first = rank / block * block;
  return {first, std::min(first + block, world_size)};
}

}  // namespace

int group_first(const GroupSpec& spec, int rank, int world_size, int devices_per_node) {
  CT_CHECK(0 <= rank && rank < world_size) << "rank " << rank << " outside a world of " << world_size;
  if (spec.kind == GroupSpec::Kind::kStride) return stride_extent(spec, rank, world_size).first;
  return block_of(spec, rank, world_size, devices_per_node).first;
}

int group_size(const GroupSpec& spec, int rank, int world_size, int devices_per_node) {
  CT_CHECK(0 <= rank && rank < world_size) << "rank " << rank << " outside a world of " << world_size;
  if (spec.kind == GroupSpec::Kind::kStride) {
    CT_CHECK(spec.size >= 1) << "stride size " << spec.size;
    const auto [first, end] = stride_extent(spec, rank, world_size);
    return (end - first + spec.size - 1) / spec.size;
  }
  const auto [first, last] = block_of(spec, rank, world_size, devices_per_node);
  return last - first;
}

}  // namespace clustertwin::models
