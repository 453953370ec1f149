#pragma once

// 64-bit mixing, shared by everything that derives seeds, streams, shards or
// splits from integers.

#include <cstdint>

namespace clustertwin {

/// SplitMix64's finaliser (Steele, Lea and Flood 2014): a bijection on 64-bit
/// words whose output bits each depend on every input bit.
uint64_t mix64(uint64_t x);

/// One step of SplitMix64 from state x: mix64(x + golden ratio constant).
/// Unlike mix64, it does not map 0 to 0.
uint64_t splitmix64(uint64_t x);

}  // namespace clustertwin
