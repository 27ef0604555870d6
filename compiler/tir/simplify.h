// Arithmetic simplification with integer bound analysis.
//
// Folds constants, applies identities (x + 0, x * 1, min of ordered values),
// and uses the ranges of enclosing loop variables to decide comparisons, so
// that guards a loop split or a padding check made provably true or false
// disappear. Float arithmetic is only constant-folded, never reassociated.
#pragma once

#include "tir/ir.h"

namespace kiln::tir {

Stmt simplify(const Stmt& s);
Expr simplify(const Expr& e);

// Inclusive integer range of an Index expression; unbounded sides use the
// int64 extremes.
struct Interval {
  int64_t min;  // smallest possible value
  int64_t max;  // largest possible value
};

// The range of an integer expression over every value of the shape symbols
// it uses (each within its [lo, hi]); other variables are unbounded.
Interval bounds_of(const Expr& e);

// Whether a and b are equal for every value of the symbols: the same once
// simplified, or a difference that simplifies to 0. (False means "not
// shown", not "different".)
bool provably_equal(const Expr& a, const Expr& b);

}  // namespace kiln::tir
