// Elementwise math beyond the basic activations: more unary functions,
// comparisons and logic (bool results), Pow, Mod, PRelu, Where, the variadic
// Min/Max/Sum/Mean, Cast, CastLike and BitCast, and integer Div (truncating,
// as ONNX specifies).
//
// Bool tensors are stored as one byte; reads convert to Bool with != 0 and
// results are converted back when stored (OpContext handles the store).
#include <cmath>

#include "lower/expr_helpers.h"
#include "lower/narrow_types.h"
#include "lower/op_lowering.h"
#include "lower/serial_tir.h"
#include "support/diagnostics.h"

namespace kiln::lower {
namespace {

using graph::Op;
using tir::Intrinsic;

bool is_float(graph::DType t) { return t == graph::DType::F32 || t == graph::DType::F64 || t == graph::DType::F16; }
bool is_bool(graph::DType t) { return t == graph::DType::Bool; }

// Reads input i at a broadcast index, with bools as Bool.
Expr read(const te::Tensor& t, graph::DType dt, const Indices& out_idx) {
  Expr v = t(broadcast_index(t.dims(), out_idx));
  return is_bool(dt) ? tir::cast(tir::Bool(), v) : v;
}

// out = f(inputs...) with numpy broadcasting over all inputs.
void lower_nary(OpContext& ctx, const std::function<Expr(const std::vector<Expr>&)>& f) {
  const graph::Node& n = ctx.node();
  std::vector<te::Tensor> ins;
  std::vector<graph::DType> dts;
  for (size_t i = 0; i < n.inputs.size(); i++) {
    if (!ctx.has_input(i)) continue;
    ins.push_back(ctx.in(i));
    dts.push_back(ctx.in_dtype(i));
  }
  ctx.set_output(0, te::compute(n.op, ctx.out_dims(0), [=](const Indices& idx) {
    std::vector<Expr> v;
    for (size_t i = 0; i < ins.size(); i++) v.push_back(read(ins[i], dts[i], idx));
    return f(v);
  }));
}

void require(OpContext& ctx, bool ok, const char* what) {
  user_assert(ok) << ctx.node().describe() << ": element type " << graph::dtype_name(ctx.in_dtype(0))
                  << " is not supported (" << what << ")";
}

// Truncating integer division built from the IR's floor division.
Expr trunc_div(const Expr& a, const Expr& b) {
  Expr q = a / b, m = a % b;
  Expr zero = k(a, 0);
  Expr fix = tir::NE::make(m, zero) && tir::NE::make(a < zero, b < zero);
  return tir::select(fix, q + k(a, 1), q);
}

// x^e for an integer x of type t and an int64 e, by squaring (wrapping like
// numpy's integer power); a negative e gives the truncated 1 / x^-e.
Expr int_pow(const Expr& x, const Expr& e_in, tir::Type t) {
  static int counter = 0;
  std::string id = std::to_string(counter++);
  Expr e = tir::Var::make(tir::Int(64), "pow_e" + id);
  const int bits = 63;
  std::vector<Expr> b, r;
  for (int k = 0; k <= bits; k++) {
    b.push_back(tir::Var::make(t, "pow_b" + id + "_" + std::to_string(k)));
    r.push_back(tir::Var::make(t, "pow_r" + id + "_" + std::to_string(k)));
  }
  Expr body = r[bits];
  for (int k = bits; k-- > 0;) {
    Expr bit = tir::EQ::make((e / Expr((int64_t)1 << k)) % Expr(2), Expr(1));
    body = tir::Let::make(b[k + 1], b[k] * b[k], body);
    body = tir::Let::make(r[k + 1], tir::select(bit, r[k] * b[k], r[k]), body);
  }
  body = tir::Let::make(r[0], tir::make_const(t, 1), tir::Let::make(b[0], x, body));
  Expr one = tir::make_const(t, 1), zero = tir::make_const(t, 0);
  Expr minus_one = t.is_int() ? tir::EQ::make(x, tir::make_const(t, -1)) : tir::IntImm::make(tir::Bool(), 0);
  Expr neg = tir::select(tir::EQ::make(x, one), one,
                         tir::select(minus_one,
                                     tir::select(tir::EQ::make(e % Expr(2), Expr(0)), one, tir::make_const(t, -1)), zero));
  return tir::Let::make(e, e_in, tir::select(e < Expr(0), neg, body));
}

// The formula of a float unary function of lower_unary_float.
Expr unary_float_formula(Op op, const graph::Node& n, Expr x) {
  switch (op) {
    case Op::Tanh: return call(Intrinsic::Tanh, x);
    case Op::Log: return call(Intrinsic::Log, x);
    case Op::Erf: return call(Intrinsic::Erf, x);
    case Op::Sin: return call(Intrinsic::Sin, x);
    case Op::Cos: return call(Intrinsic::Cos, x);
    case Op::Tan: return call(Intrinsic::Tan, x);
    case Op::Asin: return call(Intrinsic::Asin, x);
    case Op::Acos: return call(Intrinsic::Acos, x);
    case Op::Atan: return call(Intrinsic::Atan, x);
    case Op::Sinh: return (call(Intrinsic::Exp, x) - call(Intrinsic::Exp, k(x, 0) - x)) * k(x, 0.5);
    case Op::Cosh: return (call(Intrinsic::Exp, x) + call(Intrinsic::Exp, k(x, 0) - x)) * k(x, 0.5);
    case Op::Asinh: {  // odd: computed on |x|
      Expr a = call(Intrinsic::Abs, x);
      Expr v = call(Intrinsic::Log, a + call(Intrinsic::Sqrt, a * a + k(x, 1)));
      return tir::select(x < k(x, 0), k(x, 0) - v, v);
    }
    case Op::Acosh: return call(Intrinsic::Log, x + call(Intrinsic::Sqrt, x * x - k(x, 1)));
    case Op::Atanh: return call(Intrinsic::Log, (k(x, 1) + x) / (k(x, 1) - x)) * k(x, 0.5);
    case Op::Softplus:  // log(1 + exp(x)), stable for large x.
      return tir::select(x > k(x, 20), x, call(Intrinsic::Log, k(x, 1) + call(Intrinsic::Exp, x)));
    case Op::Softsign: return x / (k(x, 1) + call(Intrinsic::Abs, x));
    case Op::Elu:
      return tir::select(x < k(x, 0), k(x, n.attr_float("alpha", 1.0)) * (call(Intrinsic::Exp, x) - k(x, 1)), x);
    case Op::Celu: {
      Expr a = k(x, n.attr_float("alpha", 1.0));
      return tir::max(x, k(x, 0)) + tir::min(k(x, 0), a * (call(Intrinsic::Exp, x / a) - k(x, 1)));
    }
    case Op::Selu: {
      Expr a = k(x, n.attr_float("alpha", 1.67326319217681884765625));
      Expr g = k(x, n.attr_float("gamma", 1.05070102214813232421875));
      return tir::select(x > k(x, 0), g * x, g * (a * call(Intrinsic::Exp, x) - a));
    }
    case Op::ThresholdedRelu: return tir::select(x > k(x, n.attr_float("alpha", 1.0)), x, k(x, 0));
    case Op::Mish: {
      Expr sp = tir::select(x > k(x, 20), x, call(Intrinsic::Log, k(x, 1) + call(Intrinsic::Exp, x)));
      return x * call(Intrinsic::Tanh, sp);
    }
    default: internal_error << n.describe() << ": not a float unary function";
  }
  return Expr();
}

}  // namespace

void lower_unary_float(OpContext& ctx) {
  require(ctx, is_float(ctx.in_dtype(0)), "float types only");
  const graph::Node& n = ctx.node();
  Op op = ctx.op();
  lower_nary(ctx, [op, n](const std::vector<Expr>& v) { return unary_float_formula(op, n, v[0]); });
}

void lower_sign(OpContext& ctx) {
  require(ctx, !is_bool(ctx.in_dtype(0)), "numbers only");
  lower_nary(ctx, [](const std::vector<Expr>& v) {
    Expr x = v[0];
    return tir::select(x > k(x, 0), k(x, 1), tir::select(x < k(x, 0), k(x, -1), k(x, 0)));
  });
}

void lower_not(OpContext& ctx) {
  require(ctx, is_bool(ctx.in_dtype(0)), "bool only");
  lower_nary(ctx, [](const std::vector<Expr>& v) { return !v[0]; });
}

void lower_is_nan(OpContext& ctx) {
  require(ctx, is_float(ctx.in_dtype(0)), "float types only");
  lower_nary(ctx, [](const std::vector<Expr>& v) { return tir::NE::make(v[0], v[0]); });
}

void lower_is_inf(OpContext& ctx) {
  require(ctx, is_float(ctx.in_dtype(0)), "float types only");
  bool pos = ctx.node().attr_int("detect_positive", 1) != 0, neg = ctx.node().attr_int("detect_negative", 1) != 0;
  lower_nary(ctx, [pos, neg](const std::vector<Expr>& v) {
    Expr x = v[0];
    Expr p = pos ? tir::EQ::make(x, k(x, INFINITY)) : tir::IntImm::make(tir::Bool(), 0);
    Expr m = neg ? tir::EQ::make(x, k(x, -INFINITY)) : tir::IntImm::make(tir::Bool(), 0);
    return p || m;
  });
}

// Equal, Less, LessOrEqual, Greater, GreaterOrEqual (bools: Equal only).
void lower_compare(OpContext& ctx) {
  Op op = ctx.op();
  if (ctx.in_dtype(0) == graph::DType::String) return lower_equal_string(ctx);  // (only Equal takes strings)
  require(ctx, !is_bool(ctx.in_dtype(0)) || op == Op::Equal, "comparison of bools");
  lower_nary(ctx, [op](const std::vector<Expr>& v) {
    switch (op) {
      case Op::Equal: return tir::EQ::make(v[0], v[1]);
      case Op::Less: return v[0] < v[1];
      case Op::LessOrEqual: return v[0] <= v[1];
      case Op::Greater: return v[0] > v[1];
      case Op::GreaterOrEqual: return v[0] >= v[1];
      default: internal_error << "lower_compare: not a comparison";
    }
    return Expr();
  });
}

// And, Or, Xor on bools.
void lower_logic(OpContext& ctx) {
  Op op = ctx.op();
  require(ctx, is_bool(ctx.in_dtype(0)), "bool only");
  lower_nary(ctx, [op](const std::vector<Expr>& v) {
    switch (op) {
      case Op::And: return v[0] && v[1];
      case Op::Or: return v[0] || v[1];
      case Op::Xor: return tir::NE::make(v[0], v[1]);
      default: internal_error << "lower_logic: not a logic operator";
    }
    return Expr();
  });
}

// Float base: pow in the base's type (a constant exponent 2: x * x). Integer base (numpy's power cast to
// the base's type): a constant small non-negative integer exponent is
// repeated multiplication, an integer exponent is exact binary
// exponentiation (both wrap like numpy); a float exponent is pow in
// float64, truncated toward zero.
void lower_pow(OpContext& ctx) {
  graph::DType bt = ctx.in_dtype(0);
  require(ctx, !is_bool(bt) && bt != graph::DType::F16 && !is_bool(ctx.in_dtype(1)), "numbers only");
  tir::Type t = graph::dtype_to_tir(bt);
  const graph::Value& e = ctx.value(ctx.input(1));
  if (is_float(bt)) {
    // A constant exponent of 2 (LayerNorm's variance, decomposed) is one
    // multiplication: x * x is the correctly rounded x^2, as pow's is.
    if (e.is_constant() && e.elements() == 1 && e.const_at(0) == 2.0) {
      lower_nary(ctx, [](const std::vector<Expr>& v) { return v[0] * v[0]; });
      return;
    }
    lower_nary(ctx, [t](const std::vector<Expr>& v) { return tir::Call::make(Intrinsic::Pow, {v[0], tir::cast(t, v[1])}); });
    return;
  }
  if (e.is_constant() && e.elements() == 1) {
    double p = e.const_at(0);
    if (p >= 0 && p <= 64 && p == std::floor(p)) {
      int64_t n = (int64_t)p;
      lower_nary(ctx, [t, n](const std::vector<Expr>& v) {
        Expr r = tir::make_const(t, 1);
        for (int64_t i = 0; i < n; i++) r = r * v[0];
        return r;
      });
      return;
    }
  }
  if (!is_float(ctx.in_dtype(1))) {
    lower_nary(ctx, [t](const std::vector<Expr>& v) { return int_pow(v[0], tir::cast(tir::Int(64), v[1]), t); });
    return;
  }
  tir::Type f64 = tir::Float(64);
  double lo = t.is_int() ? -std::ldexp(1.0, t.bits - 1) : 0, hi = std::ldexp(1.0, t.bits - 1) * (t.is_int() ? 1 : 2);
  lower_nary(ctx, [t, f64, lo, hi](const std::vector<Expr>& v) {
    Expr p = tir::Call::make(Intrinsic::Pow, {tir::cast(f64, v[0]), tir::cast(f64, v[1])});
    // Truncate toward zero; out-of-range (and NaN) results saturate instead of being undefined.
    p = tir::select(p < tir::make_const(f64, 0), tir::Call::make(Intrinsic::Ceil, {p}), tir::Call::make(Intrinsic::Floor, {p}));
    p = tir::select(tir::NE::make(p, p), tir::make_const(f64, 0), p);
    p = tir::clamp(p, tir::make_const(f64, lo), tir::make_const(f64, hi - (t.bits >= 53 ? 1024 : 1)));
    return tir::cast(t, p);
  });
}

void lower_mod(OpContext& ctx) {
  bool fmod = ctx.node().attr_int("fmod", 0) != 0;
  bool f = is_float(ctx.in_dtype(0));
  lower_nary(ctx, [fmod, f](const std::vector<Expr>& v) {
    Expr a = v[0], b = v[1];
    if (f) {  // C fmod: a - trunc(a / b) * b
      Expr q = a / b;
      Expr tq = tir::select(q < k(q, 0), call(Intrinsic::Ceil, q), call(Intrinsic::Floor, q));
      // (an infinite divisor leaves a finite dividend as it is: q * b would be 0 * inf)
      Expr inf = k(a, INFINITY);
      Expr r = tir::select(tir::EQ::make(call(Intrinsic::Abs, b), inf) && call(Intrinsic::Abs, a) < inf, a,
                           a - tq * b);
      if (fmod) return r;
      // fmod=0 on floats (ONNX's reference: numpy's mod): the divisor's sign.
      Expr z = k(r, 0);
      return tir::select(tir::NE::make(r, z) && tir::NE::make(r < z, b < z), r + b, r);
    }
    if (!fmod) return a % b;  // integer Mod: the sign of the divisor (floor semantics)
    return a - trunc_div(a, b) * b;
  });
}

void lower_prelu(OpContext& ctx) {
  require(ctx, is_float(ctx.in_dtype(0)), "float types only");
  te::Tensor x = ctx.in(0), slope = ctx.in(1);
  // Models converted from opset < 7 keep a 1-D per-channel slope that numpy
  // broadcasting would reject: broadcast it along axis 1 instead.
  bool channel = slope.ndim() == 1 && x.ndim() > 2 && slope.shape()[0] == x.shape()[1] &&
                 slope.shape()[0] != x.shape().back() && slope.shape()[0] != 1;
  ctx.set_output(0, te::compute("prelu", x.dims(), [=](const Indices& i) {
    Expr s = channel ? slope({i[1]}) : slope(broadcast_index(slope.dims(), i));
    return tir::select(x(i) < k(x(i), 0), x(i) * s, x(i));
  }));
}

void lower_where(OpContext& ctx) {
  lower_nary(ctx, [](const std::vector<Expr>& v) { return tir::select(v[0], v[1], v[2]); });
}

// One element of type `from` (as loaded: bool as Bool, bfloat16 as its
// bits, a narrow type as its byte) converted to `to` (as stored). bfloat16
// goes through float32 both ways (a float64 is rounded twice); the narrow
// types convert in lower/narrow_types.h, with the node's attributes.
Expr convert_element(Expr x, graph::DType from, graph::DType to, const NarrowOptions& narrow) {
  using graph::DType;
  if (from == to) return x;
  if (graph::is_narrow(from) || graph::is_narrow(to)) return convert_narrow(x, from, to, narrow);
  if (from == DType::BF16) x = tir::Call::make(tir::Intrinsic::Bf16ToF32, {x});
  else if (is_bool(from)) x = tir::cast(tir::UInt(8), tir::cast(tir::Bool(), x));
  if (to == DType::BF16) return tir::Call::make(tir::Intrinsic::F32ToBf16, {tir::cast(tir::Float(32), x)});
  return tir::cast(compute_type(to), x);
}

// Cast's and CastLike's `saturate` and `round_mode` (float8 and e8m0 results).
NarrowOptions narrow_options(OpContext& ctx, graph::DType from, graph::DType to) {
  const graph::Node& n = ctx.node();
  user_assert(!(graph::is_narrow(from) && to == graph::DType::String) && !(graph::is_narrow(to) && from == graph::DType::String))
      << n.describe() << ": Cast between " << graph::dtype_name(from) << " and " << graph::dtype_name(to)
      << " is not supported (cast through float32)";
  NarrowOptions o;
  o.saturate = n.attr_int("saturate", 1) != 0;
  std::string mode = n.attr_string("round_mode", "up");
  user_assert(mode == "up" || mode == "down" || mode == "nearest")
      << n.describe() << ": round_mode '" << mode << "' is none of up, down, nearest";
  o.e8m0_round = mode == "down" ? E8M0Round::Down : mode == "nearest" ? E8M0Round::Nearest : E8M0Round::Up;
  o.f64_bits = !ctx.gpu();  // GLSL has 32-bit bit casts only
  return o;
}

void lower_cast(OpContext& ctx) {
  graph::DType to = ctx.value(ctx.output(0)).dtype;
  graph::DType from = ctx.in_dtype(0);
  NarrowOptions o = narrow_options(ctx, from, to);
  if (to == graph::DType::String || from == graph::DType::String) return lower_cast_string(ctx);
  lower_nary(ctx, [to, from, o](const std::vector<Expr>& v) { return convert_element(v[0], from, to, o); });
}

// The variadic Max, Min, Sum and Mean (numpy broadcasting over all inputs),
// folded left to right.
void lower_variadic(OpContext& ctx) {
  const Op op = ctx.op();
  if (op == Op::Mean) require(ctx, is_float(ctx.in_dtype(0)), "float types only");
  lower_nary(ctx, [op](const std::vector<Expr>& v) {
    Expr r = v[0];
    for (size_t i = 1; i < v.size(); i++) r = op == Op::Max ? tir::max(r, v[i]) : op == Op::Min ? tir::min(r, v[i]) : r + v[i];
    return op == Op::Mean ? r / k(r, (double)v.size()) : r;
  });
}

void lower_cast_like(OpContext& ctx) {
  graph::DType to = ctx.value(ctx.output(0)).dtype, from = ctx.in_dtype(0);
  NarrowOptions o = narrow_options(ctx, from, to);
  if (to == graph::DType::String || from == graph::DType::String) return lower_cast_string(ctx);
  te::Tensor x = ctx.in(0);
  bool from_bool = is_bool(from);
  ctx.set_output(0, te::compute("castlike", x.dims(), [=](const Indices& i) {
    Expr v = x(i);
    return convert_element(from_bool ? tir::cast(tir::Bool(), v) : v, from, to, o);
  }));
}

namespace {

// The width of an element of `t` in bits, as ONNX's BitCast counts it (bool:
// one byte; the sub-byte types: 4 or 2, not the byte kilnc stores them in).
int bit_width(graph::DType t) {
  using graph::DType;
  if (t == DType::U4 || t == DType::I4 || t == DType::F4E2M1) return 4;
  if (t == DType::U2 || t == DType::I2) return 2;
  return (int)graph::dtype_size(t) * 8;
}

// An element of `t` (as loaded) as its `bits` bits in the low bits of an
// unsigned integer of its storage width.
Expr element_bits(const Expr& x, graph::DType t, int bits) {
  if (x.type().is_float()) return tir::Call::make(Intrinsic::FloatToBits, {x});
  const tir::Type u = tir::UInt(x.type().bits);
  if (is_bool(t)) return tir::cast(u, tir::cast(tir::Bool(), x));  // 0 or 1
  Expr b = tir::cast(u, x);  // an integer's two's complement bits (int4/int2: sign-extended)
  return bits < x.type().bits ? b % tir::make_const(u, (double)(1 << bits)) : b;
}

// Unsigned `b` (element_bits) as an element of `t` (as computed; a bool as Bool).
Expr bits_element(const Expr& b, graph::DType t, int bits) {
  const tir::Type ct = compute_type(t);
  if (ct.is_float()) return tir::Call::make(Intrinsic::BitsToFloat, {b});
  if (ct.is_bool()) return tir::NE::make(b, tir::make_const(b.type(), 0));
  Expr v = tir::cast(ct, b);
  if (ct.is_int() && bits < ct.bits) {  // int4/int2: stored sign-extended
    Expr sign = tir::make_const(b.type(), (double)(1 << (bits - 1)));
    v = tir::select(b < sign, v, v - tir::make_const(ct, (double)(1 << bits)));
  }
  return v;
}

}  // namespace

// BitCast: each element's bits reinterpreted as `to` (of the same width).
// Every type kilnc has but strings; bfloat16, float16 and the narrow types
// as their bits (the table row's kStoredBits).
void lower_bitcast(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  graph::DType from = ctx.in_dtype(0), to = ctx.value(ctx.output(0)).dtype;
  user_assert(from != graph::DType::String && to != graph::DType::String)
      << n.describe() << ": BitCast does not take or give strings";
  const int bits = bit_width(from);
  user_assert(bit_width(to) == bits) << n.describe() << ": BitCast from " << graph::dtype_name(from) << " (" << bits
                                     << " bits) to " << graph::dtype_name(to) << " (" << bit_width(to)
                                     << " bits): the attribute 'to' must name a type of the input's width";
  te::Tensor x = ctx.in(0);
  ctx.set_output(0, te::compute("bitcast", x.dims(), [=](const Indices& i) {
    return from == to ? x(i) : bits_element(element_bits(x(i), from, bits), to, bits);
  }));
}

Expr trunc_divide(const Expr& a, const Expr& b) { return trunc_div(a, b); }

// Det of each [M, M] matrix of [..., M, M]: Gaussian elimination with
// partial pivoting (each row swap flips the sign), one serial kernel over
// the matrices, working on a copy in an intermediate [M, M] tensor.
void lower_det(OpContext& ctx) {
  ctx.require_float();
  const graph::Node& n = ctx.node();
  const graph::Shape xs = ctx.in_shape(0);
  user_assert(xs.size() >= 2 && xs[xs.size() - 1] == xs[xs.size() - 2])
      << n.describe() << ": the input must be [..., M, M]";
  const int64_t M = xs.back(), count = graph::num_elements(xs) / std::max<int64_t>(M * M, 1);
  const tir::Type t = graph::dtype_to_tir(ctx.in_dtype(0));
  graph::Value lu;
  lu.name = ctx.graph.unique_name(n.name + ".lu");
  lu.dtype = ctx.in_dtype(0);
  lu.shape = {M, M};
  lu.producer = ctx.node_index;
  const int scratch = ctx.graph.add_value(std::move(lu));
  const int in = ctx.input(0), out = ctx.output(0);
  ctx.emit_tir("det", [&](const OpContext::BindFn& bind) {
    tir::Buffer xb = bind(in, Access::Read), ob = bind(out, Access::Write), a = bind(scratch, Access::ReadWrite);
    using namespace serial;  // NOLINT: the serial kernel's vocabulary
    tir::Buffer det = tir::make_buffer("det", t, 1, -1), best = tir::make_buffer("det_best", t, 1, -1);
    tir::Buffer piv = tir::make_buffer("det_pivot_row", tir::Index(), 1, -1);
    auto var = index_var;
    auto at = [&](const Expr& r, const Expr& c) { return r * Expr(M) + c; };
    auto ld = [](const tir::Buffer& b, const Expr& i) { return tir::Load::make(b, i); };
    auto abs = [](const Expr& v) { return tir::Call::make(Intrinsic::Abs, {v}); };
    Expr b = var("det_b"), i = var("det_i"), k = var("det_k"), r = var("det_r"), c = var("det_c"), r2 = var("det_r2"),
         c2 = var("det_c2");
    Expr zero = tir::make_const(t, 0), one = tir::make_const(t, 1);
    Expr p = ld(piv, Expr(0)), pivot = ld(a, at(k, k));
    tir::Stmt find_pivot = tir::Block::make({
        tir::Store::make(piv, Expr(0), k), tir::Store::make(best, Expr(0), abs(pivot)),
        loop(r, k + Expr(1), Expr(M) - k - Expr(1),
             tir::IfThenElse::make(abs(ld(a, at(r, k))) > ld(best, Expr(0)),
                                   tir::Block::make({tir::Store::make(piv, Expr(0), r),
                                                     tir::Store::make(best, Expr(0), abs(ld(a, at(r, k))))})))});
    Expr tmp = tir::Var::make(t, "det_tmp");
    tir::Stmt swap = tir::IfThenElse::make(
        tir::NE::make(p, k),
        tir::Block::make({loop(c, Expr(0), Expr(M),
                               tir::LetStmt::make(tmp, ld(a, at(k, c)),
                                                  tir::Block::make({tir::Store::make(a, at(k, c), ld(a, at(p, c))),
                                                                    tir::Store::make(a, at(p, c), tmp)}))),
                          tir::Store::make(det, Expr(0), zero - ld(det, Expr(0)))}));
    Expr f = tir::Var::make(t, "det_f");
    tir::Stmt eliminate = tir::IfThenElse::make(
        tir::NE::make(pivot, zero),
        loop(r2, k + Expr(1), Expr(M) - k - Expr(1),
             tir::LetStmt::make(f, ld(a, at(r2, k)) / pivot,
                                loop(c2, k, Expr(M) - k,
                                     tir::Store::make(a, at(r2, c2), ld(a, at(r2, c2)) - f * ld(a, at(k, c2)))))));
    tir::Stmt per_matrix = tir::Block::make({
        loop(i, Expr(0), Expr(M * M), tir::Store::make(a, i, ld(xb, b * Expr(M * M) + i))),
        tir::Store::make(det, Expr(0), one),
        loop(k, Expr(0), Expr(M),
             tir::Block::make({find_pivot, swap, tir::Store::make(det, Expr(0), ld(det, Expr(0)) * pivot), eliminate})),
        tir::Store::make(ob, b, ld(det, Expr(0)))});
    return allocate({det, best, piv}, loop(b, Expr(count), per_matrix));
  });
}

}  // namespace kiln::lower
