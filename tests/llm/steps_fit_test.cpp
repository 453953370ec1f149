// `calibrate steps` (calibrators/llm/steps_fit.h): a table the twin
// generated with known efficiencies and overhead gives them back.

#include "calibrators/llm/steps_fit.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace clustertwin::calibrators::llm {
namespace {

// A table's header: the columns calibrate steps requires, and recompute and schedule.
const char* const kFitHeader =
    "workers,tp,pp,dp,micro_batch,global_batch,hidden,heads,layers,seq,recompute,schedule,step_ms\n";

TEST(StepsFitTest, RecoversTheEfficienciesAndOverheadATableWasMadeWith) {
  auto base = cluster::load_cluster_profile("h100-1024");
  ASSERT_TRUE(base.is_ok());
  const std::string table = std::string(kFitHeader) +
                            "8,8,1,1,1,64,4096,32,32,1024,none,1f1b,1\n"
                            "8,4,2,1,1,32,4096,32,32,4096,selective,1f1b,1\n"
                            "8,2,1,4,2,16,2048,16,24,8192,full,1f1b,1\n"
                            "8,8,1,1,2,32,8192,64,16,2048,none,1f1b,1\n"
                            "8,1,8,1,1,16,2048,16,32,2048,full,gpipe,1\n"
                            "16,8,2,1,2,32,5120,40,40,4096,full,1f1b,1\n";
  auto rows = parse_steps_table(table, "t.csv");
  ASSERT_TRUE(rows.is_ok()) << rows.status().message();
  const std::map<std::string, double> truth{{"gemm", 0.7}, {"attention", 0.45}, {"overhead", 40e-6}};
  auto measured = predict_steps(*rows, sim::llm::with_llm_values(*base, truth), 2);
  ASSERT_TRUE(measured.is_ok()) << measured.status().message();
  for (size_t i = 0; i < rows->size(); ++i)
    (*rows)[i].step_s = (*measured)[i];
  StepsFitOptions options;
  options.parallel = 2;
  auto fit = fit_steps(*rows, *base, options);
  ASSERT_TRUE(fit.is_ok()) << fit.status().message();
  EXPECT_EQ(fit->fitted, (std::vector<std::string>{"gemm", "attention", "overhead"}));
  for (const auto& [name, value] : truth)
    EXPECT_NEAR(fit->values.at(name), value, 0.01 * value) << name;
  for (double r : fit->residual)
    EXPECT_LT(std::abs(r), 1e-3);
  EXPECT_EQ(fit->profile.costs.count(sim::llm::kGemmFp8Key), 0u);  // no fp8 row: not fitted, not written

  // Three rows are too few for three unknowns (two rows an unknown): the GEMMs alone are fitted.
  const std::vector<StepRow> three(rows->begin(), rows->begin() + 3);
  auto small = fit_steps(three, *base, options);
  ASSERT_TRUE(small.is_ok()) << small.status().message();
  EXPECT_EQ(small->fitted, std::vector<std::string>{"gemm"});
  EXPECT_EQ(small->profile.costs.count(sim::llm::kAttentionKey), 0u);

  // The report: a line per row, the fitted values, the means; the JSON the same numbers.
  const std::string report = steps_fit_report(*rows, *fit);
  EXPECT_NE(report.find("#   gemm: 0.7000 of peak"), std::string::npos) << report;
  EXPECT_NE(report.find("#   overhead: 40.00 us per layer and pass"), std::string::npos) << report;
  EXPECT_NE(report.find("\n  6  row 6 "), std::string::npos) << report;
  auto doc = nlohmann::json::parse(steps_fit_json(*rows, *fit));
  EXPECT_NEAR(doc["fitted"]["attention"].get<double>(), 0.45, 0.0045);
  EXPECT_EQ(doc["rows"].size(), rows->size());
}

}  // namespace
}  // namespace clustertwin::calibrators::llm
