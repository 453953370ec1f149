#pragma once

// The flags of `sim flexmarl` and `plan flexmarl` that set FlexMARL's setup
// (sim/flexmarl/flexmarl_twin.h, models/flexmarl): its libraries name a
// field in their messages ("load_gap 0: ..."), the commands name the flag
// that set it ("--load-gap 0: ...").

#include "cli/command.h"

namespace clustertwin::cli {

inline Status in_flexmarl_flag_words(const Status& status) {
  return in_flag_words(status, {{"workers", "--workers"},
                                {"load_gap", "--load-gap"},
                                {"steps", "--steps"},
                                {"device_profile", "--device-profile"},
                                {"framework", "--framework"},
                                {"calibration", "--calibration"}});
}

}  // namespace clustertwin::cli
