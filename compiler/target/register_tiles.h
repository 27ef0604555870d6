// Register tile sizes derived from a target's vector unit, where two layers
// must agree on them: the layout graph pass packs constant weights in the
// panels that the CPU matmul schedule's tiles read (lower/schedules_cpu.cpp).
// One definition here keeps packing and tiling in step.
#pragma once

#include <cstdint>

#include "target/target.h"

namespace kiln {

// The vector lanes of a matmul tile for N output columns (0: no vector tile).
int64_t matmul_lanes(int64_t n, const VectorInfo& target);
// Accumulator registers of a matmul tile: 16, fewer where registers are
// short (AVX2).
int64_t matmul_accumulators(const VectorInfo& target);
// A matmul tile's column count for M rows per batch (0: no vector tile):
// also the panel width of weights packed at compile time, so one tile reads
// one contiguous panel.
int64_t matmul_panel_width(int64_t m, int64_t n, const VectorInfo& target);

}  // namespace kiln
