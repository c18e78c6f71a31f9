// The counter-based generator behind parameter initialisation (engine/model/param_init.h):
// draw c of a key is the splitmix64 finaliser of key + c * the golden ratio, a pure function
// that any rank computes for any element on its own.
//
// Internal linkage on purpose: the vectorised kernels (engine/model/normal_kernel.h) include
// this from translation units built for different instruction sets, and an inline function
// with external linkage compiled with AVX2 could be the copy the linker keeps for all of them.
#pragma once

#include <cstdint>

namespace shardbench::model::counter_rng {

static constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

static inline uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in (0, 1), 53 random bits.
// (53 bits fit a signed integer exactly: its conversion is one instruction, the unsigned one a
// branchy sequence, and both give the same double.)
static inline double Open01(uint64_t h) {
  return (static_cast<double>(static_cast<int64_t>(h >> 11)) + 0.5) * 0x1.0p-53;
}

}  // namespace shardbench::model::counter_rng
