#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "models/plan/plan.h"

namespace clustertwin::sim {

struct SimOptions;

/// Whether no two network transfers of a run can ever be in flight together,
/// so that every collective moved over the network has the fabric to itself
/// (SimOptions::collective_shortcut). Provably so when every collective the
/// network moves (`seconds` -1, price_plan) is a group collective over the
/// whole world on one and the same stream: rank 0 is a member of each and
/// runs them one after another, and none starts before all its members,
/// rank 0 among them, have arrived; so each starts after the one before has
/// delivered its last byte. Copies cross only a device's host link, which no
/// collective's route uses. Not so (false) with send/recv, a group smaller
/// than the world (blocks or strides of one job may run side by side), or
/// network collectives on two streams; a job mix shares its fabric with other
/// jobs and turns the shortcut off itself.
bool exclusive_network(const models::Plan& plan, const SimOptions& options, int devices_per_node,
                       const std::vector<std::vector<double>>& seconds);

/// The network time of collectives that ran alone on the fabric, so that a
/// run prices each distinct one once. On an idle fabric a collective's flows
/// see the same links with the same loads every time it runs, so its time is
/// the same each time (SimGrid's sharing is deterministic): the first run is
/// simulated as flows, the next ones take its time. Only valid where
/// exclusive_network holds; the fidelity and the symmetric stride must not
/// change within one table (they are fixed per run).
class CollectivePrices {
 public:
  /// What decides a collective's flows once the run's platform, fidelity and
  /// stride are fixed: the collective (op, group, algorithm, root, per-member
  /// sizes, as the network carries them), its bytes and its first member.
  using Key = std::tuple<int, int, int, int, int, int64_t, std::vector<int64_t>, int>;
  static Key key(const models::Collective& effective, int64_t bytes, int first_member);

  /// The seconds a collective with `key` took alone, if one ran.
  std::optional<double> find(const Key& key) const;
  void record(const Key& key, double seconds) { seconds_.emplace(key, seconds); }

 private:
  std::map<Key, double> seconds_;
};

}  // namespace clustertwin::sim
