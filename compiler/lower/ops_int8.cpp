// kilnc's int8 operators, made by the quantize graph pass
// (graph/pass_quantize.cpp; the formats in docs/int8.md):
//
//   kiln.QConv / kiln.QMatMul (x, w, bias, wsum, x_zero_point[, scale[, y_zero_point]])
//     acc = sum x * w + bias[c] - x_zero_point * wsum[c]                     int32
//     y   = clamp(round_half_even(acc * scale[c]) + y_zero_point, kiln_clip_lo, kiln_clip_hi)
//           (float32 y: acc * scale[c]; no scale: y = acc)
//
// Layouts of the convolution:
//   NCHW   x [N, C, H, W], w [M, C/group, KH, KW] int8: int32 products.
//   NCHWc  (kiln_layout=NCHWc, graph/pass_layout.cpp) x [N, C/c, H, W, c], and w
//          - with kiln_int8_dot=1 (c a multiple of 4, not depthwise): int32
//            words [M/m, C/c, KH, KW, c/4, m], each four input channels of
//            one output channel. The reduction's step is one dot product of
//            four input bytes (one word, broadcast) with a vector of m words:
//            one vpdpbusd (x86 VNNI), usdot or sdot (AArch64) per vector;
//          - else int8 [M/m, C/c, KH, KW, c, m] (depthwise [M/m, 1, KH, KW, 1, m]).
// and of the matmul: w [K, N] int8, or with kiln_int8_dot=1 panels of words
// [N/nb, K4/4, nb] (K4: K rounded up to a multiple of 4, zero weights past K).
//
// The dot product reads x as unsigned bytes (U8S8) or signed ones (S8S8,
// AArch64 without i8mm); x of the other type is read offset by 128 (delta,
// e.g. int8 x as x + 128 on x86) and the epilogue subtracts delta * wsum.
// Padding reads the zero point (as every real input, offset by delta).
#include "lower/op_lowering.h"
#include "lower/schedules_cpu.h"
#include "support/diagnostics.h"

namespace kiln::lower {
namespace {

const tir::Type I32 = tir::Int(32);

// The operands every int8 operator shares, and its epilogue.
struct Int8Operands {
  te::Tensor x, w, bias, wsum, x_zp, scale, y_zp;
  graph::DType x_type = graph::DType::U8, y_type = graph::DType::U8;
  tir::Intrinsic dot = tir::Intrinsic::DotU8S8;  // the dot product's signedness
  int64_t delta = 0;                             // added to x before the dot product
  int64_t lo = 0, hi = 255;                      // the output clamp (quantized y)

  explicit Int8Operands(OpContext& ctx) {
    const graph::Node& n = ctx.node();
    x = ctx.in(0), w = ctx.in(1), bias = ctx.in(2), wsum = ctx.in(3), x_zp = ctx.in(4);
    if (ctx.has_input(5)) scale = ctx.in(5);
    if (ctx.has_input(6)) y_zp = ctx.in(6);
    x_type = ctx.in_dtype(0);
    y_type = ctx.value(ctx.output(0)).dtype;
    internal_assert(x_type == graph::DType::U8 || x_type == graph::DType::I8) << n.describe() << ": x must be 8-bit";
    bool s8 = ctx.vector().int8_dot == Int8Dot::S8S8;
    dot = s8 ? tir::Intrinsic::DotS8S8 : tir::Intrinsic::DotU8S8;
    delta = s8 && x_type == graph::DType::U8 ? -128 : !s8 && x_type == graph::DType::I8 ? 128 : 0;
    lo = n.attr_int("kiln_clip_lo", y_type == graph::DType::I8 ? -128 : 0);
    hi = n.attr_int("kiln_clip_hi", y_type == graph::DType::I8 ? 127 : 255);
  }

  Expr zx() const { return x_zp(Indices(x_zp.ndim(), Expr(0))); }

  // x's byte as the dot product reads it (0..255), from an element of x.
  Expr byte(const Expr& v) const {
    Expr i = tir::cast(I32, v);
    if (delta) i = i + Expr(tir::make_const(I32, delta));
    if (delta || x_type == graph::DType::I8) i = tir::cast(I32, tir::cast(tir::UInt(8), i));
    return i;
  }
  // Four bytes as one little-endian int32 word.
  static Expr word(const Expr& b0, const Expr& b1, const Expr& b2, const Expr& b3) {
    return b0 + b1 * tir::make_const(I32, 1 << 8) + b2 * tir::make_const(I32, 1 << 16) +
           b3 * tir::make_const(I32, 1 << 24);
  }
  // x's element as a plain int32 (for the int32-product forms: no delta).
  static Expr value(const Expr& v) { return tir::cast(I32, v); }

  // y from the accumulator of channel c. `dotted`: acc came from dot
  // products (x offset by delta).
  Expr epilogue(const Expr& acc, const Expr& c, bool dotted) const {
    Expr zxd = tir::cast(I32, zx());
    if (dotted && delta) zxd = zxd + Expr(tir::make_const(I32, delta));
    // bias - zx * wsum first: one term per channel, computed once per tile.
    Expr v = acc + (bias({c}) - zxd * wsum({c}));
    if (!scale.defined()) return v;
    Expr f = tir::cast(tir::Float(32), v) * scale({c});
    if (!y_zp.defined()) return f;
    Expr zy = tir::cast(tir::Float(32), y_zp(Indices(y_zp.ndim(), Expr(0))));
    return quantize(f, zy, graph::dtype_to_tir(y_type), {(double)lo, (double)hi});
  }
};

void lower_qconv_blocked(OpContext& ctx, const Int8Operands& q) {
  const graph::Node& n = ctx.node();
  te::Tensor x = q.x, w = q.w;
  graph::Shape xs = x.shape(), ws = w.shape(), os = ctx.out_shape(0);
  internal_assert(xs.size() == 5 && ws.size() == 6 && os.size() == 5) << n.describe() << ": bad blocked shapes";
  bool depthwise = n.attr_int("group", 1) > 1;
  bool dotted = n.attr_int("kiln_int8_dot", 0) != 0;
  std::vector<int64_t> kernel = {ws[2], ws[3]};
  std::vector<int64_t> strides = n.attr_ints("strides", {1, 1}), dilations = n.attr_ints("dilations", {1, 1});
  std::vector<int64_t> pads = static_pads(spatial_pads(ctx, xs, os, kernel, strides, dilations));
  int64_t m = os[4];
  Expr pad = q.zx();
  te::Tensor acc = te::reduce("qconv_nchwc", os, {ws[1], ws[2], ws[3], ws[4]}, te::ReduceKind::Sum, I32,
                              [=](const Indices& o, const Indices& r) {
    Expr ih = o[2] * Expr(strides[0]) - Expr(pads[0]) + r[1] * Expr(dilations[0]);
    Expr iw = o[3] * Expr(strides[1]) - Expr(pads[1]) + r[2] * Expr(dilations[1]);
    Expr wv = w({o[1], r[0], r[1], r[2], r[3], o[4]});
    if (dotted) {
      // One bounds check per word (its four channels share the pixel): in
      // the interior, where loop partitioning drops the check, the word is
      // one 32-bit load; in the padding, four zero points.
      Expr inside = in_range({ih, iw}, {0, 0}, {xs[2], xs[3]});
      Expr ch = tir::clamp(ih, Expr(0), Expr(xs[2] - 1)), cw = tir::clamp(iw, Expr(0), Expr(xs[3] - 1));
      Expr b[4];
      for (int k = 0; k < 4; k++) b[k] = q.byte(x({o[0], r[0], ch, cw, r[3] * Expr(4) + Expr(k)}));
      Expr zb = q.byte(pad);
      Expr word = tir::select(inside, Int8Operands::word(b[0], b[1], b[2], b[3]), Int8Operands::word(zb, zb, zb, zb));
      return tir::Call::make(q.dot, {word, wv});
    }
    Indices xi = depthwise ? Indices{o[0], o[1], ih, iw, o[4]} : Indices{o[0], r[0], ih, iw, r[3]};
    return Int8Operands::value(padded_read(x, xi, pad)) * tir::cast(I32, wv);
  });
  int registers = ctx.vector().registers;
  tune::Tuning* tuning = ctx.tuning();
  std::string variant = tune::conv_variant(strides, dilations) + (depthwise ? " dw" : "") + (dotted ? " dot" : "");
  ctx.schedule_reduction(acc, [registers, w, depthwise, tuning, variant](te::Stage& s) {
    schedule_conv2d_blocked_cpu(s, w, registers, depthwise, tuning, variant);
  });
  ctx.set_output(0, te::compute("qconv_out", os, [=](const Indices& o) {
    return q.epilogue(acc(o), o[1] * Expr(m) + o[4], dotted);
  }));
}

}  // namespace

void lower_qconv(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  Int8Operands q(ctx);
  if (n.attr_string("kiln_layout", "") == "NCHWc") return lower_qconv_blocked(ctx, q);
  te::Tensor x = q.x, w = q.w;
  const graph::Shape& xs = x.shape();
  const graph::Shape& ws = w.shape();
  const graph::Shape& os = ctx.out_shape(0);
  user_assert(xs.size() == 4 && ws.size() == 4) << n.describe() << ": int8 convolutions are 2-D";
  int64_t group = n.attr_int("group", 1);
  int64_t C = xs[1], M = ws[0], Cg = ws[1];
  user_assert(group >= 1 && C % group == 0 && M % group == 0 && Cg * group == C)
      << n.describe() << ": group " << group << " does not divide channels " << C << " and filters " << M;
  std::vector<int64_t> kernel = {ws[2], ws[3]};
  std::vector<int64_t> strides = n.attr_ints("strides", {1, 1}), dilations = n.attr_ints("dilations", {1, 1});
  user_assert(strides.size() == 2 && dilations.size() == 2) << n.describe() << ": strides/dilations rank mismatch";
  std::vector<int64_t> pads = static_pads(spatial_pads(ctx, xs, os, kernel, strides, dilations));
  int64_t Mg = M / group;
  Expr pad = q.zx();
  te::Tensor acc = te::reduce("qconv", os, {Cg, kernel[0], kernel[1]}, te::ReduceKind::Sum, I32,
                              [=](const Indices& o, const Indices& r) {
    Expr ih = o[2] * Expr(strides[0]) - Expr(pads[0]) + r[1] * Expr(dilations[0]);
    Expr iw = o[3] * Expr(strides[1]) - Expr(pads[1]) + r[2] * Expr(dilations[1]);
    Expr xv = padded_read(x, {o[0], (o[1] / Expr(Mg)) * Expr(Cg) + r[0], ih, iw}, pad);
    return Int8Operands::value(xv) * tir::cast(I32, w({o[1], r[0], r[1], r[2]}));
  });
  bool pointwise = kernel == std::vector<int64_t>{1, 1} && strides == std::vector<int64_t>{1, 1} &&
                   pads == std::vector<int64_t>{0, 0, 0, 0};
  ctx.schedule_reduction(acc, pointwise ? schedule_conv1x1_cpu : schedule_conv2d_cpu);
  ctx.set_output(0, te::compute("qconv_out", os, [=](const Indices& o) { return q.epilogue(acc(o), o[1], false); }));
}

void lower_qmatmul(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  Int8Operands q(ctx);
  te::Tensor x = q.x, w = q.w;
  const graph::Shape& xs = x.shape();
  const graph::Shape& os = ctx.out_shape(0);
  user_assert(xs.size() >= 2) << n.describe() << ": the int8 matmul's input must be at least 2-D";
  int64_t K = xs.back(), r = (int64_t)os.size();
  int64_t nb = n.attr_int("kiln_packed_b", 0);
  bool dotted = n.attr_int("kiln_int8_dot", 0) != 0;
  internal_assert(!dotted || nb) << n.describe() << ": dot-product weights come packed";
  int64_t steps = dotted ? w.shape()[1] : K;  // reduction steps: words of four (K4 / 4) or elements
  Expr zero = tir::make_const(graph::dtype_to_tir(q.x_type), 0);
  te::Tensor acc = te::reduce("qmatmul", os, {steps}, te::ReduceKind::Sum, I32, [=](const Indices& o, const Indices& rr) {
    Indices xi(o.begin(), o.end() - 1);
    Expr j = o[(size_t)r - 1];
    if (dotted) {
      Expr b[4];
      for (int k = 0; k < 4; k++) {
        Indices e = xi;
        e.push_back(rr[0] * Expr(4) + Expr(k));
        b[k] = q.byte(padded_read(x, e, zero));  // past K: the weights are zero
      }
      return tir::Call::make(q.dot, {Int8Operands::word(b[0], b[1], b[2], b[3]), w({j / Expr(nb), rr[0], j % Expr(nb)})});
    }
    xi.push_back(rr[0]);
    Expr wv = nb ? w({j / Expr(nb), rr[0], j % Expr(nb)}) : w({rr[0], j});
    return Int8Operands::value(x(xi)) * tir::cast(I32, wv);
  });
  VectorInfo target = ctx.vector();
  tune::Tuning* tuning = ctx.tuning();
  std::string variant = std::string(nb ? "packed" : "") + (dotted ? " dot" : "");
  ctx.schedule_reduction(acc, [target, tuning, variant](te::Stage& s) { schedule_matmul_cpu(s, target, tuning, variant); });
  ctx.set_output(0, te::compute("qmatmul_out", os, [=](const Indices& o) {
    return q.epilogue(acc(o), o[(size_t)r - 1], dotted);
  }));
}

}  // namespace kiln::lower
