// Softmax, LogSoftmax and Hardmax. Opset >= 13 normalizes along one axis;
// older opsets flatten the input to 2-D at `axis` and normalize each row.
//
//   m = max(x); e = exp(x - m); y = e * (1 / sum(e))
// The max, e and 1 / sum are materialized (the statistics are read by every
// element of their row, and e by the sum and the output: one exp per
// element).
#include <cmath>

#include "lower/expr_helpers.h"
#include "lower/op_lowering.h"
#include "support/diagnostics.h"

namespace kiln::lower {
namespace {

using tir::Intrinsic;

}  // namespace

void lower_softmax(OpContext& ctx) {
  ctx.require_float();
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0);
  const te::Dims s = x.dims();
  int64_t rank = (int64_t)s.size();
  int64_t axis = normalize_axis(ctx, n.attr_int("axis", ctx.graph.opset >= 13 ? -1 : 1), rank);
  bool last_axis = ctx.graph.opset >= 13 ? axis == rank - 1 : axis == rank - 1;
  te::Dims before(s.begin(), s.begin() + axis), after;
  if (ctx.graph.opset >= 13) after.assign(s.begin() + axis + 1, s.end());
  Expr outer = te::num_elements(before), inner = te::num_elements(after);
  Expr len = ctx.graph.opset >= 13 ? s[axis] : te::num_elements(te::Dims(s.begin() + axis, s.end()));
  // View x as [outer, len, inner]: element (o, j, i) is flat o*len*inner + j*inner + i.
  te::Dims view = {outer, len, inner};
  // Element (o, j, i) of the view of a tensor of x's shape.
  auto at_view = [view, s, last_axis](const te::Tensor& a, const Expr& o, const Expr& j, const Expr& i) {
    Indices idx(s.size());
    if (last_axis) {  // over the last axis: a[o..., j]
      idx.back() = j;
      Expr rest = o;
      for (size_t d = s.size() - 1; d-- > 0;) {
        idx[d] = rest % s[d];
        rest = rest / s[d];
      }
      return a(idx);
    }
    Expr flat = te::flat_index(view, {o, j, i});
    for (size_t d = s.size(); d-- > 0;) {
      idx[d] = flat % s[d];
      flat = flat / s[d];
    }
    return a(idx);
  };
  auto exp = [](Expr e) { return tir::Call::make(tir::Intrinsic::Exp, {e}); };
  tir::Type t = x.dtype();
  // Each statistic is a compute over its reduction: along the last axis
  // the CPU schedule vectorizes each row's reduction (lane partials,
  // Stage::inline_reduction_lanes); along another, the loops are LLVM's.
  te::Tensor max_r = te::reduce("max", {outer, inner}, {len}, te::ReduceKind::Max, t,
                                [=](const Indices& o, const Indices& r) { return at_view(x, o[0], r[0], o[1]); });
  te::Tensor mx = ctx.materialize(te::compute("row_max", {outer, inner}, [=](const Indices& o) { return max_r(o); }));
  bool new_style = ctx.graph.opset >= 13;
  // The row of x holding element idx: (o, i), o the dimensions before axis,
  // i those after it (opset >= 13 only).
  auto row = [=](const Indices& idx) {
    Indices ob(idx.begin(), idx.begin() + axis), ia;
    if (new_style) ia.assign(idx.begin() + axis + 1, idx.end());
    return Indices{te::flat_index(before, ob), te::flat_index(after, ia)};
  };
  // exp(x - max) once per element (materialized: the sum and the output
  // both read it), then 1 / sum, so that each element takes a
  // multiplication, not a second exp and a division.
  te::Tensor e = ctx.materialize(te::compute("exp", s, [=](const Indices& idx) { return exp(x(idx) - mx(row(idx))); }));
  te::Tensor sum = te::reduce("sum", {outer, inner}, {len}, te::ReduceKind::Sum, t,
                              [=](const Indices& o, const Indices& r) { return at_view(e, o[0], r[0], o[1]); });
  te::Tensor inv = ctx.materialize(te::compute("inv_sum", {outer, inner}, [=](const Indices& o) { return k(t, 1) / sum(o); }));
  ctx.set_output(0, te::compute("softmax", s, [=](const Indices& idx) { return e(idx) * inv(row(idx)); }));
}

// LogSoftmax (y = x - max - log(sum(exp(x - max)))) and Hardmax over the
// normalized axis, with the opset < 13 coercion to 2-D.
void lower_log_softmax_hardmax(OpContext& ctx) {
  const bool hardmax = ctx.op() == graph::Op::Hardmax;
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0);
  const te::Dims s = x.dims();
  int64_t rank = (int64_t)s.size();
  bool new_style = ctx.graph.opset >= 13;
  int64_t axis = normalize_axis(ctx, n.attr_int("axis", new_style ? -1 : 1), rank);
  // Reduced dims: {axis} (opset >= 13) or all dims from axis on (coerced 2-D).
  ReduceAxes ax;
  ax.keepdims = true;
  ax.reduced.assign(rank, false);
  for (int64_t d = axis; d < (new_style ? axis + 1 : rank); d++) {
    ax.reduced[d] = true;
    ax.rshape.push_back(s[d]);
  }
  te::Dims ks = s;  // the kept-dims shape of the per-row statistics
  for (int64_t d = 0; d < rank; d++)
    if (ax.reduced[d]) ks[d] = Expr(1);
  auto row = [=](const Indices& i) {
    Indices o = i;
    for (int64_t d = 0; d < rank; d++)
      if (ax.reduced[d]) o[d] = Expr(0);
    return o;
  };
  tir::Type t = x.dtype();
  te::Tensor m = ctx.materialize(te::reduce("max", ks, ax.rshape, te::ReduceKind::Max, t,
                                            [=](const Indices& o, const Indices& r) { return x(input_index(ax, o, r)); }));
  if (!hardmax) {
    te::Tensor sum = ctx.materialize(te::reduce("sum", ks, ax.rshape, te::ReduceKind::Sum, t, [=](const Indices& o, const Indices& r) {
      return call(Intrinsic::Exp, x(input_index(ax, o, r)) - m(o));
    }));
    ctx.set_output(0, te::compute(n.op, s, [=](const Indices& i) { return x(i) - m(row(i)) - call(Intrinsic::Log, sum(row(i))); }));
    return;
  }
  // Flat position within the reduced block, and the first position of the max.
  auto pos = [=](const Indices& r) { return te::flat_index(ax.rshape, r); };
  Expr block = te::num_elements(ax.rshape);
  te::Tensor first = ctx.materialize(te::reduce("first", ks, ax.rshape, te::ReduceKind::Min, tir::Int(64),
                                                [=](const Indices& o, const Indices& r) {
                                                  return tir::select(tir::EQ::make(x(input_index(ax, o, r)), m(o)), pos(r), block);
                                                },
                                                block));
  ctx.set_output(0, te::compute(n.op, s, [=](const Indices& i) {
    Indices r;
    for (int64_t d = 0; d < rank; d++)
      if (ax.reduced[d]) r.push_back(i[d]);
    return tir::select(tir::EQ::make(pos(r), first(row(i))), k(t, 1), k(t, 0));
  }));
}

}  // namespace kiln::lower
