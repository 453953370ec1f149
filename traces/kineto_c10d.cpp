// What c10d's args on a Kineto event say (kineto_reader.h): a collective's
// group as start + i x stride, a send's or recv's global peer, a message's
// bytes, and the collective a host operator runs.
#include <string>

#include "traces/kineto_import_internal.h"
#include "traces/kineto_names.h"

namespace clustertwin::traces::detail {

GroupArgs GroupArgs::of(const KinetoEvent& e) {
  return {e.rank_arg, e.dst_rank, e.src_rank, e.global_rank_start, e.global_rank_stride, e.group_size, e.group_ranks};
}

std::optional<std::pair<int64_t, int64_t>> GroupArgs::layout() const {
  if (ranks.size() >= 2) {
    const int64_t stride = ranks[1] - ranks[0];
    for (size_t i = 1; i < ranks.size(); ++i) {
      if (stride < 1 || ranks[i] - ranks[i - 1] != stride) return std::nullopt;
    }
    return std::pair(ranks[0], stride);
  }
  if (start && stride) return std::pair(*start, *stride);
  return std::nullopt;
}

std::optional<int64_t> GroupArgs::peer(const std::string& collective, int64_t world_size) const {
  if (collective == "send" && dst) return dst;
  if (collective == "recv" && src) return src;
  if (!rank) return std::nullopt;
  if (static_cast<size_t>(*rank) < ranks.size()) return ranks[static_cast<size_t>(*rank)];
  if (const auto l = layout()) return l->first + *rank * l->second;
  if (!size || *size == world_size) return rank;
  return std::nullopt;
}

namespace {

// `nelems` elements of `element_bytes` each, when both are known.
std::optional<int64_t> bytes_of(std::optional<int64_t> nelems, std::optional<int64_t> element_bytes) {
  if (!nelems || !element_bytes) return std::nullopt;
  return *nelems * *element_bytes;
}

}  // namespace

std::optional<int64_t> first_input_bytes(const KinetoEvent& e) {
  return bytes_of(e.first_input_nelems, kineto::cpp_type_bytes(e.first_input_type));
}

std::optional<int64_t> message_bytes(const KinetoEvent& e) {
  return bytes_of(e.in_nelems, kineto::dtype_bytes(e.dtype));
}

std::optional<CommOperator> comm_operator(const KinetoEvent& e) {
  if (kineto::is_gpu_category(e.cat) || e.ph != "X") return std::nullopt;
  CommOperator op;
  op.ts = e.ts;
  op.dur = e.dur;
  op.group_size = e.group_size;
  op.group = GroupArgs::of(e);
  op.collective = kineto::collective_of_operator(e.name);
  if (!op.collective.empty()) {
    op.bytes = first_input_bytes(e);
    return op;
  }
  if (e.has_collective) {
    op.collective = kineto::normalise_collective(e.collective);
    op.bytes = message_bytes(e);
    return op;
  }
  return std::nullopt;
}

}  // namespace clustertwin::traces::detail
