#pragma once

// The share of a device's peak a kernel reaches, as a function of one size
// of the kernel (a GEMM's FLOPs, an attention's sequence length): knots
// measured by a kernel benchmark and fitted by calibrators/device_fit.h,
// joined by straight lines in log(size) and flat beyond the first and the
// last knot. The knots' efficiencies never fall as the size grows, so the
// curve is monotone everywhere. Plain C++: the twins' device models price
// their kernels with it.
//
//   efficiency
//     |                 ____________  clamped at the last knot
//     |            ____/
//     |      _____/                   log-linear between knots
//     |_____/                         clamped at the first knot
//     +-------------------------------- log(size)

#include <string>
#include <vector>

#include "common/status.h"

namespace clustertwin::device {

struct EfficiencyKnot {
  double size = 0;        // > 0, in the curve's unit (FLOPs of one GEMM, tokens of one sequence, ...)
  double efficiency = 0;  // (0, 1]: the share of the device's peak
};

class EfficiencyCurve {
 public:
  /// An empty curve: at() must not be called; callers fall back to a constant.
  EfficiencyCurve() = default;

  /// A curve through `knots`. InvalidArgument naming `what` (a file and field,
  /// e.g. "h200.yaml: gemm") and the offending knot when sizes are not
  /// positive and strictly increasing, an efficiency is outside (0, 1], or an
  /// efficiency is below the one before it; or when there is no knot.
  static StatusOr<EfficiencyCurve> make(std::vector<EfficiencyKnot> knots, const std::string& what);

  bool empty() const { return knots_.empty(); }
  const std::vector<EfficiencyKnot>& knots() const { return knots_; }

  /// The efficiency at `size` (> 0): a knot's own efficiency at its size,
  /// linear in log(size) between two knots, the end knot's beyond the ends.
  double at(double size) const;

  bool operator==(const EfficiencyCurve& other) const;

 private:
  std::vector<EfficiencyKnot> knots_;
};

}  // namespace clustertwin::device
