// Scans: CumSum, an inclusive or exclusive, forward or reverse running sum
// along one axis, written as a reduction over the axis (element i sums the
// elements the scan takes at i).

#include "lower/op_lowering.h"
#include "support/diagnostics.h"

namespace kiln::lower {

void lower_cumsum(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0);
  const graph::Value& av = ctx.value(ctx.input(1));
  user_assert(av.is_constant()) << n.describe() << ": axis must be a constant";
  int64_t axis = normalize_axis(ctx, av.const_int_at(0), (int64_t)x.ndim());
  bool exclusive = n.attr_int("exclusive", 0) != 0, reverse = n.attr_int("reverse", 0) != 0;
  int64_t len = x.shape()[axis];
  ctx.set_output(0, te::reduce("cumsum", x.shape(), {len}, te::ReduceKind::Sum, x.dtype(), [=](const Indices& o, const Indices& r) {
    Expr j = r[0], i = o[axis];
    Expr take = reverse ? (exclusive ? j > i : j >= i) : (exclusive ? j < i : j <= i);
    Indices xi = o;
    xi[axis] = j;
    return tir::select(take, x(xi), tir::make_const(x.dtype(), 0));
  }));
}

}  // namespace kiln::lower
