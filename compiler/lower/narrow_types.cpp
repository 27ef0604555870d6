// The narrow types' conversions (see narrow_types.h): integer arithmetic on
// the bits of a float (FloatToBits / BitsToFloat), divisions and remainders
// by powers of two standing for shifts and masks.
#include "lower/narrow_types.h"

#include <cmath>

#include "lower/expr_helpers.h"
#include "support/diagnostics.h"

namespace kiln::lower {

using graph::DType;
using tir::Expr;
using tir::Intrinsic;

namespace {

// A sign, exponent and mantissa format (the float8s but e8m0, float4e2m1).
enum class Special { Fn, Ieee, Fnuz, None };  // E4M3FN; E5M2; the FNUZ types; float4e2m1
struct Format {
  int e_bits, m_bits, bias;
  uint32_t max_mag;  // the largest finite magnitude's code (without the sign)
  Special special;
};

Format format_of(DType t) {
  switch (t) {
    case DType::F8E4M3FN: return {4, 3, 7, 0x7E, Special::Fn};
    case DType::F8E4M3FNUZ: return {4, 3, 8, 0x7F, Special::Fnuz};
    case DType::F8E5M2: return {5, 2, 15, 0x7B, Special::Ieee};
    case DType::F8E5M2FNUZ: return {5, 2, 16, 0x7F, Special::Fnuz};
    case DType::F4E2M1: return {2, 1, 1, 0x7, Special::None};
    default: internal_error << "no sign/exponent/mantissa format for " << graph::dtype_name(t);
  }
  return {};
}

Expr imm(tir::Type t, uint64_t v) { return tir::IntImm::make(t, (int64_t)v); }
Expr pick(const Expr& c, const Expr& t, const Expr& f) { return tir::select(c, t, f); }
Expr eq(const Expr& a, const Expr& b) { return tir::EQ::make(a, b); }
Expr ne(const Expr& a, const Expr& b) { return tir::NE::make(a, b); }

bool is_float_dtype(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::F64 || t == DType::BF16; }

// An integer `x` (any integer type) as narrow integer type `to`: its low
// bits, sign-extended for the signed types, in `to`'s storage type.
Expr wrap_to_narrow_int(const Expr& x, DType to) { return tir::cast(graph::dtype_to_tir(to), narrow_int_value(x, to)); }

// A float `f` (any width) truncated toward zero into narrow integer type
// `to`: 0 when outside its range or NaN.
Expr trunc_to_narrow_int(const Expr& f, DType to) {
  int lo, hi;
  narrow_int_range(to, &lo, &hi);
  Expr in_range = f > tir::make_const(f.type(), lo - 1) && f < tir::make_const(f.type(), hi + 1);
  Expr safe = pick(in_range, f, tir::make_const(f.type(), 0));  // no conversion of an out-of-range float
  return tir::cast(graph::dtype_to_tir(to), tir::cast(tir::Int(32), safe));
}

// float8e8m0's code of x (Float(32/64)).
Expr float_to_e8m0(const Expr& x, const NarrowOptions& o) {
  const int w = x.type().bits;
  const tir::Type u = tir::UInt(w), i32 = tir::Int(32);
  const int ms = w == 32 ? 23 : 52, bs = w == 32 ? 127 : 1023;
  const uint64_t inf_bits = w == 32 ? 0x7F800000ull : 0x7FF0000000000000ull;
  Expr ax = call(Intrinsic::Abs, x);
  Expr a = call(Intrinsic::FloatToBits, ax);
  // A subnormal (or zero) source is scaled by 2^64 first, so that its
  // exponent field is its exponent; zero stays zero and lies below any power.
  Expr small = a < imm(u, 1ull << ms);
  Expr a2 = pick(small, call(Intrinsic::FloatToBits, ax * tir::make_const(x.type(), std::ldexp(1.0, 64))), a);
  Expr e = tir::cast(i32, a2 / imm(u, 1ull << ms)) - imm(i32, (uint64_t)bs) - pick(small, imm(i32, 64), imm(i32, 0));
  Expr frac = a2 % imm(u, 1ull << ms);
  Expr up;
  switch (o.e8m0_round) {
    case E8M0Round::Up: up = ne(frac, imm(u, 0)); break;
    case E8M0Round::Down: up = tir::make_const(tir::Bool(), 0); break;
    case E8M0Round::Nearest: up = frac >= imm(u, 1ull << (ms - 1)); break;  // 1.5 * 2^e and above: ties up
  }
  Expr code = e + pick(up, imm(i32, 1), imm(i32, 0)) + imm(i32, 127);
  const uint64_t nan = 0xFF, top = o.saturate ? 0xFE : 0xFF;
  const uint64_t bottom = o.saturate || o.e8m0_round == E8M0Round::Up ? 0 : 0xFF;
  Expr r = pick(code < imm(i32, 0), imm(i32, bottom), pick(code > imm(i32, 0xFE), imm(i32, top), code));
  r = pick(eq(a, imm(u, inf_bits)), imm(i32, top), r);
  r = pick(a > imm(u, inf_bits), imm(i32, nan), r);
  return tir::cast(tir::UInt(8), r);
}

}  // namespace

bool is_narrow_int(DType t) { return graph::is_narrow(t) && !graph::is_narrow_float(t); }

void narrow_int_range(DType t, int* lo, int* hi) {
  switch (t) {
    case DType::U4: *lo = 0, *hi = 15; return;
    case DType::I4: *lo = -8, *hi = 7; return;
    case DType::U2: *lo = 0, *hi = 3; return;
    case DType::I2: *lo = -2, *hi = 1; return;
    default: internal_error << "not a narrow integer type: " << graph::dtype_name(t);
  }
}

Expr narrow_int_value(const Expr& stored, DType from) {
  int lo, hi;
  narrow_int_range(from, &lo, &hi);
  const tir::Type u32 = tir::UInt(32), i32 = tir::Int(32);
  Expr low = tir::cast(u32, tir::cast(tir::UInt(8), stored)) % imm(u32, (uint64_t)(hi - lo + 1));
  Expr v = tir::cast(i32, low);
  if (lo < 0) v = pick(v > imm(i32, (uint64_t)hi), v - imm(i32, (uint64_t)(hi - lo + 1)), v);
  return v;
}

Expr narrow_float_to_f32(const Expr& stored, DType from) {
  const tir::Type u32 = tir::UInt(32);
  Expr u = tir::cast(u32, tir::cast(tir::UInt(8), stored));
  const uint64_t nan = 0x7FC00000;
  if (from == DType::F8E8M0) {  // 2^(u - 127); 0 is 2^-127, a float32 subnormal
    Expr bits = pick(eq(u, imm(u32, 0)), imm(u32, 0x00400000), u * imm(u32, 1u << 23));
    return call(Intrinsic::BitsToFloat, pick(eq(u, imm(u32, 0xFF)), imm(u32, nan), bits));
  }
  const Format f = format_of(from);
  const int mag_bits = f.e_bits + f.m_bits;
  if (from == DType::F4E2M1) u = u % imm(u32, 16);
  Expr negative = u >= imm(u32, 1u << mag_bits);
  Expr mag = u % imm(u32, 1u << mag_bits);
  Expr e = mag / imm(u32, 1u << f.m_bits), m = mag % imm(u32, 1u << f.m_bits);
  // A normal code's bits are its magnitude moved up to float32's mantissa
  // and its exponent rebiased; a subnormal is m * 2^(1 - bias - m_bits).
  Expr normal = mag * imm(u32, 1u << (23 - f.m_bits)) + imm(u32, (uint64_t)(127 - f.bias) << 23);
  Expr sub = call(Intrinsic::FloatToBits, tir::cast(tir::Float(32), m) *
                                              tir::make_const(tir::Float(32), std::ldexp(1.0, 1 - f.bias - f.m_bits)));
  Expr bits = pick(eq(e, imm(u32, 0)), sub, normal);
  if (f.special == Special::Fn) bits = pick(eq(mag, imm(u32, 0x7F)), imm(u32, nan), bits);
  if (f.special == Special::Ieee) {
    Expr top = eq(e, imm(u32, 31));
    bits = pick(top, pick(eq(m, imm(u32, 0)), imm(u32, 0x7F800000), imm(u32, nan)), bits);
  }
  bits = bits + pick(negative, imm(u32, 0x80000000u), imm(u32, 0));
  if (f.special == Special::Fnuz) bits = pick(eq(u, imm(u32, 0x80)), imm(u32, nan), bits);
  return call(Intrinsic::BitsToFloat, bits);
}

Expr float_to_narrow(Expr x, DType to, const NarrowOptions& o) {
  internal_assert(x.type().is_float()) << "float_to_narrow of " << x.type().str();
  if (x.type().bits == 16 || (x.type().bits == 64 && !o.f64_bits)) x = tir::cast(tir::Float(32), x);
  if (to == DType::F8E8M0) return float_to_e8m0(x, o);
  const Format f = format_of(to);
  const int w = x.type().bits;
  const tir::Type u = tir::UInt(w);
  const int ms = w == 32 ? 23 : 52, bs = w == 32 ? 127 : 1023;
  const uint64_t inf_bits = w == 32 ? 0x7F800000ull : 0x7FF0000000000000ull;
  Expr ax = call(Intrinsic::Abs, x);
  Expr a = call(Intrinsic::FloatToBits, ax);
  Expr negative = ne(call(Intrinsic::FloatToBits, x), a);
  // A normal result: |x|'s bits with the exponent rebiased are the code in
  // fixed point with (ms - m_bits) fraction bits; rounded to nearest even
  // (a carry into the exponent is the next binade, as it should be).
  const int k = ms - f.m_bits;
  Expr fixed = a - imm(u, (uint64_t)(bs - f.bias) << ms);
  Expr q = fixed / imm(u, 1ull << k), r = fixed % imm(u, 1ull << k), half = imm(u, 1ull << (k - 1));
  Expr round_up = r > half || (eq(r, half) && eq(q % imm(u, 2), imm(u, 1)));
  Expr c_normal = q + pick(round_up, imm(u, 1), imm(u, 0));
  // A subnormal result: |x| in units of the smallest subnormal, rounded
  // (exact scaling by a power of two; 2^m_bits is the least normal code).
  Expr units = ax * tir::make_const(x.type(), std::ldexp(1.0, f.bias + f.m_bits - 1));
  Expr c_sub = tir::cast(u, call(Intrinsic::RoundEven, units));
  Expr c = pick(a < imm(u, (uint64_t)(bs + 1 - f.bias) << ms), c_sub, c_normal);
  Expr nan = a > imm(u, inf_bits);
  Expr overflow = c > imm(u, f.max_mag);  // infinity included
  const bool saturate = o.saturate || f.special == Special::None;
  const uint64_t sign = 1ull << (f.e_bits + f.m_bits);
  Expr sign_bit = pick(negative, imm(u, sign), imm(u, 0));
  Expr mag = pick(overflow, imm(u, f.max_mag), c);
  Expr code;
  switch (f.special) {
    case Special::Fn:  // no inf: NaN of the sign past the largest finite
      if (!saturate) mag = pick(overflow, imm(u, 0x7F), mag);
      code = pick(nan, imm(u, 0x7F), mag) + sign_bit;
      break;
    case Special::Ieee:  // infinity past the largest finite
      if (!saturate) mag = pick(overflow, imm(u, 0x7C), mag);
      code = pick(nan, imm(u, 0x7E), mag) + sign_bit;
      break;
    case Special::Fnuz: {  // one NaN, no -0
      Expr is_nan = saturate ? nan : nan || overflow;
      code = pick(is_nan, imm(u, 0x80), pick(eq(mag, imm(u, 0)), imm(u, 0), mag + sign_bit));
      break;
    }
    case Special::None:  // float4e2m1: NaN to a zero of the other sign (as ml_dtypes)
      code = pick(nan, pick(negative, imm(u, 0), imm(u, sign)), mag + sign_bit);
      break;
  }
  return tir::cast(tir::UInt(8), code);
}

Expr element_to_f32(const Expr& x, DType from) {
  const tir::Type f32 = tir::Float(32);
  if (graph::is_narrow_float(from)) return narrow_float_to_f32(x, from);
  if (is_narrow_int(from)) return tir::cast(f32, narrow_int_value(x, from));
  if (from == DType::BF16) return call(Intrinsic::Bf16ToF32, x);
  if (x.type().is_bool()) return tir::cast(f32, tir::cast(tir::UInt(8), x));
  return tir::cast(f32, x);
}

Expr f32_to_element(const Expr& f, DType to, const NarrowOptions& o) {
  if (graph::is_narrow(to)) return convert_narrow(f, DType::F32, to, o);
  if (to == DType::BF16) return call(Intrinsic::F32ToBf16, tir::cast(tir::Float(32), f));
  return tir::cast(graph::dtype_to_tir(to), f);
}

Expr convert_narrow(Expr x, DType from, DType to, const NarrowOptions& o) {
  internal_assert(graph::is_narrow(from) || graph::is_narrow(to)) << "convert_narrow without a narrow type";
  if (from == to) return x;
  // The source as a float (narrow floats, bfloat16, float types) or an
  // integer (narrow integers, bool, integer types).
  Expr f, i;
  if (graph::is_narrow_float(from)) f = narrow_float_to_f32(x, from);
  else if (is_narrow_int(from)) i = narrow_int_value(x, from);
  else if (from == DType::BF16) f = call(Intrinsic::Bf16ToF32, x);
  else if (from == DType::F16) f = tir::cast(tir::Float(32), x);  // exact
  else if (is_float_dtype(from)) f = x;
  else if (x.type().is_bool()) i = tir::cast(tir::Int(32), tir::cast(tir::UInt(8), x));
  else i = x;
  if (graph::is_narrow_float(to)) {
    // Integers of up to 16 bits convert exactly to float32, wider ones to float64 (up to 2^53).
    if (!f.defined()) f = tir::cast(o.f64_bits && i.type().bits > 16 ? tir::Float(64) : tir::Float(32), i);
    return float_to_narrow(f, to, o);
  }
  if (is_narrow_int(to)) return f.defined() ? trunc_to_narrow_int(f, to) : wrap_to_narrow_int(i, to);
  // From a narrow type to an ordinary one.
  Expr v = f.defined() ? f : i;
  if (to == DType::BF16) return call(Intrinsic::F32ToBf16, tir::cast(tir::Float(32), v));
  if (to == DType::Bool) return tir::cast(tir::Bool(), v);
  return tir::cast(graph::dtype_to_tir(to), v);
}

}  // namespace kiln::lower
