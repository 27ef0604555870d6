// Expression builders that the operator lowerings share: a one-operand
// intrinsic call, a constant of an expression's (or a type's) element type,
// and multilinear sampling (GridSample, DeformConv). One definition for
// every ops_*.cpp, so no file keeps its own copy (and a unity build sees
// each once).
#pragma once

#include <functional>
#include <vector>

#include "tir/ir.h"

namespace kiln::lower {

inline tir::Expr call(tir::Intrinsic op, const tir::Expr& x) { return tir::Call::make(op, {x}); }
inline tir::Expr k(const tir::Expr& like, double v) { return tir::make_const(like.type(), v); }
inline tir::Expr k(tir::Type t, double v) { return tir::make_const(t, v); }

// Multilinear interpolation at the real position p (one coordinate per
// axis): the 2^k corners c = floor(p) + {0, 1} on each axis, pixel(c) (c as
// integer-valued reals of p's type) weighted by (1 - t) or t, t = p - floor(p),
// interpolated axis by axis (axis 0 outermost). pixel decides what a corner
// outside the data reads (zero, the edge, a reflection).
inline tir::Expr linear_sample(const std::vector<tir::Expr>& p,
                               const std::function<tir::Expr(const std::vector<tir::Expr>&)>& pixel) {
  std::vector<tir::Expr> p0(p.size()), c(p.size());
  for (size_t d = 0; d < p.size(); d++) p0[d] = call(tir::Intrinsic::Floor, p[d]);
  std::function<tir::Expr(size_t)> interp = [&](size_t d) -> tir::Expr {
    if (d == p.size()) return pixel(c);
    tir::Expr one = k(p[d], 1.0), t = p[d] - p0[d];
    c[d] = p0[d];
    tir::Expr a = interp(d + 1);
    c[d] = p0[d] + one;
    tir::Expr b = interp(d + 1);
    return (one - t) * a + t * b;
  };
  return interp(0);
}

}  // namespace kiln::lower
