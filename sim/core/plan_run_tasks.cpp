// What a plan task other than a collective does in the twin: compute,
// lookups and host work run as execs on the rank's device or host side (or
// its node's shared cores); a copy crosses the host link, or takes its
// measured time where the profile prices it.
#include <simgrid/s4u.hpp>

#include "sim/core/plan_run_impl.h"
#include "sim/core/platform.h"

namespace clustertwin::sim {
namespace {

namespace sg = simgrid::s4u;
using models::Task;
using models::TaskKind;

}  // namespace

void PlanRunImpl::execute(int rank, int step, const Task& t) {
  switch (t.kind) {
    case TaskKind::kCompute:
    case TaskKind::kLookup:
    case TaskKind::kHost: {
      const double amount = platform_.work_units(rank, seconds_[t.id][rank]);
      if (amount <= 0) return;
      sg::Host* host = platform_.core_pool(rank);
      if (host == nullptr && t.kind != TaskKind::kCompute) host = platform_.host_pool(rank);
      if (host == nullptr) host = t.kind == TaskKind::kCompute ? platform_.device(rank) : platform_.cpu(rank);
      sg::this_actor::exec_init(amount)->set_host(host)->wait();
      return;
    }
    case TaskKind::kCopy:
      if (seconds_[t.id][rank] >= 0 && on_cores_[t.id] && platform_.core_pool(rank) != nullptr) {
        // A memcpy on shared cores.
        if (seconds_[t.id][rank] > 0)
          sg::this_actor::exec_init(platform_.work_units(rank, seconds_[t.id][rank]))
              ->set_host(platform_.core_pool(rank))
              ->wait();
      } else if (seconds_[t.id][rank] >= 0) {
        // A copy with a cost in the profile (a measured DMA): its own engine, not the host link.
        if (seconds_[t.id][rank] > 0)
          sg::this_actor::sleep_for(seconds_[t.id][rank] * platform_.profile().slowdown_of(rank));
      } else if (platform_.cpu(rank) == platform_.device(rank)) {
        // A platform file has no host side: the profile's host link prices the copy.
        const cluster::LinkSpec& link = platform_.profile().host_link;
        sg::this_actor::sleep_for(link.latency +
                                  (link.bandwidth > 0 ? static_cast<double>(t.bytes) / link.bandwidth : 0));
      } else {
        sg::Comm::sendto(platform_.cpu(rank), platform_.device(rank), static_cast<uint64_t>(t.bytes));
      }
      return;
    case TaskKind::kCollective:
      collective(rank, step, t);
      return;
  }
}

}  // namespace clustertwin::sim
