// Two one-line expression builders that the operator lowerings share: a
// one-operand intrinsic call, and a constant of an expression's (or a
// type's) element type. One definition for every ops_*.cpp, so no file
// keeps its own copy (and a unity build sees each once).
#pragma once

#include "tir/ir.h"

namespace kiln::lower {

inline tir::Expr call(tir::Intrinsic op, const tir::Expr& x) { return tir::Call::make(op, {x}); }
inline tir::Expr k(const tir::Expr& like, double v) { return tir::make_const(like.type(), v); }
inline tir::Expr k(tir::Type t, double v) { return tir::make_const(t, v); }

}  // namespace kiln::lower
