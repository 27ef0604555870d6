#include "codegen/math_llvm.h"

#include <cmath>

#include "support/diagnostics.h"

namespace kiln {
namespace {

using tir::Intrinsic;

class InlineMath {
 public:
  // `shape`: a value whose lane count (scalar or vector) the results take.
  InlineMath(llvm::IRBuilder<>& b, llvm::Value* shape) : b_(b), shape_(shape->getType()) {}

  // `t` with the lane count of the arguments (a vector type for vectors).
  llvm::Type* like(llvm::Type* t, llvm::Type* shape) const {
    if (auto* v = llvm::dyn_cast<llvm::VectorType>(shape)) return llvm::VectorType::get(t, v->getElementCount());
    return t;
  }
  llvm::Type* fty() const { return like(b_.getFloatTy(), shape_); }
  llvm::Type* i32ty() const { return like(b_.getInt32Ty(), shape_); }
  llvm::Value* i32(int64_t v) const { return llvm::ConstantInt::get(i32ty(), (uint64_t)v, true); }
  llvm::Value* fconst(double v) const { return llvm::ConstantFP::get(fty(), v); }

  // floor(x) without a libm call: truncate, then step down where truncation
  // rounded up. |x| >= 2^23 is already integral.
  llvm::Value* emit_floor(llvm::Value* x, bool ceil) {
    llvm::Type* ft = x->getType();
    bool dbl = ft->getScalarType()->isDoubleTy();
    llvm::Type* it = like(dbl ? b_.getInt64Ty() : b_.getInt32Ty(), ft);
    double big = dbl ? 4503599627370496.0 : 8388608.0;
    llvm::Value* t = b_.CreateSIToFP(b_.CreateFPToSI(x, it), ft);
    llvm::Value* one = llvm::ConstantFP::get(ft, 1.0);
    llvm::Value* r = ceil ? b_.CreateSelect(b_.CreateFCmpOLT(t, x), b_.CreateFAdd(t, one), t)
                          : b_.CreateSelect(b_.CreateFCmpOGT(t, x), b_.CreateFSub(t, one), t);
    llvm::Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    return b_.CreateSelect(b_.CreateFCmpOLT(ax, llvm::ConstantFP::get(ft, big)), r, x);
  }

  // Round half to even without a libm call or rounding instruction: below
  // 2^23 (2^52), |x| + 2^23 has a unit in the last place of 1, so the add
  // itself rounds, to nearest-even; the sign is put back (-0.4 -> -0).
  llvm::Value* emit_round_even(llvm::Value* x) {
    llvm::Type* ft = x->getType();
    bool dbl = ft->getScalarType()->isDoubleTy();
    llvm::Value* big = llvm::ConstantFP::get(ft, dbl ? 4503599627370496.0 : 8388608.0);
    llvm::Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    llvm::Value* r = b_.CreateFSub(b_.CreateFAdd(ax, big), big);
    r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, r, x);
    return b_.CreateSelect(b_.CreateFCmpOLT(ax, big), r, x);
  }

  // exp(x) for float32, Cephes-style: 2^n * p(r) with n = round(x / ln 2),
  // r = x - n ln 2 in [-ln 2 / 2, ln 2 / 2].
  llvm::Value* emit_exp_f32(llvm::Value* x) {
    auto* f = fty();
    auto c = [&](double v) { return llvm::ConstantFP::get(f, v); };
    x = b_.CreateSelect(b_.CreateFCmpOGT(x, c(88.3762626647949)), c(88.3762626647949), x);
    llvm::Value* underflow = b_.CreateFCmpOLT(x, c(-87.3365447504));  // below the smallest normal: 0 (exp(-inf) = 0)
    x = b_.CreateSelect(underflow, c(-87.3365447504), x);
    // n = x / ln 2 rounded to nearest: adding 1.5 * 2^23 leaves a unit in the
    // last place of 1, so the addition itself rounds (|x / ln 2| < 128 after
    // the clamps); two instructions instead of a floor.
    llvm::Value* fx = b_.CreateFSub(b_.CreateFAdd(b_.CreateFMul(x, c(1.44269504088896341)), c(12582912.0)), c(12582912.0));
    x = b_.CreateFSub(x, b_.CreateFMul(fx, c(0.693359375)));
    x = b_.CreateFSub(x, b_.CreateFMul(fx, c(-2.12194440e-4)));
    llvm::Value* z = b_.CreateFMul(x, x);
    llvm::Value* y = c(1.9875691500E-4);
    for (double k : {1.3981999507E-3, 8.3334519073E-3, 4.1665795894E-2, 1.6666665459E-1, 5.0000001201E-1})
      y = b_.CreateFAdd(b_.CreateFMul(y, x), c(k));
    y = b_.CreateFAdd(b_.CreateFAdd(b_.CreateFMul(y, z), x), c(1.0));
    llvm::Value* n = b_.CreateFPToSI(fx, i32ty());
    llvm::Value* bits = b_.CreateShl(b_.CreateAdd(n, i32(127)), 23);
    return b_.CreateSelect(underflow, c(0.0), b_.CreateFMul(y, b_.CreateBitCast(bits, f)));
  }

  llvm::Value* poly(llvm::Value* x, std::initializer_list<double> coeffs) {  // Horner, highest degree first
    llvm::Value* y = nullptr;
    for (double c : coeffs) y = y ? b_.CreateFAdd(b_.CreateFMul(y, x), fconst(c)) : fconst(c);
    return y;
  }

  // log(x) for float32, Cephes-style: x = m * 2^e with m in [sqrt(1/2), sqrt(2)).
  llvm::Value* emit_log_f32(llvm::Value* x) {
    // Subnormals are scaled by 2^23 first (and 23 ln 2 subtracted at the end).
    llvm::Value* subnormal = b_.CreateFCmpOLT(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x), fconst(1.17549435e-38));
    llvm::Value* xs = b_.CreateSelect(subnormal, b_.CreateFMul(x, fconst(8388608.0)), x);
    llvm::Value* bits = b_.CreateBitCast(xs, i32ty());
    llvm::Value* e = b_.CreateSub(b_.CreateAnd(b_.CreateLShr(bits, 23), i32(0xff)), i32(126));
    llvm::Value* m = b_.CreateBitCast(b_.CreateOr(b_.CreateAnd(bits, i32(0x807fffff)), i32(0x3f000000)),
                                      fty());  // in [0.5, 1)
    llvm::Value* small = b_.CreateFCmpOLT(m, fconst(0.707106781186547524));
    e = b_.CreateSub(e, b_.CreateZExt(small, i32ty()));
    m = b_.CreateSelect(small, b_.CreateFSub(b_.CreateFAdd(m, m), fconst(1.0)), b_.CreateFSub(m, fconst(1.0)));
    llvm::Value* fe = b_.CreateSIToFP(e, fty());
    llvm::Value* z = b_.CreateFMul(m, m);
    llvm::Value* y = poly(m, {7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1, 1.4249322787E-1,
                              -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1, 3.3333331174E-1});
    y = b_.CreateFMul(b_.CreateFMul(y, m), z);
    y = b_.CreateFAdd(y, b_.CreateFMul(fe, fconst(-2.12194440e-4)));
    y = b_.CreateFSub(y, b_.CreateFMul(z, fconst(0.5)));
    llvm::Value* r = b_.CreateFAdd(b_.CreateFAdd(m, y), b_.CreateFMul(fe, fconst(0.693359375)));
    r = b_.CreateSelect(subnormal, b_.CreateFSub(r, fconst(23.0 * 0.693147180559945309)), r);
    // Special values: log(0) = -inf, log(x < 0) = nan, log(inf) = inf, log(nan) = nan.
    r = b_.CreateSelect(b_.CreateFCmpOEQ(x, fconst(0.0)), fconst(-INFINITY), r);
    r = b_.CreateSelect(b_.CreateFCmpOEQ(x, fconst(INFINITY)), x, r);
    r = b_.CreateSelect(b_.CreateFCmpULT(x, fconst(0.0)), fconst(NAN), r);
    return r;
  }

  // tanh(x) for float32: a polynomial near zero, 1 - 2 / (exp(2|x|) + 1) beyond.
  llvm::Value* emit_tanh_f32(llvm::Value* x) {
    llvm::Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    llvm::Value* z = b_.CreateFMul(x, x);
    llvm::Value* p = poly(z, {-5.70498872745E-3, 2.06390887954E-2, -5.37397155531E-2, 1.33314422036E-1, -3.33332819422E-1});
    llvm::Value* near = b_.CreateFAdd(b_.CreateFMul(b_.CreateFMul(p, z), x), x);
    llvm::Value* t = emit_exp_f32(b_.CreateFMul(ax, fconst(2.0)));
    llvm::Value* far = b_.CreateFSub(fconst(1.0), b_.CreateFDiv(fconst(2.0), b_.CreateFAdd(t, fconst(1.0))));
    far = b_.CreateSelect(b_.CreateFCmpOGT(ax, fconst(9.0)), fconst(1.0), far);
    far = b_.CreateSelect(b_.CreateFCmpOLT(x, fconst(0.0)), b_.CreateFNeg(far), far);
    return b_.CreateSelect(b_.CreateFCmpOLT(ax, fconst(0.625)), near, far);
  }

  // erf(x) for float32: one rational function on the whole range,
  // erf(x) = x * P(x^2) / Q(x^2) (degrees 5 and 5 in x^2), and +-1 where
  // float32 rounds erf to it (|x| > 3.93). The coefficients were fitted for
  // this file (Lawson-reweighted least squares on the relative error over
  // [0, 4], tools/fit_erf.py); float32 evaluation is within 4e-7 of erf
  // (absolute and relative) everywhere. One branch: a GELU epilogue pays
  // ~12 FMAs and a division per element (the Cephes/Abramowitz-Stegun pair
  // it replaces computed both branches, an exp among them, and cost the
  // transformer's feed-forward GEMMs a third of their time).
  llvm::Value* emit_erf_f32(llvm::Value* x) {
    llvm::Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    llvm::Value* t = b_.CreateFMul(x, x);
    t = b_.CreateSelect(b_.CreateFCmpOLT(t, fconst(16.0)), t, fconst(16.0));  // keeps P and Q finite; NaN stays in x
    llvm::Value* p = poly(t, {1.9864287e-06, 0.00028458246, 0.003884561, 0.05310555, 0.19357495, 1.1283791});
    llvm::Value* q = poly(t, {3.7417336e-05, 0.0011858441, 0.015209729, 0.11536221, 0.5048839, 1.0});
    llvm::Value* r = b_.CreateFDiv(b_.CreateFMul(x, p), q);
    llvm::Value* one = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, fconst(1.0), x);
    return b_.CreateSelect(b_.CreateFCmpOGT(ax, fconst(3.93)), one, r);
  }

  // pow(x, y) = exp(y log|x|), with the sign and zero cases of C's pow.
  llvm::Value* emit_pow_f32(llvm::Value* x, llvm::Value* y) {
    llvm::Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    llvm::Value* r = emit_exp_f32(b_.CreateFMul(y, emit_log_f32(ax)));
    llvm::Value* y_int = b_.CreateFCmpOEQ(emit_floor(y, false), y);
    llvm::Value* half = b_.CreateFMul(y, fconst(0.5));
    llvm::Value* y_odd = b_.CreateAnd(y_int, b_.CreateFCmpUNE(emit_floor(half, false), half));
    llvm::Value* neg = b_.CreateFCmpOLT(x, fconst(0.0));
    r = b_.CreateSelect(b_.CreateAnd(neg, y_odd), b_.CreateFNeg(r), r);
    r = b_.CreateSelect(b_.CreateAnd(neg, b_.CreateNot(y_int)), fconst(NAN), r);
    llvm::Value* zero = b_.CreateFCmpOEQ(x, fconst(0.0));
    llvm::Value* at_zero = b_.CreateSelect(b_.CreateFCmpOLT(y, fconst(0.0)), fconst(INFINITY), fconst(0.0));
    r = b_.CreateSelect(zero, at_zero, r);
    return b_.CreateSelect(b_.CreateFCmpOEQ(y, fconst(0.0)), fconst(1.0), r);
  }

  // sin or cos (cosine: shift the octant by 2) for float32, Cephes-style:
  // reduce by multiples of pi/4 (3-part Cody-Waite), then a polynomial.
  llvm::Value* emit_sincos_f32(llvm::Value* x, bool cosine) {
    llvm::Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    llvm::Value* j = b_.CreateFPToSI(b_.CreateFMul(ax, fconst(1.27323954473516)), i32ty());
    j = b_.CreateAnd(b_.CreateAdd(j, i32(1)), i32(~1));  // round up to even
    llvm::Value* y = b_.CreateSIToFP(j, fty());
    if (cosine) j = b_.CreateAdd(j, i32(2));
    j = b_.CreateAnd(j, i32(7));
    llvm::Value* flip = b_.CreateICmpUGT(j, i32(3));
    j = b_.CreateSelect(flip, b_.CreateSub(j, i32(4)), j);
    llvm::Value* r = b_.CreateFSub(ax, b_.CreateFMul(y, fconst(0.78515625)));
    r = b_.CreateFSub(r, b_.CreateFMul(y, fconst(2.4187564849853515625e-4)));
    r = b_.CreateFSub(r, b_.CreateFMul(y, fconst(3.77489497744594108e-8)));
    llvm::Value* z = b_.CreateFMul(r, r);
    llvm::Value* c = b_.CreateFAdd(b_.CreateFSub(b_.CreateFMul(b_.CreateFMul(poly(z, {2.443315711809948E-005, -1.388731625493765E-003,
                                                                                         4.166664568298827E-002}), z), z),
                                                 b_.CreateFMul(z, fconst(0.5))), fconst(1.0));
    llvm::Value* sn = b_.CreateFAdd(b_.CreateFMul(b_.CreateFMul(poly(z, {-1.9515295891E-4, 8.3321608736E-3, -1.6666654611E-1}), z), r), r);
    llvm::Value* use_cos = b_.CreateOr(b_.CreateICmpEQ(j, i32(1)), b_.CreateICmpEQ(j, i32(2)));
    llvm::Value* v = b_.CreateSelect(use_cos, c, sn);
    // Sign: the octant flip, and for sine the sign of x.
    llvm::Value* neg = flip;
    if (!cosine) neg = b_.CreateXor(neg, b_.CreateFCmpOLT(x, fconst(0.0)));
    return b_.CreateSelect(neg, b_.CreateFNeg(v), v);
  }

  // asin (or acos = pi/2 - asin) for float32, Cephes-style.
  llvm::Value* emit_asin_f32(llvm::Value* x) {
    llvm::Value* a = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    llvm::Value* big = b_.CreateFCmpOGT(a, fconst(0.5));
    llvm::Value* zb = b_.CreateFMul(fconst(0.5), b_.CreateFSub(fconst(1.0), a));
    llvm::Value* z = b_.CreateSelect(big, zb, b_.CreateFMul(a, a));
    llvm::Value* x2 = b_.CreateSelect(big, b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, zb), a);
    llvm::Value* p = b_.CreateFAdd(b_.CreateFMul(b_.CreateFMul(poly(z, {4.2163199048E-2, 2.4181311049E-2, 4.5470025998E-2,
                                                                           7.4953002686E-2, 1.6666752422E-1}), z), x2), x2);
    p = b_.CreateSelect(big, b_.CreateFSub(fconst(1.5707963267948966), b_.CreateFAdd(p, p)), p);
    p = b_.CreateSelect(b_.CreateFCmpOLT(x, fconst(0.0)), b_.CreateFNeg(p), p);
    return b_.CreateSelect(b_.CreateFCmpUGT(a, fconst(1.0)), fconst(NAN), p);
  }

  // atan for float32, Cephes-style: reduce to |x| <= tan(pi/8).
  llvm::Value* emit_atan_f32(llvm::Value* x) {
    llvm::Value* a = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    llvm::Value* far = b_.CreateFCmpOGT(a, fconst(2.414213562373095));
    llvm::Value* mid = b_.CreateFCmpOGT(a, fconst(0.4142135623730950));
    llvm::Value* base = b_.CreateSelect(far, fconst(1.5707963267948966), b_.CreateSelect(mid, fconst(0.7853981633974483), fconst(0.0)));
    llvm::Value* r = b_.CreateSelect(far, b_.CreateFDiv(fconst(-1.0), a),
                                     b_.CreateSelect(mid, b_.CreateFDiv(b_.CreateFSub(a, fconst(1.0)), b_.CreateFAdd(a, fconst(1.0))), a));
    llvm::Value* z = b_.CreateFMul(r, r);
    llvm::Value* p = b_.CreateFAdd(b_.CreateFMul(b_.CreateFMul(poly(z, {8.05374449538e-2, -1.38776856032E-1, 1.99777106478E-1,
                                                                           -3.33329491539E-1}), z), r), r);
    p = b_.CreateFAdd(base, p);
    return b_.CreateSelect(b_.CreateFCmpOLT(x, fconst(0.0)), b_.CreateFNeg(p), p);
  }

 private:
  llvm::IRBuilder<>& b_;
  llvm::Type* shape_;
};

// `like` with its elements of type `elem` (scalar or vector).
llvm::Type* with_element(llvm::Type* like, llvm::Type* elem) {
  if (auto* v = llvm::dyn_cast<llvm::VectorType>(like)) return llvm::VectorType::get(elem, v->getElementCount());
  return elem;
}

// bfloat16 <-> float32 on bits (scalars or vectors): widening shifts the
// bits into the upper half; narrowing rounds to nearest even by adding
// 0x7fff plus the lowest kept bit, and keeps a NaN a quiet NaN.
llvm::Value* emit_bf16_conversion(llvm::IRBuilder<>& b, Intrinsic op, llvm::Value* x) {
  llvm::Type* i32 = with_element(x->getType(), b.getInt32Ty());
  auto c = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
  if (op == Intrinsic::Bf16ToF32)
    return b.CreateBitCast(b.CreateShl(b.CreateZExt(x, i32), c(16)), with_element(x->getType(), b.getFloatTy()));
  llvm::Value* bits = b.CreateBitCast(x, i32);
  llvm::Value* high = b.CreateLShr(bits, c(16));
  llvm::Value* rounded = b.CreateLShr(b.CreateAdd(bits, b.CreateAdd(c(0x7fff), b.CreateAnd(high, c(1)))), c(16));
  llvm::Value* r = b.CreateSelect(b.CreateFCmpUNO(x, x), b.CreateOr(high, c(0x40)), rounded);
  return b.CreateTrunc(r, with_element(x->getType(), b.getInt16Ty()));
}

}  // namespace

llvm::Value* emit_math_intrinsic(llvm::IRBuilder<>& b, Intrinsic op, std::vector<llvm::Value*> args) {
  if (tir::is_bf16_conversion(op)) return emit_bf16_conversion(b, op, args[0]);
  if (tir::is_bit_cast(op)) {  // same width: float <-> its bits
    llvm::Type* elem = args[0]->getType()->getScalarType();
    unsigned bits = elem->getPrimitiveSizeInBits();
    llvm::Type* to = op == Intrinsic::FloatToBits ? (llvm::Type*)b.getIntNTy(bits)
                     : bits == 16 ? b.getHalfTy() : bits == 32 ? b.getFloatTy() : b.getDoubleTy();
    return b.CreateBitCast(args[0], with_element(args[0]->getType(), to));
  }
  llvm::Value* x = args[0];
  InlineMath m(b, x);
  switch (op) {
    case Intrinsic::Sqrt: return b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
    case Intrinsic::Abs: return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    case Intrinsic::Floor: return m.emit_floor(x, false);
    case Intrinsic::Ceil: return m.emit_floor(x, true);
    case Intrinsic::RoundEven:
      if (x->getType()->getScalarType()->isHalfTy())  // 2^23 overflows half: round in float32 (exact)
        return b.CreateFPCast(m.emit_round_even(b.CreateFPCast(x, m.fty())), x->getType());
      return m.emit_round_even(x);
    default: break;
  }
  llvm::Type* ty = x->getType();
  bool narrow = !ty->getScalarType()->isFloatTy();
  if (narrow)
    for (auto& a : args) a = b.CreateFPCast(a, m.fty());
  llvm::Value* r;
  switch (op) {
    case Intrinsic::Exp: r = m.emit_exp_f32(args[0]); break;
    case Intrinsic::Log: r = m.emit_log_f32(args[0]); break;
    case Intrinsic::Tanh: r = m.emit_tanh_f32(args[0]); break;
    case Intrinsic::Erf: r = m.emit_erf_f32(args[0]); break;
    case Intrinsic::Pow: r = m.emit_pow_f32(args[0], args[1]); break;
    case Intrinsic::Sin: r = m.emit_sincos_f32(args[0], false); break;
    case Intrinsic::Cos: r = m.emit_sincos_f32(args[0], true); break;
    case Intrinsic::Tan: r = b.CreateFDiv(m.emit_sincos_f32(args[0], false), m.emit_sincos_f32(args[0], true)); break;
    case Intrinsic::Asin: r = m.emit_asin_f32(args[0]); break;
    case Intrinsic::Acos: r = b.CreateFSub(m.fconst(1.5707963267948966), m.emit_asin_f32(args[0])); break;
    case Intrinsic::Atan: r = m.emit_atan_f32(args[0]); break;
    default: internal_error << "intrinsic " << tir::intrinsic_name(op) << " has no code generator yet";
  }
  return narrow ? b.CreateFPCast(r, ty) : r;
}

}  // namespace kiln
