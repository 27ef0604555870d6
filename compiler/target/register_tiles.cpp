// Register tile sizes shared by the layout pass and the CPU schedules
// (register_tiles.h).
#include "target/register_tiles.h"

#include <algorithm>

#include "support/int_math.h"

namespace kiln {

int64_t matmul_lanes(int64_t n, const VectorInfo& target) {
  for (int64_t l = std::min(target.lanes, 16); l >= 4; l /= 2)
    if (n % l == 0) return l;
  return 0;
}

int64_t matmul_accumulators(const VectorInfo& target) { return std::min(16, std::max(target.registers - 4, 4)); }

int64_t matmul_panel_width(int64_t m, int64_t n, const VectorInfo& target) {
  int64_t lanes = matmul_lanes(n, target);
  if (!lanes) return 0;
  // Up to 8 rows; the columns fill the rest of the accumulators (a
  // matrix-vector product, one row, gets up to 16 independent vectors).
  int64_t acc = matmul_accumulators(target);
  int64_t rows = largest_divisor(m, 8);
  return lanes * largest_divisor(n / lanes, std::max<int64_t>(acc / rows, 1));
}

}  // namespace kiln
