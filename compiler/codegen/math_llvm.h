// Inline math for the CPU code generator: floor/ceil and the float32
// transcendentals (Cephes-style polynomials), emitted as LLVM IR so kernels
// call no libm. Every function works on scalars and on vectors alike: the
// constants take the shape (scalar or <N x T>) of the argument.
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <vector>

#include "tir/ir.h"

namespace kiln {

// Emits `op` (a TIR math intrinsic) applied to `args` (float or vectors of
// float; float64/float16 arguments are computed in float32 precision).
llvm::Value* emit_math_intrinsic(llvm::IRBuilder<>& b, tir::Intrinsic op, std::vector<llvm::Value*> args);

}  // namespace kiln
