// TwinZone, the one SimGrid zone of a platform built with
// Platform::Routes::kComputed (internal to sim/core): it holds every host of
// the cluster and computes each route from the platform's Routing
// (platform_routing.h) when SimGrid asks for it.
#pragma once

#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <string>
#include <vector>

#include "sim/core/platform_routing.h"

namespace simgrid::s4u {
class Host;
}  // namespace simgrid::s4u

namespace clustertwin::sim::detail {

/// The one zone of a platform built with Routes::kComputed: every host of
/// the cluster is its member, and it computes a route from the Routing when
/// SimGrid asks for one (each time a flow starts). A route between nodes is
/// what a zone per node under a root zone with one stored route per node
/// pair gives (Routes::kStored): the host's way to its node endpoint, the
/// fabric, the way from the other endpoint, with the latency summed in the
/// order SimGrid's recursive routing sums it, so that both simulate the
/// same. One zone instead of one per node also keeps the build linear:
/// SimGrid checks each new link's and host's name against every zone, and
/// seals a zone by scanning every host of the platform.
class TwinZone final : public simgrid::kernel::routing::NetZoneImpl {
 public:
  using NetPoint = simgrid::kernel::routing::NetPoint;

  explicit TwinZone(const std::string& name) : NetZoneImpl(name) {}

  // Records where `host`, a host of this zone, sits.
  void place(const simgrid::s4u::Host* host, Place place);
  Routing& routing() { return routing_; }
  // SimGrid's own route from a host to itself (which the twin never asks for:
  // plans have no self-sends).
  void set_loopback(simgrid::s4u::Link* loopback) { loopback_ = loopback; }

  // The links from `src` to `dst` in order, their latency added to `latency`
  // in the order SimGrid's recursive routing adds it.
  void get_local_route(const NetPoint* src, const NetPoint* dst, simgrid::kernel::routing::Route* into,
                       double* latency) override;

 private:
  const Place& place_of(const NetPoint* point) const;

  Routing routing_;
  std::vector<Place> places_;  // [netpoint id]
  simgrid::s4u::Link* loopback_ = nullptr;
};

}  // namespace clustertwin::sim::detail
