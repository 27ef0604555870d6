// Loop-invariant index arithmetic leaves its loop (GPU targets).
//
// A GPU schedule spreads fused loops over invocations, so every index of a
// kernel decomposes the invocation number with divisions and remainders
// (floor semantics: a few instructions each), and padding adds bounds
// checks and clamps per read. Inside the reduction loops of a convolution
// these are mostly invariant. LLVM hoists them on CPU targets; the SPIR-V
// optimizer does not, and a Vulkan driver may not either (lavapipe spent
// more time on them than on the multiply-adds). This pass binds each
// maximal invariant integer or boolean subexpression of a loop body to a
// variable before the loop (outermost loops first, so each lands as far
// out as it can). Loads, calls and divisions by a non-constant are never
// moved: they may depend on memory or be guarded by a condition.
#pragma once

#include "tir/ir.h"

namespace kiln::tir {

Stmt hoist_invariants(const Stmt& s);

}  // namespace kiln::tir
