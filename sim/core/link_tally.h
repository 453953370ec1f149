#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace simgrid::s4u {
class Host;
class Link;
}  // namespace simgrid::s4u

namespace clustertwin::sim {

/// Bytes a run's network flows put on each link, counted from the flows'
/// routes as they are sent (collective_runner.cpp). A count, not a sample:
/// the bytes a link carries do not depend on when they cross it, so the
/// tally is exact and deterministic whatever the contention. A job mix
/// keeps one tally per job (Platform::set_link_tally on the job's view), so
/// that a link's bytes split by job say which jobs share it.
class LinkTally {
 public:
  /// Counts `bytes` on every link of the route from `from` to `to` (routes cached).
  void add(simgrid::s4u::Host* from, simgrid::s4u::Host* to, double bytes);

  struct Entry {
    std::string link;      // the SimGrid link's name
    double bandwidth = 0;  // bytes/s
    double bytes = 0;      // carried over the run
  };
  /// Every link that carried bytes, by name.
  std::vector<Entry> entries() const;

 private:
  std::map<std::pair<simgrid::s4u::Host*, simgrid::s4u::Host*>, std::vector<simgrid::s4u::Link*>> routes_;
  std::map<simgrid::s4u::Link*, double> bytes_;
};

}  // namespace clustertwin::sim
