// The real runs recorded on an H200 (traces/data/h200, scripts/device-check.sh
// of 2026-12-04): on a GPU a plan task's interval is the device's (CUDA
// events) and the host's launch is kept beside it (traces/FORMAT.md). The
// device cannot start a task before the host began launching it, so every
// such event has ts >= host_ts, up to the alignment of the two clocks (one
// CUDA event read against the host clock at the origin: microseconds).

#include <gtest/gtest.h>

#include <string>

#include "traces/trace_reader.h"

namespace clustertwin::traces {
namespace {

const std::string kDir = std::string(CT_SOURCE_DIR) + "/traces/data/h200/";

TEST(GpuTraceTest, EveryDeviceIntervalStartsAfterItsLaunchBegan) {
  for (const char* name : {"nestpipe-1gpu-torchrec", "nestpipe-1gpu-dbp", "nestpipe-1gpu-nestpipe",
                           "nestpipe-1gpu-dbp-store-device", "nestpipe-4rank-gloo-dbp"}) {
    auto reader = TraceReader::open(kDir + name + ".json.gz");
    ASSERT_TRUE(reader.is_ok()) << reader.status().message();
    Event e;
    int device_timed = 0;
    while ((*reader)->next(&e)) {
      if (!e.host_ts_us) continue;
      ++device_timed;
      ASSERT_TRUE(e.host_dur_us.has_value()) << name << ": " << e.name;
      EXPECT_GE(e.ts_us, *e.host_ts_us - 5.0) << name << ": '" << e.name << "' ran before it was launched";
    }
    ASSERT_TRUE((*reader)->status().is_ok()) << (*reader)->status().message();
    EXPECT_GT(device_timed, 0) << name << ": no task timed by the device";
    EXPECT_EQ((*reader)->metadata().hardware.rfind("cuda:0 (NVIDIA H200", 0), 0u) << name;
  }
}

}  // namespace
}  // namespace clustertwin::traces
