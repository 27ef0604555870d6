// Scans: CumSum and CumProd (opset 26), an inclusive or exclusive, forward
// or reverse running sum or product along one axis, written as a reduction
// over the axis (element i combines the elements the scan takes at i; the
// others count as 0 for a sum, 1 for a product).

#include <algorithm>

#include "lower/op_lowering.h"
#include "support/diagnostics.h"

namespace kiln::lower {

void lower_cumsum(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const bool prod = ctx.op() == graph::Op::CumProd;
  const te::ReduceKind kind = prod ? te::ReduceKind::Prod : te::ReduceKind::Sum;
  const char* name = prod ? "cumprod" : "cumsum";
  te::Tensor x = ctx.in(0);
  const Expr neutral = tir::make_const(x.dtype(), prod ? 1 : 0);
  const graph::Value& av = ctx.value(ctx.input(1));
  bool exclusive = n.attr_int("exclusive", 0) != 0, reverse = n.attr_int("reverse", 0) != 0;
  auto take = [=](const Expr& j, const Expr& i) {
    return reverse ? (exclusive ? j > i : j >= i) : (exclusive ? j < i : j <= i);
  };
  if (!av.is_constant()) {
    // The axis read at run time: the sum runs over the longest dimension,
    // and each term picks the axis by value (negative counts from the end,
    // out of range clamps: no read leaves the tensor).
    user_assert(av.elements() == 1) << n.describe() << ": axis must hold one value";
    const int64_t rank = (int64_t)x.ndim();
    const te::Dims xd = x.dims();
    te::Tensor at = ctx.in(1);
    Expr a = tir::Cast::make(tir::Index(), at(Indices(at.ndim(), Expr(0))));
    a = tir::clamp(tir::select(a < Expr(0), a + Expr(rank), a), Expr(0), Expr(rank - 1));
    int64_t longest = 1;
    for (int64_t d : x.shape()) longest = std::max(longest, d);
    ctx.set_output(0, te::reduce(name, xd, {Expr(longest)}, kind, x.dtype(),
                                 [=](const Indices& o, const Indices& r) {
      Expr j = r[0], i = Expr(0), extent = Expr(0);
      Indices xi = o;
      for (int64_t d = 0; d < rank; d++) {
        Expr here = tir::EQ::make(a, Expr(d));
        i = tir::select(here, o[d], i);
        extent = tir::select(here, xd[d], extent);
        xi[d] = tir::select(here, tir::min(j, xd[d] - Expr(1)), o[d]);
      }
      return tir::select(j < extent && take(j, i), x(xi), neutral);
    }));
    return;
  }
  int64_t axis = normalize_axis(ctx, av.const_int_at(0), (int64_t)x.ndim());
  auto term = [=](const Indices& o, const Indices& r) {
    Indices xi = o;
    xi[axis] = r[0];
    return tir::select(take(r[0], o[axis]), x(xi), neutral);
  };
  if (!x.dims().is_static()) {  // run-time extents: the sum runs over the axis' own
    const te::Dims xd = x.dims();
    ctx.set_output(0, te::reduce(name, xd, te::Dims{xd[(size_t)axis]}, kind, x.dtype(), term));
    return;
  }
  int64_t len = x.shape()[axis];
  ctx.set_output(0, te::reduce(name, x.shape(), {len}, kind, x.dtype(), term));
}

}  // namespace kiln::lower
