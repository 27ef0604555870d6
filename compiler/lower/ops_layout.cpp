// The layout conversions the layout graph pass inserts (graph/pass_layout.cpp):
//   kiln.ToBlocked{block=c}: [N, C, H, W] -> [N, C/c, H, W, c], y[n, co, h, w, ci] = x[n, co*c + ci, h, w]
//   kiln.FromBlocked:        [N, C/c, H, W, c] -> [N, C, H, W], the inverse.
// C/c rounds up: channels past C are padding (zero when converted in,
// dropped when converted out).
#include "lower/op_lowering.h"
#include "support/diagnostics.h"

namespace kiln::lower {

void lower_to_blocked(OpContext& ctx) {
  te::Tensor x = ctx.in(0);
  graph::Shape os = ctx.out_shape(0);
  internal_assert(x.shape().size() == 4 && os.size() == 5 && os[1] * os[4] >= x.shape()[1])
      << ctx.node().describe() << ": bad shapes for a blocked layout";
  int64_t c = os[4];
  bool padding = os[1] * os[4] != x.shape()[1];
  ctx.set_output(0, te::compute("to_nchwc", os, [x, c, padding](const Indices& o) {
    Indices at = {o[0], o[1] * Expr(c) + o[4], o[2], o[3]};
    return padding ? padded_read(x, at, tir::make_const(x.dtype(), 0)) : x(at);
  }));
}

void lower_from_blocked(OpContext& ctx) {
  te::Tensor x = ctx.in(0);
  graph::Shape xs = x.shape(), os = ctx.out_shape(0);
  internal_assert(xs.size() == 5 && os.size() == 4 && xs[1] * xs[4] >= os[1])
      << ctx.node().describe() << ": bad shapes for a blocked layout";
  int64_t c = xs[4];
  ctx.set_output(0, te::compute("from_nchwc", os, [x, c](const Indices& o) {
    return x({o[0], o[1] / Expr(c), o[2], o[3], o[1] % Expr(c)});
  }));
}

}  // namespace kiln::lower
