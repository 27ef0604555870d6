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

struct Stage;

// A reduction with an interior formula (TensorNode::fbody_interior): the
// condition, tested inside the last spatial loop before the reductions,
// that every output the loops inside it compute lies in the interior
// (undefined where it cannot be bounded: an axis that varies non-linearly
// inside that loop). `axes` are the original axes' values over the leaves.
tir::Expr interior_condition(const Stage& stage, const std::vector<tir::Expr>& axes, tir::Expr* out_loop_var);
// `general` and `interior` lowered alike (the same loops above `loop_var`):
// inside that loop, if (cond) interior's body else general's. Returns
// `general` where the two differ above the loop.
tir::Stmt merge_interior(const tir::Stmt& general, const tir::Stmt& interior, const tir::Expr& loop_var,
                         const tir::Expr& cond);

}  // namespace kiln::te
