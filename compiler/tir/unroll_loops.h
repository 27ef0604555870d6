// Unrolls `unrolled` loops around vector loops, here rather than in LLVM.
//
// A register tile is an unrolled loop (tile rows/columns) around a
// vectorized loop (the lanes). Substituting each constant of the unrolled
// variable lets the simplifier see every copy on its own: the padding guard
// of a convolution holds for all but the first and last columns of a tile,
// so it disappears from the other copies, and every accumulator index
// becomes a constant (so the tile lives in vector registers). Other
// unrolled loops are left to LLVM (the same code, fewer TIR nodes), unless
// `all`: GPU targets unroll every one (a register tile per invocation has
// no vector loop; its accumulators need constant indices to stay in
// registers, and the SPIR-V optimizer does not unroll by itself).
#pragma once

#include "tir/ir.h"

namespace kiln::tir {

Stmt unroll_loops(const Stmt& s, bool all = false);

}  // namespace kiln::tir
