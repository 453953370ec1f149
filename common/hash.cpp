#include "common/hash.h"

namespace clustertwin {

uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t splitmix64(uint64_t x) {
  return mix64(x + 0x9e3779b97f4a7c15ULL);
}

}  // namespace clustertwin
