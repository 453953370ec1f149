// The libFuzzer entry of one target: CT_FUZZ_TARGET names its function (fuzz_targets.h).
#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return clustertwin::fuzz::CT_FUZZ_TARGET(data, size);
}
