// Unrolls `unrolled` loops around vector loops, here rather than in LLVM.
//
// A register tile is an unrolled loop (tile rows/columns) around a
// vectorized loop (the lanes). Substituting each constant of the unrolled
// variable lets the simplifier see every copy on its own: the padding guard
// of a convolution holds for all but the first and last columns of a tile,
// so it disappears from the other copies, and every accumulator index
// becomes a constant (so the tile lives in vector registers). Other
// unrolled loops are left to LLVM (the same code, fewer TIR nodes).
#pragma once

#include "tir/ir.h"

namespace kiln::tir {

Stmt unroll_loops(const Stmt& s);

}  // namespace kiln::tir
