#pragma once

#include <string_view>

namespace clustertwin {

/// The clustertwin release ("0.1.0"), as written into every trace and result.
std::string_view version();

}  // namespace clustertwin
