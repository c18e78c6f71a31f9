// splitmix64: the small, fixed-seed generator behind the reporters' resampling (bootstrap,
// permutation tests), so the same inputs always give the same verdicts.
#pragma once

#include <cstdint>

namespace shardbench {

inline uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace shardbench
