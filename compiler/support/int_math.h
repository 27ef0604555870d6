// Small integer helpers shared across layers (tile sizes, extents).
#pragma once

#include <algorithm>
#include <cstdint>

namespace kiln {

// The largest divisor of n that is at most `limit` (1 if none above 1):
// tile sizes that need no guard.
inline int64_t largest_divisor(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, limit); d > 1; d--)
    if (n % d == 0) return d;
  return 1;
}

// a / b rounded up, and a rounded up to a multiple of b (a >= 0, b > 0).
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

}  // namespace kiln
