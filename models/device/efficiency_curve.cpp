#include "models/device/efficiency_curve.h"

#include <cmath>

#include "common/check.h"
#include "common/text.h"

namespace clustertwin::device {

StatusOr<EfficiencyCurve> EfficiencyCurve::make(std::vector<EfficiencyKnot> knots, const std::string& what) {
  if (knots.empty()) return Status::invalid_argument(what + ": no knot (at least one size and efficiency)");
  for (size_t i = 0; i < knots.size(); ++i) {
    const EfficiencyKnot& k = knots[i];
    const std::string at = what + " knot " + std::to_string(i) + " (size " + format_number("%g", k.size) +
                           ", efficiency " + format_number("%g", k.efficiency) + ")";
    if (!(k.size > 0) || !std::isfinite(k.size)) return Status::invalid_argument(at + ": size must be > 0 and finite");
    if (!(k.efficiency > 0 && k.efficiency <= 1))
      return Status::invalid_argument(at + ": efficiency must be in (0, 1]");
    if (i > 0 && !(k.size > knots[i - 1].size)) {
      return Status::invalid_argument(at + ": sizes must increase (the one before is " +
                                      format_number("%g", knots[i - 1].size) + ")");
    }
    if (i > 0 && k.efficiency < knots[i - 1].efficiency) {
      return Status::invalid_argument(at + ": efficiency must not fall as the size grows (the one before is " +
                                      format_number("%g", knots[i - 1].efficiency) + ")");
    }
  }
  EfficiencyCurve c;
  c.knots_ = std::move(knots);
  return c;
}

double EfficiencyCurve::at(double size) const {
  CT_CHECK(!knots_.empty()) << "an empty efficiency curve has no value";
  if (size <= knots_.front().size) return knots_.front().efficiency;
  if (size >= knots_.back().size) return knots_.back().efficiency;
  size_t hi = 1;
  while (knots_[hi].size < size)
    ++hi;
  const EfficiencyKnot& a = knots_[hi - 1];
  const EfficiencyKnot& b = knots_[hi];
  if (size == b.size) return b.efficiency;  // exact at a knot, not a rounded blend
  const double t = std::log(size / a.size) / std::log(b.size / a.size);
  return a.efficiency + t * (b.efficiency - a.efficiency);
}

bool EfficiencyCurve::operator==(const EfficiencyCurve& other) const {
  if (knots_.size() != other.knots_.size()) return false;
  for (size_t i = 0; i < knots_.size(); ++i) {
    if (knots_[i].size != other.knots_[i].size || knots_[i].efficiency != other.knots_[i].efficiency) return false;
  }
  return true;
}

}  // namespace clustertwin::device
