#pragma once

// An imported trace's event as the Kineto importer's tests build them.

#include <cstdint>
#include <string>

#include "traces/event.h"

namespace clustertwin::models::testing {

/// `name` on `stream` of `rank` over [ts_us, ts_us + dur_us].
inline traces::Event timed_event(const std::string& name, traces::Category category, int64_t rank, int64_t stream,
                                 double ts_us, double dur_us) {
  traces::Event e;
  e.name = name;
  e.category = category;
  e.rank = rank;
  e.stream = stream;
  e.ts_us = ts_us;
  e.dur_us = dur_us;
  return e;
}

}  // namespace clustertwin::models::testing
