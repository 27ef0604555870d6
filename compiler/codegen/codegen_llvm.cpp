#include "codegen/codegen_llvm.h"

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <cmath>
#include <map>

#include "kiln_kernel_abi.h"
#include "support/diagnostics.h"
#include "tir/ir_printer.h"
#include "tir/ir_visitor.h"

namespace kiln {
namespace {

using namespace tir;

// Emits one kernel function from its TIR body.
class KernelEmitter {
 public:
  KernelEmitter(llvm::Module& m, llvm::StructType* dispatch_ty, llvm::StructType* workgroup_ty)
      : m_(m), ctx_(m.getContext()), b_(ctx_), dispatch_ty_(dispatch_ty), workgroup_ty_(workgroup_ty) {}

  llvm::Function* emit(const KernelDef& k) {
    auto* ptr = llvm::PointerType::get(ctx_, 0);
    auto* fty = llvm::FunctionType::get(b_.getInt32Ty(), {ptr, ptr}, false);
    fn_ = llvm::Function::Create(fty, llvm::Function::InternalLinkage, k.name, m_);
    fn_->addFnAttr(llvm::Attribute::NoUnwind);
    fn_->addFnAttr("no-builtins");
    auto* entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry);
    llvm::Value* dispatch = fn_->getArg(0);
    workgroup_ = fn_->getArg(1);
    // bindings = dispatch->bindings; param i = bindings[i]
    llvm::Value* bindings = b_.CreateLoad(ptr, b_.CreateStructGEP(dispatch_ty_, dispatch, 2), "bindings");
    for (size_t i = 0; i < k.params.size(); i++) {
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptr, bindings, i);
      auto* p = b_.CreateLoad(ptr, slot, k.params[i]->name);
      buffers_[k.params[i].get()] = p;
    }
    emit_stmt(k.body);
    b_.CreateRet(b_.getInt32(0));
    return fn_;
  }

 private:
  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  llvm::StructType* dispatch_ty_;
  llvm::StructType* workgroup_ty_;
  llvm::Function* fn_ = nullptr;
  llvm::Value* workgroup_ = nullptr;
  std::map<const ExprNode*, llvm::Value*> vars_;
  std::map<const BufferNode*, llvm::Value*> buffers_;

  llvm::Type* llvm_type(Type t) {
    switch (t.code) {
      case TypeCode::Bool: return b_.getInt1Ty();
      case TypeCode::Int:
      case TypeCode::UInt: return b_.getIntNTy(t.bits);
      case TypeCode::Float:
        if (t.bits == 32) return b_.getFloatTy();
        if (t.bits == 64) return b_.getDoubleTy();
        if (t.bits == 16) return b_.getHalfTy();
    }
    internal_error << "no LLVM type for " << t.str();
  }

  // ---------------------------------------------------------- expressions

  llvm::Value* emit_expr(const Expr& e) {
    switch (e->node_type) {
      case NodeType::IntImm: return llvm::ConstantInt::get(llvm_type(e.type()), e.as<IntImm>()->value, true);
      case NodeType::FloatImm: return llvm::ConstantFP::get(llvm_type(e.type()), e.as<FloatImm>()->value);
      case NodeType::Var: {
        auto it = vars_.find(e.get());
        internal_assert(it != vars_.end()) << "unbound Var " << e.as<Var>()->name;
        return it->second;
      }
      case NodeType::Cast: return emit_cast(e.as<Cast>());
      case NodeType::Add: return arith(e, &llvm::IRBuilder<>::CreateAdd, &llvm::IRBuilder<>::CreateFAdd);
      case NodeType::Sub: return arith(e, &llvm::IRBuilder<>::CreateSub, &llvm::IRBuilder<>::CreateFSub);
      case NodeType::Mul: return arith(e, &llvm::IRBuilder<>::CreateMul, &llvm::IRBuilder<>::CreateFMul);
      case NodeType::Div: return emit_div_mod(e.as<Div>()->a, e.as<Div>()->b, true);
      case NodeType::Mod: return emit_div_mod(e.as<Mod>()->a, e.as<Mod>()->b, false);
      case NodeType::Min: return emit_min_max(e.as<Min>()->a, e.as<Min>()->b, true);
      case NodeType::Max: return emit_min_max(e.as<Max>()->a, e.as<Max>()->b, false);
      case NodeType::EQ: return compare(e.as<EQ>()->a, e.as<EQ>()->b, llvm::CmpInst::ICMP_EQ, llvm::CmpInst::ICMP_EQ, llvm::CmpInst::FCMP_OEQ);
      case NodeType::NE: return compare(e.as<NE>()->a, e.as<NE>()->b, llvm::CmpInst::ICMP_NE, llvm::CmpInst::ICMP_NE, llvm::CmpInst::FCMP_UNE);
      case NodeType::LT: return compare(e.as<LT>()->a, e.as<LT>()->b, llvm::CmpInst::ICMP_SLT, llvm::CmpInst::ICMP_ULT, llvm::CmpInst::FCMP_OLT);
      case NodeType::LE: return compare(e.as<LE>()->a, e.as<LE>()->b, llvm::CmpInst::ICMP_SLE, llvm::CmpInst::ICMP_ULE, llvm::CmpInst::FCMP_OLE);
      case NodeType::And: return b_.CreateAnd(emit_expr(e.as<And>()->a), emit_expr(e.as<And>()->b));
      case NodeType::Or: return b_.CreateOr(emit_expr(e.as<Or>()->a), emit_expr(e.as<Or>()->b));
      case NodeType::Not: return b_.CreateNot(emit_expr(e.as<Not>()->a));
      case NodeType::Select: {
        auto* s = e.as<Select>();
        return b_.CreateSelect(emit_expr(s->cond), emit_expr(s->true_value), emit_expr(s->false_value));
      }
      case NodeType::Load: {
        auto* l = e.as<Load>();
        llvm::Type* ty = llvm_type(l->type);
        auto* load = b_.CreateAlignedLoad(ty, address(l->buffer, l->index), llvm::Align(l->type.bits / 8 ? l->type.bits / 8 : 1));
        return load;
      }
      case NodeType::Call: return emit_call(e.as<Call>());
      case NodeType::Let: {
        auto* l = e.as<Let>();
        vars_[l->var.get()] = emit_expr(l->value);
        llvm::Value* v = emit_expr(l->body);
        vars_.erase(l->var.get());
        return v;
      }
      default: internal_error << "cannot emit " << node_type_name(e->node_type) << " as an expression";
    }
  }

  using IntOp = llvm::Value* (llvm::IRBuilder<>::*)(llvm::Value*, llvm::Value*, const llvm::Twine&, bool, bool);
  using FloatOp = llvm::Value* (llvm::IRBuilder<>::*)(llvm::Value*, llvm::Value*, const llvm::Twine&, llvm::MDNode*);
  llvm::Value* arith(const Expr& e, IntOp iop, FloatOp fop) {
    const Expr *a, *b;
    if (auto op = e.as<Add>()) a = &op->a, b = &op->b;
    else if (auto op = e.as<Sub>()) a = &op->a, b = &op->b;
    else { auto m = e.as<Mul>(); a = &m->a, b = &m->b; }
    llvm::Value* x = emit_expr(*a);
    llvm::Value* y = emit_expr(*b);
    if (e.type().is_float()) return (b_.*fop)(x, y, "", nullptr);
    // Index arithmetic never wraps (shapes are checked to fit in int64).
    bool nsw = e.type() == Index();
    return (b_.*iop)(x, y, "", false, nsw);
  }

  llvm::Value* emit_div_mod(const Expr& ea, const Expr& eb, bool is_div) {
    llvm::Value* a = emit_expr(ea);
    llvm::Value* b = emit_expr(eb);
    Type t = ea.type();
    if (t.is_float()) {
      internal_assert(is_div) << "float Mod is not supported";
      return b_.CreateFDiv(a, b);
    }
    if (t.is_uint() || t.is_bool()) return is_div ? b_.CreateUDiv(a, b) : b_.CreateURem(a, b);
    // Floor semantics: adjust C's truncating result when the signs differ.
    llvm::Value* q = b_.CreateSDiv(a, b);
    llvm::Value* r = b_.CreateSRem(a, b);
    llvm::Value* zero = llvm::ConstantInt::get(a->getType(), 0);
    llvm::Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpSLT(b_.CreateXor(r, b), zero));
    if (is_div) return b_.CreateSub(q, b_.CreateZExt(adjust, a->getType()));
    return b_.CreateSelect(adjust, b_.CreateAdd(r, b), r);
  }

  llvm::Value* emit_min_max(const Expr& ea, const Expr& eb, bool is_min) {
    llvm::Value* a = emit_expr(ea);
    llvm::Value* b = emit_expr(eb);
    Type t = ea.type();
    llvm::Value* take_a;
    if (t.is_float()) take_a = is_min ? b_.CreateFCmpOLT(a, b) : b_.CreateFCmpOGT(a, b);
    else if (t.is_int()) take_a = is_min ? b_.CreateICmpSLT(a, b) : b_.CreateICmpSGT(a, b);
    else take_a = is_min ? b_.CreateICmpULT(a, b) : b_.CreateICmpUGT(a, b);
    return b_.CreateSelect(take_a, a, b);
  }

  llvm::Value* compare(const Expr& ea, const Expr& eb, llvm::CmpInst::Predicate s, llvm::CmpInst::Predicate u,
                       llvm::CmpInst::Predicate f) {
    llvm::Value* a = emit_expr(ea);
    llvm::Value* b = emit_expr(eb);
    Type t = ea.type();
    if (t.is_float()) return b_.CreateFCmp(f, a, b);
    return b_.CreateICmp(t.is_int() ? s : u, a, b);
  }

  llvm::Value* emit_cast(const Cast* c) {
    llvm::Value* v = emit_expr(c->value);
    Type from = c->value.type(), to = c->type;
    llvm::Type* ty = llvm_type(to);
    if (to.is_bool()) {
      return from.is_float() ? b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0))
                             : b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
    }
    if (from.is_float() && to.is_float()) {
      // f64 -> f16 has no instruction (LLVM would call __truncdfhf2): go through f32.
      if ((from.bits == 64 && to.bits == 16) || (from.bits == 16 && to.bits == 64)) v = b_.CreateFPCast(v, b_.getFloatTy());
      return b_.CreateFPCast(v, ty);
    }
    if (from.is_float()) return to.is_int() ? b_.CreateFPToSI(v, ty) : b_.CreateFPToUI(v, ty);
    if (to.is_float()) return from.is_int() ? b_.CreateSIToFP(v, ty) : b_.CreateUIToFP(v, ty);
    return b_.CreateIntCast(v, ty, from.is_int());
  }

  // floor(x) without a libm call: truncate, then step down where truncation
  // rounded up. |x| >= 2^23 is already integral.
  llvm::Value* emit_floor(llvm::Value* x, bool ceil) {
    llvm::Type* ft = x->getType();
    llvm::Type* it = ft->isDoubleTy() ? b_.getInt64Ty() : b_.getInt32Ty();
    double big = ft->isDoubleTy() ? 4503599627370496.0 : 8388608.0;
    llvm::Value* t = b_.CreateSIToFP(b_.CreateFPToSI(x, it), ft);
    llvm::Value* one = llvm::ConstantFP::get(ft, 1.0);
    llvm::Value* r = ceil ? b_.CreateSelect(b_.CreateFCmpOLT(t, x), b_.CreateFAdd(t, one), t)
                          : b_.CreateSelect(b_.CreateFCmpOGT(t, x), b_.CreateFSub(t, one), t);
    llvm::Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    return b_.CreateSelect(b_.CreateFCmpOLT(ax, llvm::ConstantFP::get(ft, big)), r, x);
  }

  // exp(x) for float32, Cephes-style: 2^n * p(r) with n = round(x / ln 2).
  llvm::Value* emit_exp_f32(llvm::Value* x) {
    auto* f = b_.getFloatTy();
    auto c = [&](double v) { return llvm::ConstantFP::get(f, v); };
    x = b_.CreateSelect(b_.CreateFCmpOGT(x, c(88.3762626647949)), c(88.3762626647949), x);
    x = b_.CreateSelect(b_.CreateFCmpOLT(x, c(-87.3365447504)), c(-87.3365447504), x);
    llvm::Value* fx = emit_floor(b_.CreateFAdd(b_.CreateFMul(x, c(1.44269504088896341)), c(0.5)), false);
    x = b_.CreateFSub(x, b_.CreateFMul(fx, c(0.693359375)));
    x = b_.CreateFSub(x, b_.CreateFMul(fx, c(-2.12194440e-4)));
    llvm::Value* z = b_.CreateFMul(x, x);
    llvm::Value* y = c(1.9875691500E-4);
    for (double k : {1.3981999507E-3, 8.3334519073E-3, 4.1665795894E-2, 1.6666665459E-1, 5.0000001201E-1})
      y = b_.CreateFAdd(b_.CreateFMul(y, x), c(k));
    y = b_.CreateFAdd(b_.CreateFAdd(b_.CreateFMul(y, z), x), c(1.0));
    llvm::Value* n = b_.CreateFPToSI(fx, b_.getInt32Ty());
    llvm::Value* bits = b_.CreateShl(b_.CreateAdd(n, b_.getInt32(127)), 23);
    return b_.CreateFMul(y, b_.CreateBitCast(bits, f));
  }

  llvm::Value* fconst(double v) { return llvm::ConstantFP::get(b_.getFloatTy(), v); }
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
    llvm::Value* bits = b_.CreateBitCast(xs, b_.getInt32Ty());
    llvm::Value* e = b_.CreateSub(b_.CreateAnd(b_.CreateLShr(bits, 23), b_.getInt32(0xff)), b_.getInt32(126));
    llvm::Value* m = b_.CreateBitCast(b_.CreateOr(b_.CreateAnd(bits, b_.getInt32(0x807fffff)), b_.getInt32(0x3f000000)),
                                      b_.getFloatTy());  // in [0.5, 1)
    llvm::Value* small = b_.CreateFCmpOLT(m, fconst(0.707106781186547524));
    e = b_.CreateSub(e, b_.CreateZExt(small, b_.getInt32Ty()));
    m = b_.CreateSelect(small, b_.CreateFSub(b_.CreateFAdd(m, m), fconst(1.0)), b_.CreateFSub(m, fconst(1.0)));
    llvm::Value* fe = b_.CreateSIToFP(e, b_.getFloatTy());
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

  // erf(x) for float32: Cephes' polynomial below 1, Abramowitz-Stegun 7.1.26 above.
  llvm::Value* emit_erf_f32(llvm::Value* x) {
    llvm::Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    llvm::Value* z = b_.CreateFMul(x, x);
    llvm::Value* near = b_.CreateFMul(x, poly(z, {7.853861353153693E-5, -8.010193625184903E-4, 5.188327685732524E-3,
                                                 -2.685381193529856E-2, 1.128358514861418E-1, -3.761262582423300E-1,
                                                 1.128379165726710E0}));
    llvm::Value* t = b_.CreateFDiv(fconst(1.0), b_.CreateFAdd(fconst(1.0), b_.CreateFMul(ax, fconst(0.3275911))));
    llvm::Value* q = b_.CreateFMul(poly(t, {1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592}), t);
    llvm::Value* far = b_.CreateFSub(fconst(1.0), b_.CreateFMul(q, emit_exp_f32(b_.CreateFNeg(z))));
    far = b_.CreateSelect(b_.CreateFCmpOLT(x, fconst(0.0)), b_.CreateFNeg(far), far);
    return b_.CreateSelect(b_.CreateFCmpOLT(ax, fconst(1.0)), near, far);
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
    llvm::Value* j = b_.CreateFPToSI(b_.CreateFMul(ax, fconst(1.27323954473516)), b_.getInt32Ty());
    j = b_.CreateAnd(b_.CreateAdd(j, b_.getInt32(1)), b_.getInt32(~1));  // round up to even
    llvm::Value* y = b_.CreateSIToFP(j, b_.getFloatTy());
    if (cosine) j = b_.CreateAdd(j, b_.getInt32(2));
    j = b_.CreateAnd(j, b_.getInt32(7));
    llvm::Value* flip = b_.CreateICmpUGT(j, b_.getInt32(3));
    j = b_.CreateSelect(flip, b_.CreateSub(j, b_.getInt32(4)), j);
    llvm::Value* r = b_.CreateFSub(ax, b_.CreateFMul(y, fconst(0.78515625)));
    r = b_.CreateFSub(r, b_.CreateFMul(y, fconst(2.4187564849853515625e-4)));
    r = b_.CreateFSub(r, b_.CreateFMul(y, fconst(3.77489497744594108e-8)));
    llvm::Value* z = b_.CreateFMul(r, r);
    llvm::Value* c = b_.CreateFAdd(b_.CreateFSub(b_.CreateFMul(b_.CreateFMul(poly(z, {2.443315711809948E-005, -1.388731625493765E-003,
                                                                                         4.166664568298827E-002}), z), z),
                                                 b_.CreateFMul(z, fconst(0.5))), fconst(1.0));
    llvm::Value* sn = b_.CreateFAdd(b_.CreateFMul(b_.CreateFMul(poly(z, {-1.9515295891E-4, 8.3321608736E-3, -1.6666654611E-1}), z), r), r);
    llvm::Value* use_cos = b_.CreateOr(b_.CreateICmpEQ(j, b_.getInt32(1)), b_.CreateICmpEQ(j, b_.getInt32(2)));
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

  // Transcendentals are generated for float32; float64 arguments are
  // computed in float32 precision (see docs/compiler.md).
  llvm::Value* emit_call(const Call* c) {
    std::vector<llvm::Value*> args;
    for (auto& a : c->args) args.push_back(emit_expr(a));
    llvm::Value* x = args[0];
    switch (c->op) {
      case Intrinsic::Sqrt: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
      case Intrinsic::Abs: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
      case Intrinsic::Floor: return emit_floor(x, false);
      case Intrinsic::Ceil: return emit_floor(x, true);
      default: break;
    }
    llvm::Type* ty = x->getType();
    bool narrow = !ty->isFloatTy();
    if (narrow)
      for (auto& a : args) a = b_.CreateFPCast(a, b_.getFloatTy());
    llvm::Value* r;
    switch (c->op) {
      case Intrinsic::Exp: r = emit_exp_f32(args[0]); break;
      case Intrinsic::Log: r = emit_log_f32(args[0]); break;
      case Intrinsic::Tanh: r = emit_tanh_f32(args[0]); break;
      case Intrinsic::Erf: r = emit_erf_f32(args[0]); break;
      case Intrinsic::Pow: r = emit_pow_f32(args[0], args[1]); break;
      case Intrinsic::Sin: r = emit_sincos_f32(args[0], false); break;
      case Intrinsic::Cos: r = emit_sincos_f32(args[0], true); break;
      case Intrinsic::Tan: r = b_.CreateFDiv(emit_sincos_f32(args[0], false), emit_sincos_f32(args[0], true)); break;
      case Intrinsic::Asin: r = emit_asin_f32(args[0]); break;
      case Intrinsic::Acos: r = b_.CreateFSub(fconst(1.5707963267948966), emit_asin_f32(args[0])); break;
      case Intrinsic::Atan: r = emit_atan_f32(args[0]); break;
      default: internal_error << "intrinsic " << intrinsic_name(c->op) << " has no code generator yet";
    }
    return narrow ? b_.CreateFPCast(r, ty) : r;
  }

  llvm::Value* address(const Buffer& buf, const Expr& index) {
    auto it = buffers_.find(buf.get());
    internal_assert(it != buffers_.end()) << "buffer " << buf->name << " not bound";
    return b_.CreateInBoundsGEP(llvm_type(buf->dtype), it->second, emit_expr(index));
  }

  // ----------------------------------------------------------- statements

  void emit_stmt(const Stmt& s) {
    if (!s.defined()) return;
    switch (s->node_type) {
      case NodeType::Block:
        for (auto& x : s.as<Block>()->stmts) emit_stmt(x);
        return;
      case NodeType::Store: {
        auto* st = s.as<Store>();
        llvm::Value* v = emit_expr(st->value);
        int align = st->buffer->dtype.bits / 8 ? st->buffer->dtype.bits / 8 : 1;
        b_.CreateAlignedStore(v, address(st->buffer, st->index), llvm::Align(align));
        return;
      }
      case NodeType::LetStmt: {
        auto* l = s.as<LetStmt>();
        vars_[l->var.get()] = emit_expr(l->value);
        emit_stmt(l->body);
        vars_.erase(l->var.get());
        return;
      }
      case NodeType::Allocate: {
        auto* a = s.as<Allocate>();
        // Allocas go in the entry block so LLVM promotes them to registers.
        llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
        buffers_[a->buffer.get()] = entry.CreateAlloca(llvm_type(a->buffer->dtype), entry.getInt64(a->buffer->size), a->buffer->name);
        emit_stmt(a->body);
        buffers_.erase(a->buffer.get());
        return;
      }
      case NodeType::IfThenElse: {
        auto* i = s.as<IfThenElse>();
        auto* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_);
        auto* else_bb = llvm::BasicBlock::Create(ctx_, "else", fn_);
        auto* done_bb = llvm::BasicBlock::Create(ctx_, "endif", fn_);
        b_.CreateCondBr(emit_expr(i->cond), then_bb, else_bb);
        b_.SetInsertPoint(then_bb);
        emit_stmt(i->then_case);
        b_.CreateBr(done_bb);
        b_.SetInsertPoint(else_bb);
        emit_stmt(i->else_case);
        b_.CreateBr(done_bb);
        b_.SetInsertPoint(done_bb);
        return;
      }
      case NodeType::For: emit_for(s.as<For>()); return;
      default: internal_error << "cannot emit " << node_type_name(s->node_type) << " as a statement";
    }
  }

  void emit_for(const For* f) {
    if (f->kind == ForKind::WorkgroupX || f->kind == ForKind::WorkgroupY || f->kind == ForKind::WorkgroupZ) {
      unsigned axis = f->kind == ForKind::WorkgroupX ? 0 : f->kind == ForKind::WorkgroupY ? 1 : 2;
      llvm::Value* idp = b_.CreateConstInBoundsGEP2_32(workgroup_ty_->getElementType(0),
                                                       b_.CreateStructGEP(workgroup_ty_, workgroup_, 0), 0, axis);
      llvm::Value* id = b_.CreateZExt(b_.CreateLoad(b_.getInt32Ty(), idp), b_.getInt64Ty());
      vars_[f->var.get()] = b_.CreateAdd(emit_expr(f->min), id);
      emit_stmt(f->body);
      vars_.erase(f->var.get());
      return;
    }
    llvm::Value* lo = emit_expr(f->min);
    llvm::Value* hi = b_.CreateAdd(lo, emit_expr(f->extent));
    auto* pre = b_.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(ctx_, "loop", fn_);
    auto* body = llvm::BasicBlock::Create(ctx_, "body", fn_);
    auto* exit = llvm::BasicBlock::Create(ctx_, "endloop", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    auto* phi = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
    phi->addIncoming(lo, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(phi, hi), body, exit);
    b_.SetInsertPoint(body);
    vars_[f->var.get()] = phi;
    emit_stmt(f->body);
    vars_.erase(f->var.get());
    llvm::Value* next = b_.CreateAdd(phi, b_.getInt64(1), "", false, true);
    auto* latch = b_.CreateBr(header);
    phi->addIncoming(next, b_.GetInsertBlock());
    if (f->kind == ForKind::Vectorized || f->kind == ForKind::Unrolled) {
      llvm::MDBuilder md(ctx_);
      auto* self = llvm::MDNode::getTemporary(ctx_, {}).release();
      const char* key = f->kind == ForKind::Vectorized ? "llvm.loop.vectorize.enable" : "llvm.loop.unroll.full";
      llvm::Metadata* hint = f->kind == ForKind::Vectorized
                                 ? (llvm::Metadata*)llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, key),
                                                                           llvm::ConstantAsMetadata::get(b_.getTrue())})
                                 : (llvm::Metadata*)llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, key)});
      auto* loop_id = llvm::MDNode::get(ctx_, {self, hint});
      loop_id->replaceOperandWith(0, loop_id);
      latch->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
    }
    b_.SetInsertPoint(exit);
  }
};

// The kernel table and kiln_kernel_library_query (see kiln_kernel_abi.h).
void emit_library_table(llvm::Module& m, const std::vector<llvm::Function*>& fns, const std::vector<KernelDef>& kernels) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  auto* ptr = llvm::PointerType::get(ctx, 0);
  std::vector<llvm::Constant*> names, entries;
  for (size_t i = 0; i < kernels.size(); i++) {
    auto* str = llvm::ConstantDataArray::getString(ctx, kernels[i].name, true);
    auto* g = new llvm::GlobalVariable(m, str->getType(), true, llvm::GlobalValue::PrivateLinkage, str, "name." + kernels[i].name);
    g->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    names.push_back(g);
    entries.push_back(fns[i]);
  }
  auto* arr_ty = llvm::ArrayType::get(ptr, kernels.size());
  auto* names_g = new llvm::GlobalVariable(m, arr_ty, true, llvm::GlobalValue::InternalLinkage,
                                           llvm::ConstantArray::get(arr_ty, names), "kiln_kernel_names");
  auto* fns_g = new llvm::GlobalVariable(m, arr_ty, true, llvm::GlobalValue::InternalLinkage,
                                         llvm::ConstantArray::get(arr_ty, entries), "kiln_kernels");
  auto* lib_ty = llvm::StructType::get(ctx, {b.getInt32Ty(), b.getInt32Ty(), ptr, ptr});
  auto* lib = llvm::ConstantStruct::get(lib_ty, {b.getInt32(KILN_KERNEL_ABI_VERSION), b.getInt32((uint32_t)kernels.size()),
                                                 names_g, fns_g});
  auto* lib_g = new llvm::GlobalVariable(m, lib_ty, true, llvm::GlobalValue::InternalLinkage, lib, "kiln_library");

  auto* qty = llvm::FunctionType::get(ptr, {b.getInt32Ty()}, false);
  auto* q = llvm::Function::Create(qty, llvm::Function::ExternalLinkage, KILN_KERNEL_LIBRARY_QUERY_SYMBOL, m);
  q->setVisibility(llvm::GlobalValue::DefaultVisibility);
  q->addFnAttr(llvm::Attribute::NoUnwind);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", q));
  llvm::Value* ok = b.CreateICmpEQ(q->getArg(0), b.getInt32(KILN_KERNEL_ABI_VERSION));
  b.CreateRet(b.CreateSelect(ok, lib_g, llvm::ConstantPointerNull::get(ptr)));
}

void optimize(llvm::Module& m, llvm::TargetMachine& tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  // Like clang at -O3: the loop and SLP vectorizers are off unless asked for.
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  pto.LoopInterleaving = true;
  llvm::PassBuilder pb(&tm, pto);
  // No library functions exist for kernels: LLVM must not turn loops into
  // memset/memcpy calls or math into libm calls.
  llvm::TargetLibraryInfoImpl tlii(llvm::Triple(m.getTargetTriple()));
  tlii.disableAllFunctions();
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
}

}  // namespace

std::string compile_kernels(const std::vector<KernelDef>& kernels, const TargetSpec& target, const CodegenOptions& options) {
  auto tm = create_target_machine(target);
  llvm::LLVMContext ctx;
  ctx.setOpaquePointers(true);
  llvm::Module m("kiln_kernels", ctx);
  m.setTargetTriple(target.triple);
  m.setDataLayout(tm->createDataLayout());
  m.setPICLevel(llvm::PICLevel::BigPIC);

  auto* ptr = llvm::PointerType::get(ctx, 0);
  auto* i32 = llvm::Type::getInt32Ty(ctx);
  auto* dims = llvm::ArrayType::get(i32, 3);
  // Must match kiln_kernel_dispatch_state_t / kiln_kernel_workgroup_state_t.
  auto* dispatch_ty = llvm::StructType::create(ctx, {dims, i32, ptr, i32, ptr}, "kiln_kernel_dispatch_state_t");
  auto* workgroup_ty = llvm::StructType::create(ctx, {dims, i32}, "kiln_kernel_workgroup_state_t");

  std::vector<llvm::Function*> fns;
  for (auto& k : kernels) {
    KernelEmitter e(m, dispatch_ty, workgroup_ty);
    llvm::Function* f = e.emit(k);
    f->addFnAttr("target-cpu", target.cpu);
    if (!target.features.empty()) f->addFnAttr("target-features", target.features);
    fns.push_back(f);
  }
  emit_library_table(m, fns, kernels);

  std::string err;
  llvm::raw_string_ostream err_os(err);
  internal_assert(!llvm::verifyModule(m, &err_os)) << "generated LLVM IR is invalid: " << err_os.str();
  optimize(m, *tm);
  if (options.llvm_ir_out) {
    llvm::raw_string_ostream os(*options.llvm_ir_out);
    m.print(os, nullptr);
  }

  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  pm.add(new llvm::TargetLibraryInfoWrapperPass([&] {
    llvm::TargetLibraryInfoImpl t(llvm::Triple(target.triple));
    t.disableAllFunctions();
    return t;
  }()));
  internal_assert(!tm->addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_ObjectFile)) << "LLVM cannot emit objects for " << target.str();
  pm.run(m);
  return std::string(buffer.begin(), buffer.end());
}

}  // namespace kiln
