// Linear quantization: QuantizeLinear, DequantizeLinear (per tensor, per
// axis or blocked), DynamicQuantizeLinear.
//
//   QuantizeLinear        y = saturate(round(x / scale) + zero_point)
//   DequantizeLinear      y = (x - zero_point) * scale
//   DynamicQuantizeLinear lo = min(0, min(x)), hi = max(0, max(x)),
//                         scale = (hi - lo) / 255,
//                         zero_point = saturate(round(-lo / scale)),
//                         y = saturate(round(x / scale) + zero_point)     (uint8)
//
// round is round-half-to-even; saturate clamps to the range of the quantized
// type (uint8 [0, 255], int8 [-128, 127], int4 [-8, 7], uint2 [0, 3], ...).
// Arithmetic is float32, as in ONNX's reference (x / scale rounded to
// float16 or bfloat16 when x is one, or to QuantizeLinear's `precision`).
// Scale and zero point are scalars (or 1-element), 1-D along `axis`
// (default 1) for per-axis quantization, or of x's rank with dimension
// `axis` ceil(x's / block_size) for blocked quantization (`block_size`);
// they may be run-time tensors. A zero point absent means 0 (and uint8 for
// QuantizeLinear, unless `output_dtype`). Float8 results are x / scale
// rounded to nearest even (saturating unless saturate = 0) and ignore the
// zero point, float4e2m1 ones add it (ONNX's reference); DequantizeLinear
// ignores a float8's or float4e2m1's zero point. The narrow types'
// conversions are lower/narrow_types.h's; scales of float16 or bfloat16
// give results of that type, rounded once.
//
// And kiln.LookupTable (graph/pass_lookup_table.cpp): y = table[x] for a
// uint8 x, table[x + 128] for an int8 x; the table has 256 entries.
#include <cmath>

#include "lower/narrow_types.h"
#include "lower/op_lowering.h"
#include "support/diagnostics.h"

namespace kiln::lower {

Expr round_half_even(const Expr& v) { return tir::Call::make(tir::Intrinsic::RoundEven, {v}); }

namespace {

const tir::Type F32 = tir::Float(32);

// The range of a quantized integer type.
std::pair<double, double> quant_range(OpContext& ctx, graph::DType t) {
  switch (t) {
    case graph::DType::U8: return {0, 255};
    case graph::DType::I8: return {-128, 127};
    case graph::DType::U16: return {0, 65535};
    case graph::DType::I16: return {-32768, 32767};
    case graph::DType::I32: return {-2147483648.0, 2147483647.0};
    default: break;
  }
  if (is_narrow_int(t)) {
    int lo = 0, hi = 0;
    narrow_int_range(t, &lo, &hi);
    return {(double)lo, (double)hi};
  }
  user_error << ctx.node().describe() << ": quantized type " << graph::dtype_name(t) << " is not supported";
  return {0, 0};
}

bool quantized_float(graph::DType t) { return graph::is_narrow_float(t) && t != graph::DType::F8E8M0; }

// A scale or zero-point operand: one value, one per position along axis,
// or one per block of `block` positions along axis (x's rank).
struct QParam {
  te::Tensor t;
  graph::DType dtype = graph::DType::F32;
  bool per_axis = false;
  int64_t block = 0;  // > 0: blocked
  bool present = false;
  Expr at(const Indices& o, int64_t axis) const {
    Expr v;
    if (block > 0) {
      Indices i = o;
      i[(size_t)axis] = o[(size_t)axis] / Expr(block);
      v = t(i);
    } else if (per_axis) {
      v = t({o[axis]});
    } else {
      v = t(Indices(t.ndim(), Expr(0)));
    }
    return element_to_f32(v, dtype);
  }
};

QParam qparam(OpContext& ctx, size_t i, const graph::Shape& xs, int64_t& axis) {
  QParam p;
  if (!ctx.has_input(i)) return p;
  const graph::Node& n = ctx.node();
  p.present = true;
  p.t = ctx.in(i);
  p.dtype = ctx.in_dtype(i);
  const graph::Shape& s = p.t.shape();
  int64_t count = graph::num_elements(s);
  int64_t block = n.attr_int("block_size", 0);
  if (block > 0 && count > 1) {
    axis = normalize_axis(ctx, n.attr_int("axis", 1), (int64_t)xs.size());
    bool fits = s.size() == xs.size();
    for (size_t d = 0; fits && d < s.size(); d++)
      fits = (int64_t)d == axis ? s[d] == (xs[d] + block - 1) / block : s[d] == xs[d];
    user_assert(fits) << n.describe() << ": blocked input " << i << " has shape " << graph::shape_str(s) << " for x "
                      << graph::shape_str(xs) << " in blocks of " << block << " along axis " << axis;
    p.block = block;
  } else if (s.size() == 1 && count > 1) {
    axis = normalize_axis(ctx, n.attr_int("axis", 1), (int64_t)xs.size());
    user_assert(s[0] == xs[axis]) << n.describe() << ": per-axis input " << i << " has " << s[0]
                                  << " entries for an axis of " << xs[axis];
    p.per_axis = true;
  } else {
    user_assert(count == 1) << n.describe() << ": input " << i
                            << " must be a scalar, 1-D, or blocked (block_size) of x's rank";
  }
  return p;
}

// x rounded to float16 or bfloat16 (as float32), or x itself.
Expr round_to(const Expr& x, graph::DType t) {
  if (t == graph::DType::F16) return tir::cast(F32, tir::cast(tir::Float(16), x));
  if (t == graph::DType::BF16) return tir::Call::make(tir::Intrinsic::Bf16ToF32, {tir::Call::make(tir::Intrinsic::F32ToBf16, {x})});
  return x;
}

// ONNX's TensorProto element type codes of QuantizeLinear's `precision`.
graph::DType precision_of(OpContext& ctx, int64_t p, graph::DType dflt) {
  switch (p) {
    case 0: return dflt;
    case 1: return graph::DType::F32;
    case 10: return graph::DType::F16;
    case 16: return graph::DType::BF16;
    default: break;
  }
  user_error << ctx.node().describe() << ": precision " << p << " is not supported (float32, float16 or bfloat16)";
  return dflt;
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
  graph::DType xt = ctx.in_dtype(0), st = ctx.in_dtype(1);
  user_assert(st == graph::DType::F32 || st == graph::DType::F16 || st == graph::DType::BF16)
      << n.describe() << ": y_scale must be float32, float16 or bfloat16";
  graph::DType ot = ctx.value(ctx.output(0)).dtype;
  // x / scale in x's precision (numpy's: float16 / float16 is float16), or
  // the `precision` attribute's: rounded there (float32 division rounded to
  // float16 or bfloat16 is their correctly rounded division).
  graph::DType pt = precision_of(ctx, n.attr_int("precision", 0), xt == graph::DType::F16 || xt == graph::DType::BF16 ? xt : graph::DType::F32);
  auto quotient = [=](const Indices& o) {
    return round_to(round_to(element_to_f32(x(o), xt), pt) / round_to(scale.at(o, axis), pt), pt);
  };
  if (quantized_float(ot)) {
    NarrowOptions opt;
    opt.saturate = n.attr_int("saturate", 1) != 0;
    opt.f64_bits = !ctx.gpu();
    bool add_zp = ot == graph::DType::F4E2M1 && zp.present;  // float8: the zero point is ignored (0)
    ctx.set_output(0, te::compute("quantize", xs, [=](const Indices& o) {
      Expr v = quotient(o);
      return float_to_narrow(add_zp ? v + zp.at(o, axis) : v, ot, opt);
    }));
    return;
  }
  auto range = quant_range(ctx, ot);
  tir::Type t = graph::dtype_to_tir(ot);
  ctx.set_output(0, te::compute("quantize", xs, [=](const Indices& o) {
    Expr z = zp.present ? zp.at(o, axis) : tir::make_const(F32, 0);
    return quantize(quotient(o), z, t, range);
  }));
}

void lower_dequantize(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0);
  graph::Shape xs = x.shape();
  int64_t axis = 0;
  QParam scale = qparam(ctx, 1, xs, axis), zp = qparam(ctx, 2, xs, axis);
  graph::DType it = ctx.in_dtype(0), st = ctx.in_dtype(1), ot = ctx.value(ctx.output(0)).dtype;
  user_assert(st == graph::DType::F32 || st == graph::DType::F16 || st == graph::DType::BF16 || st == graph::DType::F8E8M0)
      << n.describe() << ": x_scale must be float32, float16, bfloat16 or float8e8m0";
  user_assert(ot == graph::DType::F32 || ot == graph::DType::F16 || ot == graph::DType::BF16)
      << n.describe() << ": y must be float32, float16 or bfloat16";
  bool integer = it == graph::DType::U8 || it == graph::DType::I8 || it == graph::DType::U16 || it == graph::DType::I16 ||
                 it == graph::DType::I32 || is_narrow_int(it);
  user_assert(integer || quantized_float(it))
      << n.describe() << ": x must be an integer of up to 32 bits, a float8 or float4e2m1, not " << graph::dtype_name(it);
  bool use_zp = zp.present && integer;  // a float8's or float4's zero point is ignored (ONNX's reference)
  NarrowOptions opt;
  ctx.set_output(0, te::compute("dequantize", xs, [=](const Indices& o) {
    Expr v = element_to_f32(x(o), it);
    if (use_zp) v = v - zp.at(o, axis);
    return f32_to_element(v * scale.at(o, axis), ot, opt);
  }));
}

void lower_dynamic_quantize(OpContext& ctx) {
  user_assert(ctx.in_dtype(0) == graph::DType::F32) << ctx.node().describe() << ": x must be float32";
  te::Tensor x = ctx.in(0);
  const te::Dims xs = x.dims();  // (run-time extents: the reductions run over them)
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
