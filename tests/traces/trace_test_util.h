#pragma once

#include <string>

#include "traces/event.h"

namespace clustertwin::traces::testing {

/// A small trace with every optional field used somewhere: two ranks, a
/// compute and a comm stream each.
inline Trace sample_trace() {
  Trace t;
  t.metadata.source = Source::kReal;
  t.metadata.system = "nestpipe";
  t.metadata.variant = "dbp";
  t.metadata.world_size = 2;
  t.metadata.hardware = "localhost-cpu";
  t.metadata.model = "hstu-small";
  t.metadata.config_json = R"({"steps":2,"lr":0.01,"tables":[1,2]})";
  t.metadata.seed = 7;
  t.metadata.clustertwin_version = "0.1.0";
  t.metadata.streams = {"compute", "comm"};
  for (int rank = 0; rank < 2; ++rank) {
    Event fwd;
    fwd.name = "dense forward";
    fwd.category = Category::kCompute;
    fwd.rank = rank;
    fwd.stream = 0;
    fwd.ts_us = 10.125 + rank;
    fwd.dur_us = 100.5;
    fwd.task_id = 3;
    fwd.cost_key = "dense_fwd";
    fwd.step = 0;
    fwd.micro_batch = 1;
    fwd.flops = 1.5e9;
    fwd.bytes = 4096;
    t.events.push_back(fwd);
    Event a2a;
    a2a.name = "embedding all2all \"quoted\"\n";
    a2a.category = Category::kComm;
    a2a.rank = rank;
    a2a.stream = 1;
    a2a.ts_us = 50;
    a2a.dur_us = 80;
    a2a.task_id = 4;
    a2a.cost_key = "emb_a2a";
    a2a.step = 0;
    a2a.bytes = 1 << 20;
    a2a.collective = "alltoall";
    a2a.group_size = 2;
    a2a.peer = 1 - rank;
    t.events.push_back(a2a);
  }
  Event idle;  // no args at all
  idle.name = "wait";
  idle.category = Category::kIdle;
  idle.ts_us = 0;
  idle.dur_us = 0;
  t.events.push_back(idle);
  return t;
}

}  // namespace clustertwin::traces::testing
