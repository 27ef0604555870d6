// Guard specialization for run-time extents (docs/dynamic-shapes.md).
//
// A split of a loop whose extent is known only at run time leaves a guard
// `outer * f + inner < E` around the body, deep inside the tile loops: the
// vector loops turn scalar and every element pays a compare. The guard
// holds for every inner iteration whenever `outer < E / f` (floor), which is
// all but the last outer iteration. Specialization puts that test just
// inside the innermost loop whose variable it reads, with two versions of
// the body: without the guard (the common case, unguarded tiles, vector
// loops) and with it (the ragged edge). Halide's loop partitioning for
// symbolic bounds, in its simplest form.
#pragma once

#include <vector>

#include "tir/ir.h"

namespace kiln::te {

struct GuardSpec {
  tir::Expr guard;     // the condition of the guards (matched by identity: the lowering's own node)
  tir::Expr full;      // implies `guard` for every iteration of the loops inside `loop_var`'s
  tir::Expr loop_var;  // the loop inside which `full` is tested
};

// At most this many guards of one kernel are specialized (each doubles the
// code below its loop).
constexpr size_t kMaxSpecializedGuards = 3;

tir::Stmt specialize_guards(const tir::Stmt& s, const std::vector<GuardSpec>& specs);

}  // namespace kiln::te
