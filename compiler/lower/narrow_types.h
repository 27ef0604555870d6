// ONNX's narrow element types (bundle minor 10, decision 62) as tensor-IR
// expressions: the float8s, float4e2m1 and float8e8m0 decoded from and
// rounded to their codes, the 4- and 2-bit integers read from and written to
// their bytes. Every conversion is integer arithmetic on the float's bits
// (tir::Intrinsic::FloatToBits / BitsToFloat), so it is exact on every
// target, vectorizes, and needs no tables:
//
//   - to a float8 or float4: round to nearest, ties to even (subnormals
//     included); with `saturate` (Cast's default) an overflow or an infinity
//     becomes the largest finite value of its sign, without it what the
//     type has: E5M2 infinity, NaN for E4M3FN (0x7F of the sign) and the
//     FNUZ types (0x80). NaN becomes the type's NaN (E4M3FN 0x7F/0xFF, E5M2
//     0x7E/0xFE, FNUZ 0x80); the FNUZ types have no -0 (it becomes 0).
//     float4e2m1 has neither inf nor NaN: it always saturates, and NaN
//     becomes a zero (-0 for +NaN, as ml_dtypes writes it).
//   - to float8e8m0 (a power of two, 2^-127 .. 2^127): Cast's round_mode
//     (up: the least power of two >= |x|, down: the greatest <= |x|,
//     nearest: ties up, as ONNX's reference); the sign is ignored; NaN is
//     0xFF; with saturate an overflow or inf is 2^127 and what lies below
//     2^-127 is 2^-127, without it both are NaN ("up" never underflows).
//   - to int4/uint4/int2/uint2: from an integer, its low bits (two's
//     complement, as ONNX's Cast wraps integers); from a float, truncated
//     toward zero, and 0 when that is outside the type's range or NaN (what
//     ONNX's reference, ml_dtypes, gives). QuantizeLinear saturates instead
//     (lower/ops_quant.cpp).
//   - from any of them: exactly (decoding reads only the low 4 or 2 bits of
//     the sub-byte types).
#pragma once

#include "graph/graph.h"
#include "tir/ir.h"

namespace kiln::lower {

// Cast's round_mode, for float8e8m0 results.
enum class E8M0Round { Up, Down, Nearest };

// How a conversion to a narrow type overflows and rounds.
struct NarrowOptions {
  bool saturate = true;                  // Cast/QuantizeLinear `saturate` (float8 and e8m0 results)
  E8M0Round e8m0_round = E8M0Round::Up;  // Cast `round_mode` (e8m0 results)
  // float64 values round from their own bits; false: through float32
  // (twice rounded; GLSL has only 32-bit bit casts).
  bool f64_bits = true;
};

// The Float(32) that `stored` (an element of narrow float type `from`, as
// loaded: its code in a UInt(8)) stands for: exact.
tir::Expr narrow_float_to_f32(const tir::Expr& stored, graph::DType from);
// The Int(32) value of an element of narrow integer type `from` (its low 4
// or 2 bits, sign-extended for int4/int2).
tir::Expr narrow_int_value(const tir::Expr& stored, graph::DType from);

// Whether `t` is a narrow integer type (int4, uint4, int2, uint2), and its
// value range.
bool is_narrow_int(graph::DType t);
void narrow_int_range(graph::DType t, int* lo, int* hi);
// A Float(16/32/64) `x` as the code of narrow float type `to` (a UInt(8)).
tir::Expr float_to_narrow(tir::Expr x, graph::DType to, const NarrowOptions& o);

// An element `x` of type `from` (as loaded, a bool as tir::Bool()) as type
// `to` (as stored, a bool as tir::Bool()), where `from` or `to` is narrow.
tir::Expr convert_narrow(tir::Expr x, graph::DType from, graph::DType to, const NarrowOptions& o);

// Any numeric element (as loaded) as Float(32): narrow and bfloat16 types
// decoded, the others converted (QuantizeLinear, DequantizeLinear).
tir::Expr element_to_f32(const tir::Expr& x, graph::DType from);
// A Float(32) as an element of `to` (as stored): narrow and bfloat16 types
// rounded to nearest even, the others converted.
tir::Expr f32_to_element(const tir::Expr& f, graph::DType to, const NarrowOptions& o);

}  // namespace kiln::lower
