// Current and peak bytes of one kind of buffer, updated where the engine allocates and frees
// it (exact, not sampled): e.g. the unsharded parameter buffers alive at any moment.
#pragma once

#include <algorithm>
#include <cstdint>

namespace shardbench::shard {

struct ByteGauge {
  int64_t current = 0;
  int64_t peak = 0;
  void add(int64_t n) {
    current += n;
    peak = std::max(peak, current);
  }
  void sub(int64_t n) { current -= n; }
  void reset_peak() { peak = current; }
};

}  // namespace shardbench::shard
