#pragma once

#include "common/status.h"

namespace clustertwin::real::stub {

/// `clustertwin run stub`: the stub has no real executor; prints so and succeeds.
Status run_stub();

}  // namespace clustertwin::real::stub
