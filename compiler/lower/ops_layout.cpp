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
  te::Dims os = ctx.out_dims(0);
  int64_t channels = static_extent(x.dims().at(1), "the channel count");
  int64_t c = static_extent(os.at(4), "the channel block"), blocks = static_extent(os.at(1), "the channel blocks");
  internal_assert(x.ndim() == 4 && os.size() == 5 && blocks * c >= channels)
      << ctx.node().describe() << ": bad shapes for a blocked layout";
  bool padding = blocks * c != channels;
  ctx.set_output(0, te::compute("to_nchwc", os, [x, c, padding](const Indices& o) {
    Indices at = {o[0], o[1] * Expr(c) + o[4], o[2], o[3]};
    return padding ? padded_read(x, at, tir::make_const(x.dtype(), 0)) : x(at);
  }));
}

void lower_from_blocked(OpContext& ctx) {
  te::Tensor x = ctx.in(0);
  te::Dims xs = x.dims(), os = ctx.out_dims(0);
  internal_assert(xs.size() == 5 && os.size() == 4) << ctx.node().describe() << ": bad shapes for a blocked layout";
  int64_t c = static_extent(xs[4], "the channel block");
  ctx.set_output(0, te::compute("from_nchwc", os, [x, c](const Indices& o) {
    return x({o[0], o[1] / Expr(c), o[2], o[3], o[1] % Expr(c)});
  }));
}

}  // namespace kiln::lower
