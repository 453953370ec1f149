// sim/core/link_tally.h: bytes counted on every link of a flow's route,
// summed over flows, listed by link name; nothing for a flow to itself or of
// no bytes.

#include "sim/core/link_tally.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <simgrid/s4u.hpp>
#include <sstream>

#include "sim/core/isolated.h"
#include "sim/core/platform.h"
#include "tests/sim/sim_test_util.h"

namespace clustertwin::sim {
namespace {

namespace sg = simgrid::s4u;

std::vector<std::string> route_names(sg::Host* from, sg::Host* to) {
  std::vector<sg::Link*> links;
  double latency = 0;
  from->route_to(to, links, &latency);
  std::vector<std::string> names;
  for (sg::Link* l : links)
    names.push_back(l->get_name());
  return names;
}

// On 3 nodes of one device on a switch: 1 MB and 0.5 MB from device 0 to 1, 2 MB from 2 to 1, and two
// flows the tally ignores. Each line: a link, the bytes expected on it from the routes, the bytes
// counted, and whether the bandwidth is the link's.
std::string tally_lines() {
  auto out = run_isolated([]() -> StatusOr<std::string> {
    TwinEngine twin;
    auto built = Platform::build(testing::uniform_switch(3, 50e9, 1e-6, 0), 3);
    if (!built.is_ok()) return built.status();
    Platform& p = **built;
    LinkTally tally;
    tally.add(p.device(0), p.device(1), 1e6);
    tally.add(p.device(0), p.device(1), 5e5);
    tally.add(p.device(2), p.device(1), 2e6);
    tally.add(p.device(0), p.device(0), 7e6);  // to itself: no link
    tally.add(p.device(1), p.device(2), 0);    // no bytes
    std::map<std::string, double> want;
    for (const std::string& l : route_names(p.device(0), p.device(1)))
      want[l] += 1.5e6;
    for (const std::string& l : route_names(p.device(2), p.device(1)))
      want[l] += 2e6;
    std::ostringstream lines;
    std::string previous;
    for (const LinkTally::Entry& e : tally.entries()) {
      const bool bandwidth_ok = e.bandwidth == sg::Link::by_name(e.link)->get_bandwidth();
      lines << e.link << " " << want[e.link] << " " << e.bytes << " " << bandwidth_ok
            << (e.link > previous ? "" : " out-of-order") << "\n";
      previous = e.link;
      want.erase(e.link);
    }
    for (const auto& [link, bytes] : want)
      lines << link << " " << bytes << " missing\n";
    return lines.str();
  });
  EXPECT_TRUE(out.is_ok()) << out.status().message();
  return out.is_ok() ? *out : "";
}

TEST(LinkTallyTest, EveryLinkOfEachRouteCarriesItsFlowsBytes) {
  const std::string lines = tally_lines();
  ASSERT_FALSE(lines.empty());
  std::istringstream in(lines);
  std::string link, rest;
  double want = 0, got = 0;
  int bandwidth_ok = 0, shared = 0, count = 0;
  while (in >> link >> want >> got >> bandwidth_ok) {
    std::getline(in, rest);
    EXPECT_EQ(rest, "") << link << " " << rest;  // neither out of order nor missing
    EXPECT_EQ(got, want) << link;
    EXPECT_TRUE(bandwidth_ok) << link;
    if (want == 3.5e6) ++shared;  // device 1's way down carries both flows
    ++count;
  }
  EXPECT_EQ(in.eof(), true) << lines;
  EXPECT_GE(count, 3) << lines;  // each route has at least a way up, the switch's and a way down
  EXPECT_GE(shared, 1) << lines;
}

TEST(LinkTallyTest, AnEmptyTallyListsNothing) {
  EXPECT_TRUE(LinkTally().entries().empty());
}

}  // namespace
}  // namespace clustertwin::sim
