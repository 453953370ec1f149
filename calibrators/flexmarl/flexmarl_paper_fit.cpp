#include "calibrators/flexmarl/flexmarl_paper_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/text.h"
#include "models/flexmarl/workload.h"

namespace clustertwin::calibrators {

StatusOr<SyncFit> calibrate_sync(const sim::flexmarl::FlexMarlSetup& setup, const cluster::ClusterProfile& profile,
                                 double target_s) {
  SyncFit fit;
  sim::flexmarl::FlexMarlSetup s = setup;
  auto step_at = [&](double efficiency) -> StatusOr<double> {
    s.efficiency.sync_decode = efficiency;
    ++fit.runs;
    auto row = sim::flexmarl::run_flexmarl(s, profile, models::flexmarl::Framework::kSync);
    if (!row.is_ok()) return row.status();
    return row->step_s;
  };
  // T(e) = a + b / e: two runs give a and b; then Newton-like refinement on the same form.
  double e1 = 1.0, e2 = 0.25;
  auto t1 = step_at(e1);
  if (!t1.is_ok()) return t1.status();
  if (*t1 > target_s) {
    return Status::invalid_argument("calibrate: sync takes " + format_number("%.1f", *t1) +
                                    " s per step even at full decode efficiency, above the target " +
                                    format_number("%.1f", target_s) + " s");
  }
  auto t2 = step_at(e2);
  if (!t2.is_ok()) return t2.status();
  double ta = *t1, tb = *t2;
  double e = e1;
  for (int round = 0; round < 6; ++round) {
    const double b = (tb - ta) / (1 / e2 - 1 / e1);
    const double a = ta - b / e1;
    if (!(b > 0) || !(target_s > a)) {
      return Status::invalid_argument("calibrate: sync's step does not fall with decode efficiency toward " +
                                      format_number("%.1f", target_s) + " s");
    }
    e = std::clamp(b / (target_s - a), 1e-3, 1.0);
    auto t = step_at(e);
    if (!t.is_ok()) return t.status();
    fit.step_s = *t;
    if (std::abs(*t - target_s) <= 1e-4 * target_s) break;
    // Keep the two points nearest the target.
    if (std::abs(ta - target_s) > std::abs(tb - target_s)) {
      e1 = e;
      ta = *t;
    } else {
      e2 = e;
      tb = *t;
    }
  }
  fit.decode_efficiency = e;
  return fit;
}

StatusOr<double> flexmarl_sync_decode_efficiency(const sim::flexmarl::FlexMarlSetup& setup,
                                                 const cluster::ClusterProfile& profile, const std::string& calibration,
                                                 std::string* fit_json) {
  bool paper = false;
  if (calibration == "paper") {
    paper = true;
  } else if (calibration == "auto") {
    paper = profile.name == "npu-768";
  } else if (calibration != "none") {
    return Status::invalid_argument("calibration '" + calibration + "': unknown (allowed: auto, paper, none)");
  }
  if (fit_json != nullptr) *fit_json = "null";
  if (!paper) return setup.efficiency.decode;
  // The paper's figure is MAS-RL on MA: fit there, with this run's batch settings, then use the efficiency.
  sim::flexmarl::FlexMarlSetup ma = setup;
  ma.workload = models::flexmarl::ma_workload();
  ma.workload.global_batch = setup.workload.global_batch;
  ma.workload.micro_batch = setup.workload.micro_batch;
  ma.workload.group = setup.workload.group;
  ma.workload.inter_query = setup.workload.inter_query;
  ma.workload.max_response_tokens = setup.workload.max_response_tokens;
  ma.devices = 0;
  std::fprintf(stderr, "calibrating sync to the paper's %.1f s per step on MA...\n", sim::flexmarl::kPaperSyncStepS);
  auto fit = calibrate_sync(ma, profile);
  if (!fit.is_ok()) return fit.status();
  if (fit_json != nullptr) {
    const auto six_digits = [](double v) { return std::stod(format_number("%.6g", v)); };  // as the table shows it
    *fit_json = nlohmann::ordered_json{
        {"target_s", six_digits(sim::flexmarl::kPaperSyncStepS)},
        {"decode_efficiency", six_digits(fit->decode_efficiency)},
        {"sync_step_s", six_digits(fit->step_s)},
        {"runs",
         fit->runs}}.dump();
  }
  return fit->decode_efficiency;
}

}  // namespace clustertwin::calibrators
