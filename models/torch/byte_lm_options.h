#pragma once

// The shape of the IGSP study's ByteLm (models/torch/byte_lm.h), apart from
// the module: plain C++, so that a command's arguments can carry it without
// libtorch (real/igsp/train_options.h, which cli/ reaches through
// real/igsp/igsp_command.h).

#include <cstdint>

#include "common/status.h"

namespace clustertwin::models::nets {

struct ByteLmOptions {
  int64_t vocab = 256;  // bytes
  int64_t context = 128;
  int64_t d_model = 128;
  int64_t layers = 4;
  int64_t heads = 4;
  int64_t d_ff = 512;
};

/// One line naming the first bad field ("layers 0 must be >= 1",
/// "heads 3 must divide d_model 128"), or ok.
Status check_byte_lm_options(const ByteLmOptions& options);

}  // namespace clustertwin::models::nets
