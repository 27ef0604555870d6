// Linear quantization: QuantizeLinear, DequantizeLinear (per tensor or per
// axis), DynamicQuantizeLinear.
//
//   QuantizeLinear        y = saturate(round(x / scale) + zero_point)
//   DequantizeLinear      y = (x - zero_point) * scale
//   DynamicQuantizeLinear lo = min(0, min(x)), hi = max(0, max(x)),
//                         scale = (hi - lo) / 255,
//                         zero_point = saturate(round(-lo / scale)),
//                         y = saturate(round(x / scale) + zero_point)     (uint8)
//
// round is round-half-to-even; saturate clamps to the range of the quantized
// type (uint8 [0, 255], int8 [-128, 127]). Arithmetic is float32, as in
// ONNX's reference. Scale and zero point are scalars (or 1-element), or 1-D
// along `axis` (default 1) for per-axis quantization; they may be run-time
// tensors. A zero point absent means 0 (and uint8 for QuantizeLinear).
//
// And kiln.LookupTable (graph/pass_lookup_table.cpp): y = table[x] for a
// uint8 x, table[x + 128] for an int8 x; the table has 256 entries.
#include <cmath>

#include "lower/op_lowering.h"
#include "support/diagnostics.h"

namespace kiln::lower {

Expr round_half_even(const Expr& v) { return tir::Call::make(tir::Intrinsic::RoundEven, {v}); }

namespace {

const tir::Type F32 = tir::Float(32);

// The range of a quantized type.
std::pair<double, double> quant_range(OpContext& ctx, graph::DType t) {
  switch (t) {
    case graph::DType::U8: return {0, 255};
    case graph::DType::I8: return {-128, 127};
    case graph::DType::I16: return {-32768, 32767};
    case graph::DType::I32: return {-2147483648.0, 2147483647.0};
    default: break;
  }
  user_error << ctx.node().describe() << ": quantized type " << graph::dtype_name(t) << " is not supported";
  return {0, 0};
}

// A scale or zero-point operand: one value, or one per position along axis.
struct QParam {
  te::Tensor t;
  bool per_axis = false;
  bool present = false;
  Expr at(const Indices& o, int64_t axis) const {
    if (per_axis) return t({o[axis]});
    return t(Indices(t.ndim(), Expr(0)));
  }
};

QParam qparam(OpContext& ctx, size_t i, const graph::Shape& xs, int64_t& axis) {
  QParam p;
  if (!ctx.has_input(i)) return p;
  p.present = true;
  p.t = ctx.in(i);
  const graph::Shape& s = p.t.shape();
  int64_t n = graph::num_elements(s);
  if (s.size() == 1 && n > 1) {
    axis = normalize_axis(ctx, ctx.node().attr_int("axis", 1), (int64_t)xs.size());
    user_assert(s[0] == xs[axis]) << ctx.node().describe() << ": per-axis input " << i << " has " << s[0]
                                  << " entries for an axis of " << xs[axis];
    p.per_axis = true;
  } else {
    user_assert(n == 1) << ctx.node().describe() << ": input " << i << " must be a scalar or 1-D";
  }
  return p;
}

}  // namespace

// saturate(round(v) + zp) converted to `t`, with v and zp float32. The
// clamp comes first, in float, to [lo - zp, hi - zp] (integers, so rounding
// the clamped value equals clamping the rounded one): what follows is exact
// integer work, and a NaN v (a zero scale) meets max first, which keeps the
// bound, so it saturates to lo as in ONNX Runtime's kernels. For 8- and
// 16-bit results the rounded value converts to int32 and adds zp there
// (x86: one vcvtps2dq, codegen/codegen_llvm.cpp).
Expr quantize(const Expr& v, const Expr& zp, tir::Type t, std::pair<double, double> range) {
  if (range.second - range.first > 65535) {  // int32: clamp below 2^31 (2147483647 is 2^31 in float32)
    Expr q = round_half_even(v) + zp;
    q = tir::Min::make(tir::Max::make(q, tir::make_const(F32, range.first)), tir::make_const(F32, 2147483520.0));
    return tir::cast(t, q);
  }
  Expr lo = tir::make_const(F32, range.first) - zp, hi = tir::make_const(F32, range.second) - zp;
  Expr c = tir::Min::make(tir::Max::make(v, lo), hi);
  const tir::Type I32 = tir::Int(32);
  return tir::cast(t, tir::cast(I32, round_half_even(c)) + tir::cast(I32, zp));
}

void lower_quantize(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0);
  graph::Shape xs = x.shape();
  int64_t axis = 0;
  QParam scale = qparam(ctx, 1, xs, axis), zp = qparam(ctx, 2, xs, axis);
  user_assert(ctx.in_dtype(1) == graph::DType::F32) << n.describe() << ": y_scale must be float32";
  graph::DType ot = ctx.value(ctx.output(0)).dtype;
  auto range = quant_range(ctx, ot);
  tir::Type t = graph::dtype_to_tir(ot);
  ctx.set_output(0, te::compute("quantize", xs, [=](const Indices& o) {
    Expr v = tir::cast(F32, x(o)) / scale.at(o, axis);
    Expr z = zp.present ? tir::cast(F32, zp.at(o, axis)) : tir::make_const(F32, 0);
    return quantize(v, z, t, range);
  }));
}

void lower_dequantize(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0);
  graph::Shape xs = x.shape();
  int64_t axis = 0;
  QParam scale = qparam(ctx, 1, xs, axis), zp = qparam(ctx, 2, xs, axis);
  user_assert(ctx.in_dtype(1) == graph::DType::F32 && ctx.value(ctx.output(0)).dtype == graph::DType::F32)
      << n.describe() << ": x_scale and y must be float32";
  graph::DType it = ctx.in_dtype(0);
  user_assert(it == graph::DType::U8 || it == graph::DType::I8 || it == graph::DType::I32)
      << n.describe() << ": x must be uint8, int8 or int32";
  ctx.set_output(0, te::compute("dequantize", xs, [=](const Indices& o) {
    Expr v = tir::cast(F32, x(o));
    if (zp.present) v = v - tir::cast(F32, zp.at(o, axis));
    return v * scale.at(o, axis);
  }));
}

void lower_dynamic_quantize(OpContext& ctx) {
  user_assert(ctx.in_dtype(0) == graph::DType::F32) << ctx.node().describe() << ": x must be float32";
  te::Tensor x = ctx.in(0);
  graph::Shape xs = x.shape();
  Expr zero = tir::make_const(F32, 0);
  auto all = [x](const Indices&, const Indices& r) { return x(r); };
  te::Tensor lo = ctx.materialize(te::reduce("min", {}, xs, te::ReduceKind::Min, F32, all, zero));
  te::Tensor hi = ctx.materialize(te::reduce("max", {}, xs, te::ReduceKind::Max, F32, all, zero));
  auto range = std::make_pair(0.0, 255.0);
  auto scale = [=]() { return (hi({}) - lo({})) / tir::make_const(F32, 255); };
  auto zero_point = [=]() { return quantize((zero - lo({})) / scale(), zero, tir::UInt(8), range); };
  ctx.set_output(0, te::compute("dynamic_quantize", xs, [=](const Indices& o) {
    return quantize(x(o) / scale(), tir::cast(F32, zero_point()), tir::UInt(8), range);
  }));
  if (ctx.node().outputs.size() > 1 && ctx.node().outputs[1] >= 0)
    ctx.set_output(1, te::compute("scale", {}, [=](const Indices&) { return scale(); }));
  if (ctx.node().outputs.size() > 2 && ctx.node().outputs[2] >= 0)
    ctx.set_output(2, te::compute("zero_point", {}, [=](const Indices&) { return zero_point(); }));
}

void lower_lookup_table(OpContext& ctx) {
  graph::DType it = ctx.in_dtype(0);
  internal_assert((it == graph::DType::U8 || it == graph::DType::I8) && ctx.value(ctx.input(1)).elements() == 256)
      << ctx.node().describe() << ": a lookup table needs an 8-bit index and 256 entries";
  te::Tensor x = ctx.in(0), table = ctx.in(1);
  Expr offset = tir::make_const(tir::Int(64), it == graph::DType::I8 ? 128 : 0);
  ctx.set_output(0, te::compute("lookup_table", x.dims(), [=](const Indices& o) {
    return table({tir::cast(tir::Int(64), x(o)) + offset});
  }));
}

}  // namespace kiln::lower
