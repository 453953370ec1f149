// The kernel-benchmark trace (traces/kernel_trace.h, traces/KERNELS.md): the
// shipped H200 trace reads, and each malformed trace is one message naming
// the file, the field and the value.

#include "traces/kernel_trace.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace clustertwin::traces {
namespace {

const std::string kShipped = std::string(CT_SOURCE_DIR) + "/traces/data/kernels/h200-torch2.11-eager-2026-12-04.json";

// A valid trace of one GEMM and one attention record.
nlohmann::json minimal() {
  return nlohmann::json::parse(R"({
    "format": "clustertwin-kernel-benchmark", "version": 1,
    "provenance": {"device": "GPU", "software_stack": "eager", "date": "2026-12-04", "method": "events"},
    "peak_flops": 1e15,
    "records": [
      {"kind": "gemm", "dtype": "bf16", "shape": {"tokens": 1024, "in": 1024, "out": 1024},
       "flops": 6442450944, "time_s": 1e-5},
      {"kind": "attention", "dtype": "bf16",
       "shape": {"seq_len": 1024, "batch": 1, "heads": 8, "kv_heads": 1, "head_dim": 128, "causal": true},
       "flops": 6442450944, "time_s": 1e-5}
    ]})");
}

TEST(KernelTraceTest, TheShippedH200TraceReads) {
  auto t = read_kernel_trace(kShipped);
  ASSERT_TRUE(t.is_ok()) << t.status().message();
  EXPECT_EQ(t->provenance_of("torch"), "2.11.0+cu130");
  EXPECT_EQ(t->provenance_of("driver"), "580.159.04");
  EXPECT_EQ(t->peak_flops, 989.5e12);
  int gemms = 0, attention = 0;
  for (const KernelRecord& r : t->records) {
    gemms += r.kind == "gemm";
    attention += r.kind == "attention";
  }
  EXPECT_EQ(gemms, 8);      // the measurements' GEMM table
  EXPECT_EQ(attention, 3);  // sequence lengths 1024, 4096, 16384
  // The first GEMM as measured: 16384 x 8192 -> 1280 in 1.533 ms.
  EXPECT_EQ(t->records[0].time_s, 1.533e-3);
  EXPECT_EQ(t->records[0].flops, gemm_training_flops(16384, 8192, 1280));
}

TEST(KernelTraceTest, FlopsFollowTheShapes) {
  // 6 T K N; causal attention 3 x 4 b h s^2 d / 2.
  EXPECT_EQ(gemm_training_flops(2, 3, 5), 180);
  EXPECT_EQ(attention_training_flops(4, 1, 2, 8, true), 3 * 4 * 1 * 2 * 16 * 8 / 2);
  EXPECT_EQ(attention_training_flops(4, 1, 2, 8, false), 3 * 4 * 1 * 2 * 16 * 8);
  EXPECT_TRUE(parse_kernel_trace(minimal().dump(), "t.json").is_ok());
}

TEST(KernelTraceTest, EachMalformedTraceIsOneMessageNamingFieldAndValue) {
  struct Case {
    std::string name;
    void (*edit)(nlohmann::json&);
    std::string message;
  };
  const std::vector<Case> cases = {
      {"format", [](nlohmann::json& j) { j["format"] = "chrome"; },
       "t.json: format \"chrome\": not a kernel-benchmark trace (expected \"clustertwin-kernel-benchmark\")"},
      {"version", [](nlohmann::json& j) { j["version"] = 2; }, "t.json: version 2: this reader knows version 1"},
      {"provenance", [](nlohmann::json& j) { j["provenance"].erase("software_stack"); },
       "t.json: provenance.software_stack: missing (every profile fitted from the trace repeats it)"},
      {"peak", [](nlohmann::json& j) { j["peak_flops"] = -1; }, "t.json: peak_flops -1: must be a number > 0"},
      {"time", [](nlohmann::json& j) { j["records"][0]["time_s"] = 0; }, "t.json: records[0].time_s 0: must be > 0"},
      {"time type", [](nlohmann::json& j) { j["records"][1]["time_s"] = "fast"; },
       "t.json: records[1].time_s \"fast\": must be a number"},
      {"kind", [](nlohmann::json& j) { j["records"][0].erase("kind"); }, "t.json: records[0].kind: missing"},
      {"shape size", [](nlohmann::json& j) { j["records"][0]["shape"].erase("out"); },
       "t.json: records[0].shape.out: missing"},
      {"shape value", [](nlohmann::json& j) { j["records"][0]["shape"]["in"] = -3; },
       "t.json: records[0].shape.in -3: must be a number > 0 or a boolean"},
      {"gemm flops", [](nlohmann::json& j) { j["records"][0]["flops"] = 1e9; },
       "t.json: records[0].flops 1000000000.0: disagrees with the shape: 6 x tokens x in x out = 6.44245e+09"},
      {"attention flops", [](nlohmann::json& j) { j["records"][1]["shape"]["causal"] = false; },
       "t.json: records[1].flops 6442450944: disagrees with the shape: 3 x 4 x batch x heads x seq_len^2 x head_dim "
       "= 1.28849e+10"},
      {"no work", [](nlohmann::json& j) { j["records"][0].erase("flops"); }, "t.json: records[0].flops: missing"},
      {"no records", [](nlohmann::json& j) { j["records"] = nlohmann::json::array(); },
       "t.json: records []: no measured kernel"},
  };
  for (const Case& c : cases) {
    nlohmann::json j = minimal();
    c.edit(j);
    auto t = parse_kernel_trace(j.dump(), "t.json");
    ASSERT_FALSE(t.is_ok()) << c.name;
    EXPECT_EQ(t.status().message(), c.message) << c.name;
    EXPECT_EQ(t.status().message().find('\n'), std::string::npos) << c.name;
  }
  auto broken = parse_kernel_trace("{\"format\": ", "t.json");
  ASSERT_FALSE(broken.is_ok());
  EXPECT_EQ(broken.status().message().rfind("t.json: not valid JSON at byte", 0), 0u) << broken.status().message();
}

}  // namespace
}  // namespace clustertwin::traces
