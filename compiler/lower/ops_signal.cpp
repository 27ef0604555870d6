// Signal processing: the window functions HannWindow, HammingWindow and
// BlackmanWindow (opset 17).
//
// A window of `size` samples is a sum of cosines of 2 pi n / N, with N =
// size (periodic = 1, the default: one period of a longer window, for
// spectral analysis) or size - 1 (symmetric, for filter design):
//   Hann      0.5 - 0.5 cos(x)
//   Hamming   25/46 - 21/46 cos(x)
//   Blackman  0.42 - 0.5 cos(x) + 0.08 cos(2x)
// computed in float32 and cast to output_datatype. The size must be a
// compile-time constant.
#include <cmath>

#include "lower/op_lowering.h"
#include "support/diagnostics.h"

namespace kiln::lower {

void lower_window(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const graph::Shape y = ctx.out_shape(0);
  user_assert(y.size() == 1) << n.describe() << ": the window must be 1-D";
  const int64_t size = y[0];
  // The output's length is the size input's value: it must be known here
  // (a declared output shape alone would let another size run unnoticed).
  const graph::Value& sv = ctx.value(ctx.input(0));
  user_assert(sv.is_constant() && sv.elements() == 1)
      << n.describe() << ": the window size must be a compile-time constant (an initializer, or --freeze-input)";
  user_assert(sv.const_int_at(0) == size) << n.describe() << ": the window size " << sv.const_int_at(0)
                                          << " differs from the output's length " << size;
  const bool periodic = n.attr_int("periodic", 1) != 0;
  const double period = (double)(periodic ? size : size - 1);
  const tir::Type f32 = tir::Float(32), out = graph::dtype_to_tir(ctx.value(ctx.output(0)).dtype);
  user_assert(out.is_float() || out.is_int() || out.is_uint())
      << n.describe() << ": output_datatype must be a number type";
  // cos(k x) with x = 2 pi n / N, and the window's coefficients a_k.
  std::vector<double> a;
  switch (ctx.op()) {
    case graph::Op::HannWindow: a = {0.5, -0.5}; break;
    case graph::Op::HammingWindow: a = {25.0 / 46.0, -21.0 / 46.0}; break;
    case graph::Op::BlackmanWindow: a = {0.42, -0.5, 0.08}; break;
    default: internal_error << n.describe() << ": not a window function";
  }
  ctx.set_output(0, te::compute("window", y, [=](const Indices& i) {
    Expr x = tir::cast(f32, i[0]) * tir::make_const(f32, 2.0 * M_PI / period);
    Expr w = tir::make_const(f32, a[0]);
    for (size_t k = 1; k < a.size(); k++)
      w = w + tir::make_const(f32, a[k]) * tir::Call::make(tir::Intrinsic::Cos, {x * tir::make_const(f32, (double)k)});
    return tir::cast(out, w);
  }));
}

}  // namespace kiln::lower
