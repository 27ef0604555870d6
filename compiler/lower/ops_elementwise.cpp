// Elementwise operators: unary activations, Round, broadcasting binary
// arithmetic, Clip (float and integer), Shrink and inference-mode
// BatchNormalization.
#include <cmath>
#include <cstring>

#include "lower/expr_helpers.h"
#include "lower/op_lowering.h"
#include "support/diagnostics.h"

namespace kiln::lower {
namespace {

using graph::Op;


// The formula of a unary activation of lower_unary.
Expr unary_formula(Op op, const graph::Node& n, const Expr& x) {
  switch (op) {
    case Op::Relu: return tir::max(x, k(x, 0));
    case Op::Sigmoid: return k(x, 1) / (k(x, 1) + call(tir::Intrinsic::Exp, k(x, 0) - x));
    case Op::Exp: return call(tir::Intrinsic::Exp, x);
    case Op::Sqrt: return call(tir::Intrinsic::Sqrt, x);
    case Op::Abs: return call(tir::Intrinsic::Abs, x);
    case Op::Floor: return call(tir::Intrinsic::Floor, x);
    case Op::Ceil: return call(tir::Intrinsic::Ceil, x);
    case Op::Neg: return k(x, 0) - x;
    case Op::Reciprocal: return k(x, 1) / x;
    case Op::LeakyRelu: return tir::select(x < k(x, 0), x * k(x, n.attr_float("alpha", 0.01)), x);
    case Op::HardSigmoid:
      return tir::clamp(x * k(x, n.attr_float("alpha", 0.2)) + k(x, n.attr_float("beta", 0.5)), k(x, 0),
                        k(x, 1));
    case Op::HardSwish: return x * tir::clamp(x * k(x, 1.0 / 6.0) + k(x, 0.5), k(x, 0), k(x, 1));
    default: internal_error << n.describe() << ": not a unary activation";
  }
  return Expr();
}

bool is_signed_int(graph::DType dt) {
  return dt == graph::DType::I8 || dt == graph::DType::I16 || dt == graph::DType::I32 || dt == graph::DType::I64;
}
bool is_unsigned_int(graph::DType dt) {
  return dt == graph::DType::U8 || dt == graph::DType::U16 || dt == graph::DType::U32 || dt == graph::DType::U64;
}

void lower_binary(OpContext& ctx, bool ints_ok, Expr (*f)(Expr, Expr)) {
  const graph::Node& n = ctx.node();
  graph::DType dt = ctx.in_dtype(0);
  user_assert(ctx.in_dtype(1) == dt && ctx.value(ctx.output(0)).dtype == dt)
      << n.describe() << ": inputs and output must have the same element type";
  bool is_float = dt == graph::DType::F32 || dt == graph::DType::F64;
  bool is_int = is_signed_int(dt) || is_unsigned_int(dt);
  user_assert(is_float || (ints_ok && is_int)) << n.describe() << ": element type " << graph::dtype_name(dt)
                                               << " is not supported for " << n.op << " yet";
  te::Tensor a = ctx.in(0), b = ctx.in(1);
  ctx.set_output(0, te::compute(n.op, ctx.out_dims(0), [=](const Indices& i) {
    return f(a(broadcast_index(a.dims(), i)), b(broadcast_index(b.dims(), i)));
  }));
}

// A scalar bound of Clip, of x's element type: an attribute (opset < 11), a
// constant input, or a run-time scalar input; undefined when absent.
Expr clip_bound(OpContext& ctx, size_t input, const char* attr, tir::Type t) {
  const graph::Node& n = ctx.node();
  if (ctx.graph.opset < 11) return n.has_attr(attr) ? tir::make_const(t, n.attr_float(attr, 0)) : Expr();
  if (!ctx.has_input(input)) return Expr();
  const graph::Value& v = ctx.value(ctx.input(input));
  user_assert(v.elements() == 1) << n.describe() << ": Clip bounds must be scalars";
  user_assert(v.dtype == ctx.in_dtype(0)) << n.describe() << ": Clip bounds must have the input's element type";
  if (v.is_constant()) return tir::make_const(t, v.const_at(0));
  te::Tensor b = ctx.in(input);
  return b(Indices(b.ndim(), Expr(0)));
}

}  // namespace

// y = min(max(x, lo), hi), for float and integer types.
void lower_clip(OpContext& ctx) {
  graph::DType dt = ctx.in_dtype(0);
  user_assert(dt != graph::DType::Bool && dt != graph::DType::F16)
      << ctx.node().describe() << ": element type " << graph::dtype_name(dt) << " is not supported for Clip";
  te::Tensor x = ctx.in(0);
  Expr lo = clip_bound(ctx, 1, "min", x.dtype());
  Expr hi = clip_bound(ctx, 2, "max", x.dtype());
  ctx.set_output(0, te::compute("clip", x.dims(), [=](const Indices& i) {
    Expr v = x(i);
    if (lo.defined()) v = tir::max(v, lo);
    if (hi.defined()) v = tir::min(v, hi);
    return v;
  }));
}

// Shrink: y = x < -lambd ? x + bias : x > lambd ? x - bias : 0 (integers in float64).
void lower_shrink(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  graph::DType dt = ctx.in_dtype(0);
  user_assert(dt != graph::DType::Bool && dt != graph::DType::F16)
      << n.describe() << ": element type " << graph::dtype_name(dt) << " is not supported for Shrink";
  te::Tensor x = ctx.in(0);
  double lambd = n.attr_float("lambd", 0.5), bias = n.attr_float("bias", 0.0);
  tir::Type t = x.dtype(), ct = t.is_float() ? t : tir::Float(64);
  ctx.set_output(0, te::compute("shrink", x.dims(), [=](const Indices& i) {
    Expr v = tir::cast(ct, x(i));
    Expr zero = tir::make_const(ct, 0);
    Expr r = tir::select(v < tir::make_const(ct, -lambd), v + tir::make_const(ct, bias),
                         tir::select(v > tir::make_const(ct, lambd), v - tir::make_const(ct, bias), zero));
    return tir::cast(t, r);
  }));
}

namespace {

std::vector<uint8_t> float_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> r(v.size() * 4);
  memcpy(r.data(), v.data(), r.size());
  return r;
}

}  // namespace

// y = (x - mean) / sqrt(var + eps) * scale + bias, per channel (axis 1).
// With constant statistics the per-channel factors are folded at compile
// time into two constants a and b: y = x * a + b.
void lower_batchnorm(OpContext& ctx) {
  ctx.require_float32();
  const graph::Node& n = ctx.node();
  if (n.attr_int("training_mode", 0) != 0) return lower_batchnorm_training(ctx);
  user_assert(n.outputs.size() == 1 || n.outputs[1] < 0)
      << n.describe() << ": the running mean and variance outputs need training_mode=1";
  te::Tensor x = ctx.in(0);
  const te::Dims s = x.dims();
  user_assert(s.size() >= 2) << n.describe() << ": input must be at least 2-D";
  int64_t C = static_extent(s[1], "the channel count");
  double eps = n.attr_float("epsilon", 1e-5);
  bool all_const = true;
  for (int i = 1; i <= 4; i++) {
    all_const &= ctx.value(ctx.input(i)).is_constant();
    user_assert(ctx.value(ctx.input(i)).elements() == C) << n.describe() << ": input " << i << " must have C elements";
  }
  if (all_const) {
    std::vector<float> a(C), b(C);
    for (int64_t c = 0; c < C; c++) {
      double scale = ctx.value(ctx.input(1)).const_at(c) / std::sqrt(ctx.value(ctx.input(4)).const_at(c) + eps);
      a[c] = (float)scale;
      b[c] = (float)(ctx.value(ctx.input(2)).const_at(c) - ctx.value(ctx.input(3)).const_at(c) * scale);
    }
    te::Tensor at = ctx.tensor_of(ctx.graph.add_constant(n.name + ".bn_scale", graph::DType::F32, {C}, float_bytes(a)));
    te::Tensor bt = ctx.tensor_of(ctx.graph.add_constant(n.name + ".bn_shift", graph::DType::F32, {C}, float_bytes(b)));
    ctx.set_output(0, te::compute("batchnorm", s, [=](const Indices& i) { return x(i) * at({i[1]}) + bt({i[1]}); }));
    return;
  }
  te::Tensor scale = ctx.in(1), bias = ctx.in(2), mean = ctx.in(3), var = ctx.in(4);
  ctx.set_output(0, te::compute("batchnorm", s, [=](const Indices& i) {
    Indices c = {i[1]};
    Expr inv = Expr(1.0f) / call(tir::Intrinsic::Sqrt, var(c) + Expr((float)eps));
    return (x(i) - mean(c)) * inv * scale(c) + bias(c);
  }));
}

void lower_unary(OpContext& ctx) {
  ctx.require_float();  // (float64: the transcendental intrinsics compute in float32, code generation's math)
  te::Tensor x = ctx.in(0);
  const graph::Node& n = ctx.node();
  Op op = ctx.op();
  ctx.set_output(0, te::compute(n.op, x.dims(), [x, op, n](const Indices& i) { return unary_formula(op, n, x(i)); }));
}

// Round half to even (float types).
void lower_round(OpContext& ctx) {
  ctx.require_float();
  te::Tensor x = ctx.in(0);
  ctx.set_output(0, te::compute("round", x.dims(), [x](const Indices& i) { return round_half_even(x(i)); }));
}

namespace {

// 2^y in y's unsigned type, 0 for a shift of the whole width or more:
// a product of y's bits' powers (no shift instruction in the loop IR).
Expr power_of_two(const Expr& y) {
  const tir::Type t = y.type();
  Expr p = tir::make_const(t, 1);
  for (int k = 0; (1 << k) < t.bits; k++) {
    Expr bit = tir::EQ::make((y / tir::make_const(t, (double)(1 << k))) % tir::make_const(t, 2), tir::make_const(t, 1));
    p = p * tir::select(bit, tir::make_const(t, std::ldexp(1.0, 1 << k)), tir::make_const(t, 1));
  }
  return tir::select(y < tir::make_const(t, t.bits), p, tir::make_const(t, 0));
}
Expr shift_left(Expr x, Expr y) { return x * power_of_two(y); }  // wraps, as << does
Expr shift_right(Expr x, Expr y) {
  Expr p = power_of_two(y);
  return tir::select(tir::EQ::make(p, tir::make_const(x.type(), 0)), tir::make_const(x.type(), 0),
                     x / tir::max(p, tir::make_const(x.type(), 1)));
}
// Signed integers (opset 25), as ONNX's reference: in the unsigned type of
// the same width (a negative shift is then past the width). Left: the bits
// shifted, 0 past the width. Right: arithmetic, ~(~x >> y) for a negative
// x, so -1 or 0 past the width.
Expr signed_shift(Expr x, Expr y, bool left) {
  const tir::Type t = x.type(), u = tir::UInt(t.bits);
  Expr ux = tir::Cast::make(u, x), uy = tir::Cast::make(u, y);
  if (left) return tir::Cast::make(t, shift_left(ux, uy));
  // ~v as (0 - v) - 1 in the unsigned type, which wraps (no all-ones constant of 64 bits).
  auto complement = [u](Expr v) { return tir::make_const(u, 0) - v - tir::make_const(u, 1); };
  Expr negative = tir::Cast::make(t, complement(shift_right(complement(ux), uy)));
  return tir::select(x < tir::make_const(t, 0), negative, tir::Cast::make(t, shift_right(ux, uy)));
}
Expr signed_shift_left(Expr x, Expr y) { return signed_shift(x, y, true); }
Expr signed_shift_right(Expr x, Expr y) { return signed_shift(x, y, false); }

// BitwiseAnd, BitwiseOr, BitwiseXor (broadcasting) and BitwiseNot: the
// two's complement bits of integers of one type.
void lower_bitwise(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  graph::DType dt = ctx.in_dtype(0);
  user_assert(is_signed_int(dt) || is_unsigned_int(dt))
      << n.describe() << ": " << n.op << " takes integers (int8 .. uint64), not " << graph::dtype_name(dt);
  switch (ctx.op()) {
    case Op::BitwiseAnd: return lower_binary(ctx, true, [](Expr a, Expr b) { return a & b; });
    case Op::BitwiseOr: return lower_binary(ctx, true, [](Expr a, Expr b) { return a | b; });
    case Op::BitwiseXor: return lower_binary(ctx, true, [](Expr a, Expr b) { return a ^ b; });
    default: {
      user_assert(ctx.value(ctx.output(0)).dtype == dt) << n.describe() << ": the output must have the input's element type";
      te::Tensor x = ctx.in(0);
      ctx.set_output(0, te::compute(n.op, x.dims(), [x](const Indices& i) { return ~x(i); }));
    }
  }
}

}  // namespace

// Add, Sub, Mul, Div (integer Div truncates toward zero, as ONNX's), BitShift
// (integers; signed ones since opset 25), the Bitwise operators (integers).
void lower_arithmetic(OpContext& ctx) {
  switch (ctx.op()) {
    case Op::Add: return lower_binary(ctx, true, [](Expr a, Expr b) { return a + b; });
    case Op::Sub: return lower_binary(ctx, true, [](Expr a, Expr b) { return a - b; });
    case Op::Mul: return lower_binary(ctx, true, [](Expr a, Expr b) { return a * b; });
    case Op::Div:
      if (ctx.in_dtype(0) == graph::DType::F32 || ctx.in_dtype(0) == graph::DType::F64)
        return lower_binary(ctx, false, [](Expr a, Expr b) { return a / b; });
      return lower_binary(ctx, true, [](Expr a, Expr b) { return trunc_divide(a, b); });
    case Op::BitShift: {
      graph::DType dt = ctx.in_dtype(0);
      bool is_unsigned = is_unsigned_int(dt), is_signed = is_signed_int(dt);
      user_assert(is_unsigned || is_signed) << ctx.node().describe() << ": BitShift takes integers";
      bool left = ctx.node().attr_string("direction", "") == "LEFT";
      user_assert(left || ctx.node().attr_string("direction", "") == "RIGHT")
          << ctx.node().describe() << ": direction must be \"LEFT\" or \"RIGHT\"";
      if (is_signed) return lower_binary(ctx, true, left ? signed_shift_left : signed_shift_right);
      return lower_binary(ctx, true, left ? shift_left : shift_right);
    }
    case Op::BitwiseAnd:
    case Op::BitwiseOr:
    case Op::BitwiseXor:
    case Op::BitwiseNot: return lower_bitwise(ctx);
    default: internal_error << ctx.node().describe() << ": not an arithmetic operator";
  }
}

}  // namespace kiln::lower
