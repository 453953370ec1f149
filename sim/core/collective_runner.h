#pragma once

#include <string_view>

#include "sim/core/collective_schedule.h"

namespace clustertwin::sim {

class Platform;

/// How closely the twin follows a collective.
///
///   step  every message of the algorithm, round after round (exact; for small worker counts)
///   flow  one set of aggregate flows per phase: messages of all rounds summed per pair, and
///         per node pair (through the node endpoints) or per device (into the node) wherever a
///         pair of nodes or a device would carry several messages; the rounds' latencies are
///         added back. At 1,536 workers a collective is then thousands of flows, not millions.
enum class Fidelity { kStep, kFlow };

std::string_view fidelity_name(Fidelity fidelity);

/// Runs `schedule` from the calling SimGrid actor and returns when its last
/// message has arrived. `alone`: nothing else moves on the fabric until it
/// returns (exclusive_network, sim/core/collective_shortcut.h); then at step
/// fidelity a phase's rounds after the first take the first one's time
/// instead of being sent (each round starts on an idle fabric and sends the
/// same messages, so each takes the same time).
void run_collective(Platform& platform, const CollectiveSchedule& schedule, Fidelity fidelity, bool alone = false);

}  // namespace clustertwin::sim
