#include "sim/core/link_tally.h"

#include <algorithm>
#include <simgrid/s4u.hpp>

namespace clustertwin::sim {

void LinkTally::add(simgrid::s4u::Host* from, simgrid::s4u::Host* to, double bytes) {
  if (from == to || bytes <= 0) return;
  auto it = routes_.find({from, to});
  if (it == routes_.end()) {
    std::vector<simgrid::s4u::Link*> links;
    double latency = 0;
    from->route_to(to, links, &latency);
    it = routes_.emplace(std::make_pair(from, to), std::move(links)).first;
  }
  for (simgrid::s4u::Link* link : it->second)
    bytes_[link] += bytes;
}

std::vector<LinkTally::Entry> LinkTally::entries() const {
  std::vector<Entry> out;
  out.reserve(bytes_.size());
  for (const auto& [link, bytes] : bytes_)
    out.push_back({link->get_name(), link->get_bandwidth(), bytes});
  // By name, not by pointer: the same run lists the same links in the same order.
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.link < b.link; });
  return out;
}

}  // namespace clustertwin::sim
