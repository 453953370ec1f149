#include "sim/core/collective_schedule.h"

#include <map>

namespace clustertwin::sim {
namespace {

using models::Algorithm;
using models::CollectiveOp;

bool is_power_of_two(size_t n) {
  return n > 0 && (n & (n - 1)) == 0;
}

int ceil_log2(size_t n) {
  int levels = 0;
  while ((size_t{1} << levels) < n)
    ++levels;
  return levels;
}

// A phase of `rounds` identical rounds in which group index i sends `bytes`
// to index (i + 1) mod n.
Phase ring_phase(const std::vector<int>& members, int rounds, double bytes) {
  const size_t n = members.size();
  Phase phase;
  phase.repeats = rounds;
  for (size_t i = 0; i < n; ++i)
    phase.round.messages.push_back({members[i], members[(i + 1) % n], bytes});
  return phase;
}

// A phase of a single round.
Phase once(Round round) {
  Phase phase;
  phase.round = std::move(round);
  return phase;
}

// One round in which every member sends bytes_to(j) to every other member j.
Phase all_pairs_phase(const std::vector<int>& members, const std::function<double(size_t)>& bytes_to) {
  Exchange x;
  x.members = members;
  for (size_t j = 0; j < members.size(); ++j)
    x.bytes_to.push_back(bytes_to(j));
  Round round;
  round.exchanges.push_back(std::move(x));
  return once(std::move(round));
}

// Each (i, i XOR distance) pair exchanges `bytes`, one round per call.
Phase exchange_phase(const std::vector<int>& members, size_t distance, double bytes) {
  Round round;
  for (size_t i = 0; i < members.size(); ++i)
    round.messages.push_back({members[i], members[i ^ distance], bytes});
  return once(std::move(round));
}

// Binomial-tree broadcast from group index `root`, one phase per level.
void append_binomial_broadcast(const std::vector<int>& members, size_t root, double bytes, CollectiveSchedule* s) {
  const size_t n = members.size();
  const int levels = ceil_log2(n);
  for (int k = 0; k < levels; ++k) {
    const size_t step = size_t{1} << k;
    Round round;
    for (size_t v = 0; v < step && v + step < n; ++v) {
      round.messages.push_back({members[(v + root) % n], members[(v + step + root) % n], bytes});
    }
    s->phases.push_back(once(std::move(round)));
  }
}

// Binomial-tree reduce to group index 0, one phase per level.
void append_binomial_reduce(const std::vector<int>& members, double bytes, CollectiveSchedule* s) {
  const size_t n = members.size();
  const int levels = ceil_log2(n);
  for (int k = 0; k < levels; ++k) {
    const size_t step = size_t{1} << k;
    Round round;
    for (size_t i = step; i < n; i += 2 * step)
      round.messages.push_back({members[i], members[i - step], bytes});
    s->phases.push_back(once(std::move(round)));
  }
}

// Members split by node, in member order. Empty when nodes hold different
// numbers of members (hierarchical algorithms then do not apply).
std::vector<std::vector<int>> by_node(const std::vector<int>& members, const std::function<int(int)>& node_of) {
  std::map<int, std::vector<int>> nodes;
  for (int r : members)
    nodes[node_of(r)].push_back(r);
  std::vector<std::vector<int>> out;
  for (auto& [node, ranks] : nodes)
    out.push_back(std::move(ranks));
  for (const auto& ranks : out) {
    if (ranks.size() != out.front().size()) return {};
  }
  return out;
}

std::string algorithm_list(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return "ring, tree, halving_doubling, hierarchical, direct";
    case CollectiveOp::kAllToAll:
      return "direct, hierarchical";
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
      return "ring, halving_doubling, direct";
    case CollectiveOp::kBroadcast:
      return "tree, direct";
    case CollectiveOp::kSend:
    case CollectiveOp::kRecv:
      return "direct";
  }
  return "";
}

// One collective's schedule: the group, the size and the algorithm, and per
// operation the phases of each algorithm that applies to it.
class ScheduleBuilder {
 public:
  ScheduleBuilder(const models::Collective& c, int64_t bytes, const std::vector<int>& members,
                  const std::function<int(int)>& node_of, const std::string& task_name)
      : c_(c),
        algorithm_(resolve_algorithm(c.op, c.algorithm)),
        members_(members),
        node_of_(node_of),
        task_name_(task_name),
        n_(members.size()),
        bytes_(static_cast<double>(bytes)),
        nd_(static_cast<double>(n_)) {}

  StatusOr<CollectiveSchedule> build() {
    Status status = add_phases();
    if (!status.is_ok()) return status;
    return std::move(s_);
  }

 private:
  Status add_phases() {
    if (c_.op == CollectiveOp::kSend || c_.op == CollectiveOp::kRecv) return send_recv();
    if (n_ <= 1) return Status::ok();  // a group of one moves nothing
    switch (c_.op) {
      case CollectiveOp::kAllReduce:
        return all_reduce();
      case CollectiveOp::kAllToAll:
        return all_to_all();
      case CollectiveOp::kAllGather:
      case CollectiveOp::kReduceScatter:
        return all_gather_or_reduce_scatter();
      case CollectiveOp::kBroadcast:
        return broadcast();
      default:
        break;
    }
    return not_applicable("");
  }

  Status not_applicable(const std::string& why) const {
    return Status::invalid_argument("task '" + task_name_ + "': algorithm '" +
                                    std::string(models::algorithm_name(algorithm_)) + "' does not apply to " +
                                    std::string(models::collective_op_name(c_.op)) + (why.empty() ? "" : " " + why) +
                                    " (allowed: " + algorithm_list(c_.op) + ")");
  }

  Status not_a_power_of_two() const {
    return not_applicable("on a group of " + std::to_string(n_) + " (not a power of two)");
  }

  Status send_recv() {
    if (algorithm_ != Algorithm::kDirect) return not_applicable("");
    if (n_ != 2) return Status::internal("task '" + task_name_ + "': send/recv needs exactly a sender and a receiver");
    Round round;
    round.messages.push_back(Message{members_[0], members_[1], bytes_});
    s_.phases.push_back(once(std::move(round)));
    return Status::ok();
  }

  Status all_reduce() {
    switch (algorithm_) {
      case Algorithm::kRing:
        s_.phases.push_back(ring_phase(members_, 2 * static_cast<int>(n_ - 1), bytes_ / nd_));
        return Status::ok();
      case Algorithm::kTree:
        append_binomial_reduce(members_, bytes_, &s_);
        append_binomial_broadcast(members_, 0, bytes_, &s_);
        return Status::ok();
      case Algorithm::kHalvingDoubling: {
        if (!is_power_of_two(n_)) return not_a_power_of_two();
        const int levels = ceil_log2(n_);
        for (int k = 0; k < levels; ++k)
          s_.phases.push_back(exchange_phase(members_, n_ >> (k + 1), bytes_ / (2 << k)));
        for (int k = levels - 1; k >= 0; --k)
          s_.phases.push_back(exchange_phase(members_, n_ >> (k + 1), bytes_ / (2 << k)));
        return Status::ok();
      }
      case Algorithm::kHierarchical:
        return hierarchical_all_reduce();
      case Algorithm::kDirect:
        s_.phases.push_back(all_pairs_phase(members_, [&](size_t) { return bytes_ / nd_; }));
        s_.phases.push_back(all_pairs_phase(members_, [&](size_t) { return bytes_ / nd_; }));
        return Status::ok();
      default:
        return not_applicable("");
    }
  }

  Status hierarchical_all_reduce() {
    const auto nodes = by_node(members_, node_of_);
    if (nodes.empty()) return not_applicable("on nodes holding different numbers of group members");
    const size_t m = nodes.front().size(), k = nodes.size();
    if (m == 1 || k == 1) {
      s_.phases.push_back(ring_phase(members_, 2 * static_cast<int>(n_ - 1), bytes_ / nd_));
      return Status::ok();
    }
    // Intra-node reduce-scatter, inter-node all-reduce of each 1/m shard
    // among the ranks with the same local index, intra-node all-gather.
    auto intra = [&](int rounds) {
      Phase phase;
      phase.repeats = rounds;
      for (const auto& node : nodes) {
        for (size_t i = 0; i < m; ++i) {
          phase.round.messages.push_back({node[i], node[(i + 1) % m], bytes_ / static_cast<double>(m)});
        }
      }
      return phase;
    };
    s_.phases.push_back(intra(static_cast<int>(m - 1)));
    Phase across;
    across.repeats = static_cast<int>(2 * (k - 1));
    for (size_t node = 0; node < k; ++node) {
      for (size_t i = 0; i < m; ++i)
        across.round.messages.push_back({nodes[node][i], nodes[(node + 1) % k][i], bytes_ / nd_});
    }
    s_.phases.push_back(std::move(across));
    s_.phases.push_back(intra(static_cast<int>(m - 1)));
    return Status::ok();
  }

  Status all_to_all() {
    if (!c_.split_bytes.empty() && c_.split_bytes.size() != n_) {
      return Status::invalid_argument("task '" + task_name_ + "': split_bytes has " +
                                      std::to_string(c_.split_bytes.size()) + " entries for a group of " +
                                      std::to_string(n_));
    }
    auto to = [&](size_t j) { return c_.split_bytes.empty() ? bytes_ / nd_ : static_cast<double>(c_.split_bytes[j]); };
    if (algorithm_ == Algorithm::kDirect) {
      s_.phases.push_back(all_pairs_phase(members_, to));
      return Status::ok();
    }
    if (algorithm_ != Algorithm::kHierarchical) return not_applicable("");
    if (!c_.split_bytes.empty()) return not_applicable("with split_bytes");
    const auto nodes = by_node(members_, node_of_);
    if (nodes.empty()) return not_applicable("on nodes holding different numbers of group members");
    const size_t m = nodes.front().size(), k = nodes.size();
    if (m == 1 || k == 1) {
      s_.phases.push_back(all_pairs_phase(members_, to));
      return Status::ok();
    }
    // Local index j gathers, inside the node, everything bound for local
    // index j of every node, then sends it to local index j of each other
    // node (one "rail" per local index).
    Round gather;
    for (const auto& node : nodes) {
      gather.exchanges.push_back(Exchange{node, std::vector<double>(m, static_cast<double>(k) * bytes_ / nd_)});
    }
    s_.phases.push_back(once(std::move(gather)));
    Round rails;
    for (size_t a = 0; a < k; ++a) {
      for (size_t b = 0; b < k; ++b) {
        if (a == b) continue;
        for (size_t j = 0; j < m; ++j) {
          rails.messages.push_back({nodes[a][j], nodes[b][j], static_cast<double>(m) * bytes_ / nd_});
        }
      }
    }
    s_.phases.push_back(once(std::move(rails)));
    return Status::ok();
  }

  Status all_gather_or_reduce_scatter() {
    switch (algorithm_) {
      case Algorithm::kRing:
        s_.phases.push_back(ring_phase(members_, static_cast<int>(n_ - 1), bytes_ / nd_));
        return Status::ok();
      case Algorithm::kDirect:
        s_.phases.push_back(all_pairs_phase(members_, [&](size_t) { return bytes_ / nd_; }));
        return Status::ok();
      case Algorithm::kHalvingDoubling: {
        if (!is_power_of_two(n_)) return not_a_power_of_two();
        const int levels = ceil_log2(n_);
        for (int k = 0; k < levels; ++k) {
          if (c_.op == CollectiveOp::kAllGather) {
            s_.phases.push_back(exchange_phase(members_, size_t{1} << k, bytes_ / nd_ * static_cast<double>(1 << k)));
          } else {
            s_.phases.push_back(exchange_phase(members_, n_ >> (k + 1), bytes_ / (2 << k)));
          }
        }
        return Status::ok();
      }
      default:
        return not_applicable("");
    }
  }

  Status broadcast() {
    if (c_.root < 0 || static_cast<size_t>(c_.root) >= n_) {
      return Status::invalid_argument("task '" + task_name_ + "': broadcast root " + std::to_string(c_.root) +
                                      " is not in a group of " + std::to_string(n_));
    }
    if (algorithm_ == Algorithm::kTree) {
      append_binomial_broadcast(members_, static_cast<size_t>(c_.root), bytes_, &s_);
      return Status::ok();
    }
    if (algorithm_ == Algorithm::kDirect) {
      Round round;
      for (size_t j = 0; j < n_; ++j) {
        if (j != static_cast<size_t>(c_.root)) round.messages.push_back({members_[c_.root], members_[j], bytes_});
      }
      s_.phases.push_back(once(std::move(round)));
      return Status::ok();
    }
    return not_applicable("");
  }

  const models::Collective& c_;
  const Algorithm algorithm_;
  const std::vector<int>& members_;
  const std::function<int(int)>& node_of_;
  const std::string& task_name_;
  const size_t n_;
  const double bytes_;  // the size, nccl-tests' convention
  const double nd_;     // the group's size, as a divisor
  CollectiveSchedule s_;
};

}  // namespace

double CollectiveSchedule::total_bytes() const {
  double total = 0;
  for (const Phase& p : phases)
    p.round.for_each_message([&](const Message& m) { total += m.bytes * p.repeats; });
  return total;
}

size_t CollectiveSchedule::message_count() const {
  size_t count = 0;
  for (const Phase& p : phases)
    count += p.round.message_count() * static_cast<size_t>(p.repeats);
  return count;
}

Algorithm resolve_algorithm(CollectiveOp op, Algorithm algorithm) {
  if (algorithm != Algorithm::kAuto) return algorithm;
  switch (op) {
    case CollectiveOp::kAllReduce:
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
      return Algorithm::kRing;
    case CollectiveOp::kBroadcast:
      return Algorithm::kTree;
    case CollectiveOp::kAllToAll:
    case CollectiveOp::kSend:
    case CollectiveOp::kRecv:
      return Algorithm::kDirect;
  }
  return Algorithm::kDirect;
}

StatusOr<CollectiveSchedule> build_schedule(const models::Collective& c, int64_t bytes_in,
                                            const std::vector<int>& members, const std::function<int(int)>& node_of,
                                            const std::string& task_name) {
  return ScheduleBuilder(c, bytes_in, members, node_of, task_name).build();
}

}  // namespace clustertwin::sim
