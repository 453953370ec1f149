// The routes of TwinZone (twin_zone.h), computed from the platform's Routing
// each time a flow starts: within a node, the node's links; between nodes,
// the way to the source's node endpoint, the fabric, and the way from the
// destination's.
#include "sim/core/twin_zone.h"

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/s4u.hpp>

#include "common/check.h"

namespace clustertwin::sim::detail {
namespace {

namespace sg = simgrid::s4u;

}  // namespace

void TwinZone::place(const sg::Host* host, Place place) {
  const size_t id = host->get_netpoint()->id();
  if (places_.size() <= id) places_.resize(id + 1, Place{Place::Role::kCores, -1, -1});
  places_[id] = place;
}

void TwinZone::get_local_route(const NetPoint* src, const NetPoint* dst, simgrid::kernel::routing::Route* into,
                               double* latency) {
  auto push = [&](sg::Link* link) { into->link_list_.push_back(link->get_impl()); };
  auto add_latency = [&](sg::Link* link) {
    if (latency != nullptr) *latency += link->get_latency();
  };
  if (src == dst) {
    push(loopback_);
    add_latency(loopback_);
    return;
  }
  const Place& from = place_of(src);
  const Place& to = place_of(dst);
  using Role = Place::Role;
  if (from.node == to.node && from.role != Role::kGroup && to.role != Role::kGroup) {
    const bool found = routing_.visit_local(from, to, [&](sg::Link* link) {
      push(link);
      add_latency(link);
    });
    CT_CHECK(found) << "no route from " << src->get_cname() << " to " << dst->get_cname();
    return;
  }
  // Between nodes: to the source's endpoint, across the fabric, from the
  // destination's endpoint.
  CT_CHECK(from.role != Role::kGroup) << "no route from " << src->get_cname();
  const Place endpoint_from{Role::kEndpoint, from.node, 0}, endpoint_to{Role::kEndpoint, to.node, 0};
  bool found = true;
  std::vector<sg::Link*> head, fabric, tail;
  if (from.role != Role::kEndpoint)
    found = routing_.visit_local(from, endpoint_from, [&](sg::Link* link) { head.push_back(link); });
  routing_.visit_fabric(from.node, to.node, to.role != Role::kGroup, [&](sg::Link* link) { fabric.push_back(link); });
  if (found && to.role != Role::kEndpoint && to.role != Role::kGroup)
    found = routing_.visit_local(endpoint_to, to, [&](sg::Link* link) { tail.push_back(link); });
  CT_CHECK(found) << "no route from " << src->get_cname() << " to " << dst->get_cname();
  for (const auto* part : {&head, &fabric, &tail}) {
    for (sg::Link* link : *part)
      push(link);
  }
  // SimGrid's recursive routing adds the latency of the route between the zones
  // first.
  for (const auto* part : {&fabric, &head, &tail}) {
    for (sg::Link* link : *part)
      add_latency(link);
  }
}

const Place& TwinZone::place_of(const NetPoint* point) const {
  CT_CHECK(point->id() < places_.size() && places_[point->id()].node >= 0)
      << point->get_cname() << " is not a host of zone " << get_cname();
  return places_[point->id()];
}

}  // namespace clustertwin::sim::detail
