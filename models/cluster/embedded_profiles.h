#pragma once

#include <span>
#include <string_view>

namespace clustertwin::cluster {

/// A cluster profile shipped inside the library, so that an installed binary
/// finds it without the source tree. The text is sim/platforms/NAME.yaml as it
/// was when the library was built (see sim/platforms/CMakeLists.txt).
struct EmbeddedProfile {
  std::string_view name;  // "npu-1536"
  std::string_view yaml;  // the whole file
};

/// The shipped profiles, in the order sim/platforms/CMakeLists.txt lists them.
std::span<const EmbeddedProfile> embedded_profiles();

/// The shipped device profiles (sim/platforms/devices/NAME.yaml), in the
/// order models/cluster/CMakeLists.txt lists them.
std::span<const EmbeddedProfile> embedded_device_profiles();

}  // namespace clustertwin::cluster
