#include "codegen/codegen_llvm.h"

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsAArch64.h>
#include <llvm/IR/IntrinsicsARM.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <map>
#include <optional>
#include <set>

#include "codegen/arm_eabi_helpers.h"
#include "codegen/math_llvm.h"
#include "codegen/target_machine.h"
#include "kiln_kernel_abi.h"
#include "support/diagnostics.h"
#include "tir/ir_printer.h"
#include "tir/ir_visitor.h"
#include "tir/simplify.h"

namespace kiln {
namespace {

using namespace tir;

// Emits one kernel function from its TIR body.
class KernelEmitter {
 public:
  KernelEmitter(llvm::Module& m, llvm::StructType* dispatch_ty, llvm::StructType* workgroup_ty, const VectorInfo& vector)
      : m_(m), ctx_(m.getContext()), b_(ctx_), dispatch_ty_(dispatch_ty), workgroup_ty_(workgroup_ty), vector_(vector) {
    // a * b + c may become one fused multiply-add (one rounding instead of
    // two, like C compilers' default -ffp-contract): without it every
    // multiply-accumulate costs two instructions.
    llvm::FastMathFlags fmf;
    fmf.setAllowContract(true);
    b_.setFastMathFlags(fmf);
  }

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
    // Shape symbols: push constant i is the value of k.symbols[i] (docs/kernel-abi.md).
    if (!k.symbols.empty()) {
      llvm::Value* constants = b_.CreateLoad(ptr, b_.CreateStructGEP(dispatch_ty_, dispatch, 4), "push_constants");
      for (size_t i = 0; i < k.symbols.size(); i++) {
        llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getInt32Ty(), constants, i);
        auto* load = b_.CreateLoad(b_.getInt32Ty(), slot, "sym" + std::to_string(k.symbols[i]));
        load->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(ctx_, {}));
        symbols_[k.symbols[i]] = b_.CreateZExt(load, b_.getInt64Ty());
      }
      start_hoist_block();
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
  VectorInfo vector_;  // the target's vector unit (its int8 dot product)
  llvm::Function* fn_ = nullptr;
  llvm::Value* workgroup_ = nullptr;
  std::map<const ExprNode*, llvm::Value*> vars_;
  std::map<int, llvm::Value*> symbols_;  // shape symbol index -> its value (i64), from the push constants
  std::set<const ExprNode*> workgroup_vars_;            // variables of the workgroup loops (bound so far)
  std::map<const ExprNode*, bool> invariant_;           // workgroup_invariant() of each node seen
  std::map<std::string, llvm::Value*> hoisted_;         // workgroup-invariant values computed at hoist_bb_
  llvm::BasicBlock* hoist_bb_ = nullptr;                // where they are computed (ends with a branch)
  bool hoisting_ = false;                               // emitting into hoist_bb_
  std::map<const BufferNode*, llvm::Value*> buffers_;
  std::map<const BufferNode*, llvm::Value*> allocas_;  // the stack slot of each Allocate'd buffer
  // Vector lanes: a `vectorized` loop of constant extent is emitted as one
  // iteration over all lanes (Halide-style). Its variable is a <lanes x i64>
  // ramp; every value that depends on it is a vector, the rest stay scalars
  // and are broadcast where they meet a vector. Loads and stores whose index
  // moves by one element per lane become vector loads and stores, others
  // gathers and scatters.
  int lanes_ = 0;                                             // 0 outside vector loops
  const ExprNode* lane_var_ = nullptr;                        // the vectorized loop's variable
  llvm::Value* mask_ = nullptr;  // <lanes x i1>: the lanes a guard lets through (null: all)
  std::map<const ExprNode*, std::optional<int64_t>> lane_lets_;  // vector Let vars: elements per lane (nullopt: not affine)

  llvm::Value* splat(llvm::Value* v) {
    if (!lanes_ || v->getType()->isVectorTy()) return v;
    return b_.CreateVectorSplat(lanes_, v);
  }
  // Broadcasts whichever of x, y is a scalar when the other is a vector.
  void match(llvm::Value*& x, llvm::Value*& y) {
    if (x->getType()->isVectorTy() != y->getType()->isVectorTy()) x = splat(x), y = splat(y);
  }
  llvm::Type* like(llvm::Type* t, llvm::Value* shape) {
    if (auto* v = llvm::dyn_cast<llvm::VectorType>(shape->getType())) return llvm::VectorType::get(t, v->getElementCount());
    return t;
  }

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

  // Integer arithmetic over shape symbols and workgroup ids only (a run-time
  // extent, a tile's bounds, the decomposition of a fused workgroup index)
  // is the same for the whole workgroup: it is computed once, at the top
  // (hoist_bb_), and shared. LLVM would not hoist such a division out of the
  // guarded blocks it sits in (it cannot prove the divisor non-zero).
  bool workgroup_invariant(const Expr& e) {
    auto it = invariant_.find(e.get());
    if (it != invariant_.end()) return it->second;
    bool r = false;
    switch (e->node_type) {
      case NodeType::IntImm: r = true; break;
      case NodeType::Var: r = e.as<Var>()->symbol >= 0 || workgroup_vars_.count(e.get()); break;
#define KILN_INVARIANT_BINARY(N) \
  case NodeType::N: r = workgroup_invariant(e.as<N>()->a) && workgroup_invariant(e.as<N>()->b); break;
      KILN_INVARIANT_BINARY(Add) KILN_INVARIANT_BINARY(Sub) KILN_INVARIANT_BINARY(Mul) KILN_INVARIANT_BINARY(Div)
      KILN_INVARIANT_BINARY(Mod) KILN_INVARIANT_BINARY(Min) KILN_INVARIANT_BINARY(Max) KILN_INVARIANT_BINARY(LT)
      KILN_INVARIANT_BINARY(LE) KILN_INVARIANT_BINARY(EQ) KILN_INVARIANT_BINARY(NE) KILN_INVARIANT_BINARY(And)
      KILN_INVARIANT_BINARY(Or) KILN_INVARIANT_BINARY(BitAnd) KILN_INVARIANT_BINARY(BitOr)
      KILN_INVARIANT_BINARY(BitXor)
#undef KILN_INVARIANT_BINARY
      case NodeType::Not: r = workgroup_invariant(e.as<Not>()->a); break;
      case NodeType::BitNot: r = workgroup_invariant(e.as<BitNot>()->a); break;
      case NodeType::Select:
        r = workgroup_invariant(e.as<Select>()->cond) && workgroup_invariant(e.as<Select>()->true_value) &&
            workgroup_invariant(e.as<Select>()->false_value);
        break;
      default: break;
    }
    r = r && !e.type().is_float();
    invariant_[e.get()] = r;
    return r;
  }

  llvm::Value* emit_expr(const Expr& e) {
    // (Only values with a division by a run-time extent: the rest LLVM
    // hoists itself, and values held across the kernel cost registers.)
    bool div = (e->node_type == NodeType::Div && !as_const_int(e.as<Div>()->b)) ||
               (e->node_type == NodeType::Mod && !as_const_int(e.as<Mod>()->b));
    if (hoist_bb_ && !hoisting_ && div && workgroup_invariant(e)) {
      std::string key = to_string(e);
      auto it = hoisted_.find(key);
      if (it != hoisted_.end()) return it->second;
      auto saved = b_.saveIP();
      b_.SetInsertPoint(hoist_bb_->getTerminator());
      llvm::Value* outer_mask = mask_;
      mask_ = nullptr;
      hoisting_ = true;
      llvm::Value* v = emit_expr_here(e);
      hoisting_ = false;
      mask_ = outer_mask;
      b_.restoreIP(saved);
      hoisted_[key] = v;
      return v;
    }
    return emit_expr_here(e);
  }

  // Ends the current block with a branch to a new one: the ended block is
  // where workgroup-invariant values are computed from now on.
  void start_hoist_block() {
    hoist_bb_ = b_.GetInsertBlock();
    auto* next = llvm::BasicBlock::Create(ctx_, "workgroup", fn_);
    b_.CreateBr(next);
    b_.SetInsertPoint(next);
  }

  llvm::Value* emit_expr_here(const Expr& e) {
    switch (e->node_type) {
      case NodeType::IntImm: return llvm::ConstantInt::get(llvm_type(e.type()), e.as<IntImm>()->value, true);
      case NodeType::FloatImm: return llvm::ConstantFP::get(llvm_type(e.type()), e.as<FloatImm>()->value);
      case NodeType::Var: {
        if (int sym = e.as<Var>()->symbol; sym >= 0) {
          auto s = symbols_.find(sym);
          internal_assert(s != symbols_.end()) << "shape symbol " << e.as<Var>()->name << " is not a parameter of the kernel";
          return s->second;
        }
        auto it = vars_.find(e.get());
        internal_assert(it != vars_.end()) << "unbound Var " << e.as<Var>()->name;
        return it->second;
      }
      case NodeType::Cast: return emit_cast(e.as<Cast>());
      case NodeType::Add: {
        // acc + Dot(a, b): one dot-product instruction where the target has it.
        auto* add = e.as<Add>();
        for (int side = 0; side < 2; side++) {
          auto* c = (side ? add->a : add->b).as<Call>();
          if (c && is_int8_dot(c->op)) return emit_int8_dot(c, emit_expr(side ? add->b : add->a));
        }
        return arith(e, &llvm::IRBuilder<>::CreateAdd, &llvm::IRBuilder<>::CreateFAdd);
      }
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
      case NodeType::And:
      case NodeType::Or: {
        bool is_and = e->node_type == NodeType::And;
        llvm::Value* x = emit_expr(is_and ? e.as<And>()->a : e.as<Or>()->a);
        llvm::Value* y = emit_expr(is_and ? e.as<And>()->b : e.as<Or>()->b);
        match(x, y);
        return is_and ? b_.CreateAnd(x, y) : b_.CreateOr(x, y);
      }
      case NodeType::Not: return b_.CreateNot(emit_expr(e.as<Not>()->a));
      case NodeType::BitAnd: return bitwise(e.as<BitAnd>()->a, e.as<BitAnd>()->b, llvm::Instruction::And);
      case NodeType::BitOr: return bitwise(e.as<BitOr>()->a, e.as<BitOr>()->b, llvm::Instruction::Or);
      case NodeType::BitXor: return bitwise(e.as<BitXor>()->a, e.as<BitXor>()->b, llvm::Instruction::Xor);
      case NodeType::BitNot: return b_.CreateNot(emit_expr(e.as<BitNot>()->a));
      case NodeType::Select: {
        auto* s = e.as<Select>();
        if (llvm::Value* v = emit_load_or_constant(s)) return v;
        llvm::Value* c = emit_expr(s->cond);
        llvm::Value* x = emit_expr(s->true_value);
        llvm::Value* y = emit_expr(s->false_value);
        match(x, y);
        if (c->getType()->isVectorTy()) x = splat(x), y = splat(y);
        return b_.CreateSelect(c, x, y);
      }
      case NodeType::Load: {
        auto* l = e.as<Load>();
        llvm::Type* ty = llvm_type(l->type);
        llvm::Align align(l->type.bits / 8 ? l->type.bits / 8 : 1);
        llvm::Value* index = emit_expr(l->index);
        if (index->getType()->isVectorTy()) {
          auto* vty = llvm::VectorType::get(ty, llvm::ElementCount::getFixed(lanes_));
          bool contiguous = lane_stride(l->index) == std::optional<int64_t>(1);
          // A guarded lane reads nothing (a ragged edge) from a kernel's
          // buffers; a local tile (an accumulator) is read whole, as its
          // lanes all lie inside it, so that LLVM keeps it in registers.
          if (mask_ && l->buffer->binding >= 0) {
            llvm::Value* zero = llvm::Constant::getNullValue(vty);
            if (contiguous)
              return b_.CreateMaskedLoad(vty, address(l->buffer, b_.CreateExtractElement(index, (uint64_t)0)), align,
                                         mask_, zero);
            return b_.CreateMaskedGather(vty, address(l->buffer, index), align, mask_, zero);
          }
          if (contiguous)
            return invariant(l->buffer, b_.CreateAlignedLoad(vty, address(l->buffer, b_.CreateExtractElement(index, (uint64_t)0)), align));
          if (l->type.bits == 8 && l->buffer->size == 256 && vector_.byte_table)
            if (llvm::Value* v = emit_byte_table(l->buffer, index)) return v;
          return b_.CreateMaskedGather(vty, address(l->buffer, index), align);
        }
        return invariant(l->buffer, b_.CreateAlignedLoad(ty, address(l->buffer, masked_uniform_index(index)), align));
      }
      case NodeType::Call: return emit_call(e.as<Call>());
      case NodeType::Let: {
        auto* l = e.as<Let>();
        bind_let(l->var, l->value);
        llvm::Value* v = emit_expr(l->body);
        unbind_let(l->var);
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
    match(x, y);
    if (e.type().is_float()) return (b_.*fop)(x, y, "", nullptr);
    // Index arithmetic never wraps (shapes are checked to fit in int64).
    bool nsw = e.type() == Index();
    return (b_.*iop)(x, y, "", false, nsw);
  }

  llvm::Value* bitwise(const Expr& a, const Expr& b, llvm::Instruction::BinaryOps op) {
    llvm::Value* x = emit_expr(a);
    llvm::Value* y = emit_expr(b);
    match(x, y);
    return b_.CreateBinOp(op, x, y);
  }

  llvm::Value* emit_div_mod(const Expr& ea, const Expr& eb, bool is_div) {
    llvm::Value* a = emit_expr(ea);
    llvm::Value* b = emit_expr(eb);
    match(a, b);
    Type t = ea.type();
    if (t.is_float()) {
      internal_assert(is_div) << "float Mod is not supported";
      return b_.CreateFDiv(a, b);
    }
    // A divisor of zero (model data) gives 0, as numpy does, and MIN / -1
    // wraps to MIN, instead of the trap x86's division raises: bad input
    // must not crash the process. A constant divisor other than 0 and -1
    // needs neither guard, nor does a run-time extent (over shape symbols
    // only, at least 1 for every value of them).
    llvm::Value* zero = llvm::ConstantInt::get(a->getType(), 0);
    llvm::Value* by_zero = nullptr;
    const llvm::ConstantInt* c = llvm::dyn_cast<llvm::ConstantInt>(b);
    if (auto* k = llvm::dyn_cast<llvm::Constant>(b); k && !c)
      c = llvm::dyn_cast_or_null<llvm::ConstantInt>(k->getSplatValue());  // a splat vector constant
    bool positive_extent = !c && only_symbols(eb) && bounds_of(eb).min >= 1;
    if ((!c && !positive_extent) || (c && (c->isZero() || c->isMinusOne()))) {
      by_zero = b_.CreateICmpEQ(b, zero);
      llvm::Value* bad = by_zero;
      if (!t.is_uint() && !t.is_bool()) {
        llvm::Value* min = llvm::ConstantInt::get(a->getType(), llvm::APInt::getSignedMinValue(t.bits));
        bad = b_.CreateOr(bad, b_.CreateAnd(b_.CreateICmpEQ(a, min),
                                            b_.CreateICmpEQ(b, llvm::Constant::getAllOnesValue(a->getType()))));
      }
      b = b_.CreateSelect(bad, llvm::ConstantInt::get(a->getType(), 1), b);
    }
    auto guarded = [&](llvm::Value* v) { return by_zero ? b_.CreateSelect(by_zero, zero, v) : v; };
    if (t.is_uint() || t.is_bool()) return guarded(is_div ? b_.CreateUDiv(a, b) : b_.CreateURem(a, b));
    // Floor semantics: adjust C's truncating result when the signs differ.
    llvm::Value* q = b_.CreateSDiv(a, b);
    llvm::Value* r = b_.CreateSRem(a, b);
    llvm::Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpSLT(b_.CreateXor(r, b), zero));
    if (is_div) return guarded(b_.CreateSub(q, b_.CreateZExt(adjust, a->getType())));
    return guarded(b_.CreateSelect(adjust, b_.CreateAdd(r, b), r));
  }

  llvm::Value* emit_min_max(const Expr& ea, const Expr& eb, bool is_min) {
    llvm::Value* a = emit_expr(ea);
    llvm::Value* b = emit_expr(eb);
    match(a, b);
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
    match(a, b);
    Type t = ea.type();
    if (t.is_float()) return b_.CreateFCmp(f, a, b);
    return b_.CreateICmp(t.is_int() ? s : u, a, b);
  }

  llvm::Value* emit_cast(const Cast* c) {
    if (llvm::Value* r = emit_round_to_int(c)) return r;
    llvm::Value* v = emit_expr(c->value);
    Type from = c->value.type(), to = c->type;
    llvm::Type* ty = like(llvm_type(to), v);
    if (to.is_bool()) {
      return from.is_float() ? b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0))
                             : b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
    }
    if (from.is_float() && to.is_float()) {
      // f64 -> f16 has no instruction (LLVM would call __truncdfhf2): go through f32.
      if ((from.bits == 64 && to.bits == 16) || (from.bits == 16 && to.bits == 64)) v = b_.CreateFPCast(v, like(b_.getFloatTy(), v));
      return b_.CreateFPCast(v, ty);
    }
    if (from.is_float()) return to.is_int() ? b_.CreateFPToSI(v, ty) : b_.CreateFPToUI(v, ty);
    if (to.is_float()) return from.is_int() ? b_.CreateSIToFP(v, ty) : b_.CreateUIToFP(v, ty);
    return b_.CreateIntCast(v, ty, from.is_int());
  }

  // int32(RoundEven(x)) for float32 in one instruction that rounds half to
  // even: x86 vectors cvtps2dq (the default rounding mode, which kiln never
  // changes), AArch64 fcvtns; instead of a round and a truncating
  // conversion. Out-of-range lanes give INT_MIN (x86) or saturate (AArch64)
  // where fptosi is undefined; quantize() clamps first. Null where this does
  // not apply (other widths, x86 scalars, other targets).
  llvm::Value* emit_round_to_int(const Cast* c) {
    auto* call = c->value.as<Call>();
    if (!call || call->op != Intrinsic::RoundEven || c->type != tir::Int(32) || c->value.type() != tir::Float(32))
      return nullptr;
    llvm::Triple triple(m_.getTargetTriple());
    int width = varies(call->args[0]) ? lanes_ : 1;
    llvm::Type* i32 = b_.getInt32Ty();
    if (triple.isAArch64() && (width == 1 || width == 4)) {
      llvm::Value* x = emit_expr(call->args[0]);
      llvm::Type* ity = width == 1 ? i32 : llvm::FixedVectorType::get(i32, 4);
      llvm::Function* f = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::aarch64_neon_fcvtns, {ity, x->getType()});
      return b_.CreateCall(f, {x});
    }
    if (!triple.isX86() || !((width == 16 && vector_.lanes >= 16) || (width == 8 && vector_.lanes >= 8) || width == 4))
      return nullptr;
    llvm::Value* x = emit_expr(call->args[0]);
    if (width == 16) {
      llvm::Function* f = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::x86_avx512_mask_cvtps2dq_512);
      auto* ity = llvm::FixedVectorType::get(i32, 16);
      return b_.CreateCall(f, {x, llvm::UndefValue::get(ity), b_.getInt16(0xffff), b_.getInt32(4)});  // 4: current direction
    }
    llvm::Intrinsic::ID id = width == 8 ? llvm::Intrinsic::x86_avx_cvt_ps2dq_256 : llvm::Intrinsic::x86_sse2_cvtps2dq;
    return b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, id), {x});
  }

  // Transcendentals are generated for float32; float64 arguments are
  // computed in float32 precision (see docs/compiler.md).
  llvm::Value* emit_call(const Call* c) {
    if (is_int8_dot(c->op)) return emit_int8_dot(c, nullptr);
    // Round half to even in one instruction where the target has one
    // (x86 with AVX: vroundps/vrndscaleps; AArch64: frintn); elsewhere
    // (ARMv7, x86 without SSE4.1) LLVM would call libm: emulated instead.
    llvm::Triple triple(m_.getTargetTriple());
    if (c->op == Intrinsic::RoundEven && ((triple.isX86() && vector_.lanes >= 8) || triple.isAArch64()))
      return b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, emit_expr(c->args[0]));
    std::vector<llvm::Value*> args;
    bool vector = false;
    for (auto& a : c->args) {
      args.push_back(emit_expr(a));
      vector |= args.back()->getType()->isVectorTy();
    }
    if (vector)
      for (auto& a : args) a = splat(a);
    return emit_math_intrinsic(b_, c->op, args);
  }

  // acc + DotU8S8/DotS8S8(a, b) (acc null: 0), on scalars or vectors of
  // int32 words. The target's instruction where it has one for this width
  // and signedness (vpdpbusd; usdot, sdot on 4-word pieces); else the bytes
  // are widened, multiplied and summed in fours.
  llvm::Value* emit_int8_dot(const Call* c, llvm::Value* acc) {
    bool u8 = c->op == Intrinsic::DotU8S8;
    llvm::Value* a = emit_expr(c->args[0]);
    llvm::Value* b = emit_expr(c->args[1]);
    match(a, b);
    if (acc) match(acc, a), match(a, b);
    auto* vty = llvm::dyn_cast<llvm::FixedVectorType>(a->getType());
    int64_t words = vty ? vty->getNumElements() : 1;
    llvm::Type* i32 = b_.getInt32Ty();
    if (!acc) acc = llvm::Constant::getNullValue(a->getType());
    llvm::Triple triple(m_.getTargetTriple());
    auto pieces = [&](int64_t n, auto&& one) -> llvm::Value* {  // one instruction per n words
      if (words % n) return nullptr;
      if (words == n) return one(acc, a, b);
      llvm::Value* out = llvm::UndefValue::get(a->getType());
      for (int64_t p = 0; p < words; p += n) {
        llvm::SmallVector<int, 16> idx;
        for (int64_t i = 0; i < n; i++) idx.push_back((int)(p + i));
        llvm::Value* r = one(b_.CreateShuffleVector(acc, idx), b_.CreateShuffleVector(a, idx), b_.CreateShuffleVector(b, idx));
        for (int64_t i = 0; i < n; i++) out = b_.CreateInsertElement(out, b_.CreateExtractElement(r, (uint64_t)i), (uint64_t)(p + i));
      }
      return out;
    };
    llvm::Value* fast = nullptr;
    if (vty && triple.isX86() && u8 && vector_.int8_dot == Int8Dot::U8S8 && words % 8 == 0) {
      // zmm on AVX-512 targets (which all have the VL forms too), ymm on
      // AVX-VNNI ones; longer vectors in pieces.
      int64_t width = vector_.lanes == 16 && words % 16 == 0 ? 16 : 8;
      auto id = width == 16 ? llvm::Intrinsic::x86_avx512_vpdpbusd_512 : llvm::Intrinsic::x86_avx512_vpdpbusd_256;
      fast = pieces(width, [&](llvm::Value* c, llvm::Value* x, llvm::Value* y) { return b_.CreateIntrinsic(id, {}, {c, x, y}); });
    } else if (vty && triple.isAArch64() && vector_.int8_dot != Int8Dot::None &&
               (u8 ? vector_.int8_dot == Int8Dot::U8S8 : true)) {
      // sdot needs the dotprod feature (which i8mm targets have too); usdot needs i8mm.
      auto id = u8 ? llvm::Intrinsic::aarch64_neon_usdot : llvm::Intrinsic::aarch64_neon_sdot;
      auto* v16 = llvm::FixedVectorType::get(b_.getInt8Ty(), 16);
      auto* v4 = llvm::FixedVectorType::get(i32, 4);
      fast = pieces(4, [&](llvm::Value* c4, llvm::Value* a4, llvm::Value* b4) {
        return b_.CreateIntrinsic(id, {v4, v16}, {c4, b_.CreateBitCast(a4, v16), b_.CreateBitCast(b4, v16)});
      });
    }
    if (fast) return fast;
    // Widened. ARM: bytes to int16 (a product of a byte and a signed byte
    // fits), int16 products (vmull.s8 for two signed operands), a pairwise
    // add long into int32 per 128 bits (vpaddl.s16 / saddlp), then the two
    // pairs of each word. Elsewhere (x86 without VNNI): bytes to int32,
    // products, and the four of each word summed pairwise (measured faster
    // there than vpmaddwd on int16, whose pairs need a horizontal add).
    auto half_of = [&](llvm::Value* v, int64_t n, int64_t first) {  // lanes first, first + 2, ...
      llvm::SmallVector<int, 64> idx;
      for (int64_t i = 0; i < n / 2; i++) idx.push_back((int)(2 * i + first));
      return b_.CreateShuffleVector(v, idx);
    };
    auto* bytes = llvm::FixedVectorType::get(b_.getInt8Ty(), (unsigned)(4 * words));
    llvm::Value* ab = b_.CreateBitCast(a, bytes);
    llvm::Value* bb = b_.CreateBitCast(b, bytes);
    llvm::Value* p;
    int64_t n = 4 * words;  // lanes of p
    if ((triple.isARM() || triple.isAArch64()) && words % 4 == 0) {
      auto* halves = llvm::FixedVectorType::get(b_.getInt16Ty(), (unsigned)n);
      llvm::Value* prod = b_.CreateMul(u8 ? b_.CreateZExt(ab, halves) : b_.CreateSExt(ab, halves), b_.CreateSExt(bb, halves));
      auto* v8 = llvm::FixedVectorType::get(b_.getInt16Ty(), 8);
      auto* v4 = llvm::FixedVectorType::get(i32, 4);
      auto id = triple.isAArch64() ? llvm::Intrinsic::aarch64_neon_saddlp : llvm::Intrinsic::arm_neon_vpaddls;
      llvm::SmallVector<llvm::Value*, 16> parts;
      for (int64_t q = 0; q < n; q += 8) {
        llvm::SmallVector<int, 8> idx;
        for (int i = 0; i < 8; i++) idx.push_back((int)(q + i));
        parts.push_back(b_.CreateIntrinsic(id, {v4, v8}, {b_.CreateShuffleVector(prod, idx)}));
      }
      p = concat(parts);
      n /= 2;
    } else {
      auto* wide = llvm::FixedVectorType::get(i32, (unsigned)n);
      p = b_.CreateMul(u8 ? b_.CreateZExt(ab, wide) : b_.CreateSExt(ab, wide), b_.CreateSExt(bb, wide));
    }
    for (; n > words; n /= 2) p = b_.CreateAdd(half_of(p, n, 0), half_of(p, n, 1));  // [p0+p1, p2+p3, ...]
    if (!vty) p = b_.CreateExtractElement(p, (uint64_t)0);
    return b_.CreateAdd(acc, p);
  }

  // The vectors of `parts` (all of one type) one after the other.
  llvm::Value* concat(llvm::ArrayRef<llvm::Value*> parts) {
    llvm::SmallVector<llvm::Value*, 16> level(parts.begin(), parts.end());
    while (level.size() > 1) {  // pairwise; the count is a power of two here
      llvm::SmallVector<llvm::Value*, 16> next;
      for (size_t i = 0; i + 1 < level.size(); i += 2) {
        unsigned n = llvm::cast<llvm::FixedVectorType>(level[i]->getType())->getNumElements();
        llvm::SmallVector<int, 64> idx;
        for (unsigned k = 0; k < 2 * n; k++) idx.push_back((int)k);
        next.push_back(b_.CreateShuffleVector(level[i], level[i + 1], idx));
      }
      internal_assert(level.size() % 2 == 0) << "concat of " << level.size() << " vectors";
      level = next;
    }
    return level[0];
  }

  // A load from a graph constant (weights, scales, zero points) is marked
  // invariant: no store of the kernel writes it, so LLVM may hoist it out of
  // loops and merge repeats even past stores to the kernel's outputs (which
  // it must otherwise assume alias every other buffer).
  llvm::Value* invariant(const Buffer& buf, llvm::LoadInst* load) {
    if (buf->constant) load->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(ctx_, {}));
    return load;
  }

  // The address of element `index` (a vector of addresses for a vector index).
  llvm::Value* address(const Buffer& buf, llvm::Value* index) {
    auto it = buffers_.find(buf.get());
    internal_assert(it != buffers_.end()) << "buffer " << buf->name << " not bound";
    // Under a lane mask, masked-off lanes may address past the buffer: no inbounds.
    if (mask_) return b_.CreateGEP(llvm_type(buf->dtype), it->second, index);
    return b_.CreateInBoundsGEP(llvm_type(buf->dtype), it->second, index);
  }
  // A uniform (scalar) index under a lane mask: the load happens even when
  // every lane is masked off, so then it reads element 0 instead.
  llvm::Value* masked_uniform_index(llvm::Value* index) {
    if (!mask_) return index;
    llvm::Value* any = b_.CreateOrReduce(mask_);
    return b_.CreateSelect(any, index, llvm::ConstantInt::get(index->getType(), 0));
  }

  // A vector of lookups in a 256-entry table of bytes (kiln.LookupTable):
  // the table is held in registers (the loads are loop-invariant) and
  // permutes pick the lanes: two vpermi2b over 128 bytes each and a select
  // on bit 7 (AVX512-VBMI), or tbl + three tbx over 64 bytes each (AArch64).
  // An index in bounds is below 256, so its low byte is all of it. Null
  // where the lanes do not fit one register (the caller gathers instead).
  llvm::Value* emit_byte_table(const Buffer& buf, llvm::Value* index) {
    llvm::Triple triple(m_.getTargetTriple());
    int width = triple.isX86() ? 64 : 16;
    if (lanes_ > width || !(triple.isX86() || triple.isAArch64())) return nullptr;
    llvm::Type* i8 = b_.getInt8Ty();
    auto* wide_ty = llvm::FixedVectorType::get(i8, width);
    llvm::Value* idx = b_.CreateTrunc(index, llvm::FixedVectorType::get(i8, lanes_));
    std::vector<int> widen(width, -1), narrow(lanes_);
    for (int k = 0; k < lanes_; k++) widen[k] = narrow[k] = k;
    if (lanes_ < width) idx = b_.CreateShuffleVector(idx, widen);
    llvm::Value* base = address(buf, b_.getInt64(0));
    std::vector<llvm::Value*> part(256 / width);
    for (int k = 0; k < 256 / width; k++)
      part[k] = b_.CreateAlignedLoad(wide_ty, b_.CreateConstInBoundsGEP1_64(i8, base, k * width), llvm::Align(1));
    llvm::Value* r;
    if (triple.isX86()) {
      llvm::Function* perm = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::x86_avx512_vpermi2var_qi_512);
      llvm::Value* lo = b_.CreateCall(perm, {part[0], idx, part[1]});
      llvm::Value* hi = b_.CreateCall(perm, {part[2], idx, part[3]});
      r = b_.CreateSelect(b_.CreateICmpSLT(idx, llvm::Constant::getNullValue(wide_ty)), hi, lo);
    } else {
      // tbl gives 0 for an index past its 64 bytes, tbx keeps the lane: each
      // quarter of the table answers the indices it holds.
      llvm::Function* tbl = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::aarch64_neon_tbl4, {wide_ty});
      llvm::Function* tbx = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::aarch64_neon_tbx4, {wide_ty});
      r = b_.CreateCall(tbl, {part[0], part[1], part[2], part[3], idx});
      for (int q = 1; q < 4; q++) {
        llvm::Value* shifted = b_.CreateSub(idx, llvm::ConstantInt::get(wide_ty, 64 * q));
        r = b_.CreateCall(tbx, {r, part[4 * q], part[4 * q + 1], part[4 * q + 2], part[4 * q + 3], shifted});
      }
    }
    return lanes_ < width ? b_.CreateShuffleVector(r, narrow) : r;
  }

  // select(c, buf[i], k) with a constant k, as padded reads are written:
  // one load from a selected address (buf + i, or a constant holding k).
  // Unlike a select of values, the load no longer depends on c, so it can
  // fold into its user (e.g. a broadcast operand of a vector FMA), and
  // choosing the address is integer work off the floating-point pipes.
  // Only for scalar conditions and indices; returns null otherwise.
  llvm::Value* emit_load_or_constant(const Select* s) {
    auto* l = s->true_value.as<Load>();
    auto* k = s->false_value.as<FloatImm>();
    if (!l || !k || varies(s->cond) || varies(l->index)) return nullptr;
    llvm::Type* ty = llvm_type(l->type);
    llvm::Value* c = emit_expr(s->cond);
    llvm::Value* p = address(l->buffer, emit_expr(l->index));
    llvm::Value* kp = constant_slot(ty, k->value);
    llvm::Align align(l->type.bits / 8 ? l->type.bits / 8 : 1);
    return b_.CreateAlignedLoad(ty, b_.CreateSelect(c, p, kp), align);
  }
  // A read-only global holding one value of type `ty` (shared by the module).
  llvm::Value* constant_slot(llvm::Type* ty, double value) {
    llvm::Constant* init = llvm::ConstantFP::get(ty, value);
    std::string name;
    llvm::raw_string_ostream os(name);
    os << "kiln.constant.";
    init->printAsOperand(os, true);
    if (auto* g = m_.getNamedGlobal(os.str())) return g;
    auto* g = new llvm::GlobalVariable(m_, ty, true, llvm::GlobalValue::PrivateLinkage, init, os.str());
    g->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    return g;
  }

  // Binds a Let variable; a vector value records how it moves per lane.
  void bind_let(const Expr& var, const Expr& value) {
    llvm::Value* v = emit_expr(value);
    vars_[var.get()] = v;
    if (v->getType()->isVectorTy()) lane_lets_[var.get()] = lane_stride(value);
  }
  void unbind_let(const Expr& var) {
    vars_.erase(var.get());
    lane_lets_.erase(var.get());
  }

  // Whether `e` depends on the vector lane.
  bool varies(const Expr& e) {
    struct Finder : IRVisitor {
      KernelEmitter* self;
      bool found = false;
      using IRVisitor::visit;
      void visit(const Var* op) override { found |= op == self->lane_var_ || self->lane_lets_.count(op); }
    } f;
    f.self = this;
    f.visit_expr(e);
    return f.found;
  }

  // How many elements an index moves from one lane to the next, if it is
  // affine in the lane (0: the same for every lane).
  std::optional<int64_t> lane_stride(const Expr& e) {
    switch (e->node_type) {
      case NodeType::IntImm: return 0;
      case NodeType::Var: {
        if (e.get() == lane_var_) return 1;
        auto it = lane_lets_.find(e.get());
        return it == lane_lets_.end() ? std::optional<int64_t>(0) : it->second;
      }
      case NodeType::Add:
      case NodeType::Sub: {
        bool add = e->node_type == NodeType::Add;
        auto a = lane_stride(add ? e.as<Add>()->a : e.as<Sub>()->a), b = lane_stride(add ? e.as<Add>()->b : e.as<Sub>()->b);
        if (!a || !b) return std::nullopt;
        return add ? *a + *b : *a - *b;
      }
      case NodeType::Mul: {
        auto* m = e.as<Mul>();
        auto a = lane_stride(m->a), b = lane_stride(m->b);
        if (!a || !b) return std::nullopt;
        if (*a == 0 && *b == 0) return 0;
        if (*a == 0 && as_const_int(m->a)) return *as_const_int(m->a) * *b;
        if (*b == 0 && as_const_int(m->b)) return *a * *as_const_int(m->b);
        return std::nullopt;
      }
      default: return varies(e) ? std::nullopt : std::optional<int64_t>(0);
    }
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
        llvm::Align align(st->buffer->dtype.bits / 8 ? st->buffer->dtype.bits / 8 : 1);
        llvm::Value* index = emit_expr(st->index);
        if (index->getType()->isVectorTy()) {
          v = splat(v);
          bool contiguous = lane_stride(st->index) == std::optional<int64_t>(1);
          if (contiguous && mask_ && st->buffer->binding < 0) {  // a local tile: blend, keep the guarded lanes
            llvm::Value* p = address(st->buffer, b_.CreateExtractElement(index, (uint64_t)0));
            llvm::Value* old = b_.CreateAlignedLoad(v->getType(), p, align);
            b_.CreateAlignedStore(b_.CreateSelect(mask_, v, old), p, align);
          } else if (contiguous && mask_)
            b_.CreateMaskedStore(v, address(st->buffer, b_.CreateExtractElement(index, (uint64_t)0)), align, mask_);
          else if (contiguous)
            b_.CreateAlignedStore(v, address(st->buffer, b_.CreateExtractElement(index, (uint64_t)0)), align);
          else
            b_.CreateMaskedScatter(v, address(st->buffer, index), align, mask_);
          return;
        }
        if (v->getType()->isVectorTy()) v = b_.CreateExtractElement(v, (uint64_t)(lanes_ - 1));  // the last lane's store wins
        b_.CreateAlignedStore(v, address(st->buffer, index), align);
        return;
      }
      case NodeType::Barrier: return;  // local loops run one after another on a CPU
      case NodeType::Prefetch: {
        // llvm.prefetch(address, read, high locality, data cache). The
        // address may lie past the buffer: no inbounds GEP (it would be
        // poison), and a prefetch never faults.
        auto* p = s.as<Prefetch>();
        llvm::Value* index = emit_expr(p->index);
        if (index->getType()->isVectorTy()) index = b_.CreateExtractElement(index, (uint64_t)0);
        auto it = buffers_.find(p->buffer.get());
        internal_assert(it != buffers_.end()) << "buffer " << p->buffer->name << " not bound";
        llvm::Value* addr = b_.CreateGEP(llvm_type(p->buffer->dtype), it->second, index);
        llvm::Function* fn = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::prefetch, {addr->getType()});
        b_.CreateCall(fn, {addr, b_.getInt32(0), b_.getInt32(3), b_.getInt32(1)});
        return;
      }
      case NodeType::LetStmt: {
        auto* l = s.as<LetStmt>();
        bind_let(l->var, l->value);
        emit_stmt(l->body);
        unbind_let(l->var);
        return;
      }
      case NodeType::Allocate: {
        auto* a = s.as<Allocate>();
        // Allocas go in the entry block so LLVM promotes them to registers.
        // One per buffer: loop partitioning and unrolling copy an Allocate
        // into sibling statements, never live at the same time, which share
        // it (a Winograd kernel's 114 KB buffer would otherwise be on the
        // stack twice).
        llvm::Value*& slot = allocas_[a->buffer.get()];
        if (!slot) {
          llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
          slot = entry.CreateAlloca(llvm_type(a->buffer->dtype), entry.getInt64(a->buffer->size), a->buffer->name);
        }
        internal_assert(!buffers_.count(a->buffer.get())) << "buffer " << a->buffer->name << " allocated inside itself";
        buffers_[a->buffer.get()] = slot;
        emit_stmt(a->body);
        buffers_.erase(a->buffer.get());
        return;
      }
      case NodeType::IfThenElse: {
        auto* i = s.as<IfThenElse>();
        if (lanes_ && varies(i->cond)) {
          // A lane-dependent guard in a vector loop (vectorizable() let only
          // these through): the lanes where it fails are masked, no branch.
          llvm::Value* c = splat(emit_expr(i->cond));
          llvm::Value* outer = mask_;
          mask_ = outer ? b_.CreateAnd(outer, c) : c;
          emit_stmt(i->then_case);
          mask_ = outer;
          return;
        }
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

  static constexpr int64_t kMaxLanes = 64;  // longer vectorized loops are left to LLVM

  // A vector loop's body must be straight-line code whose branches do not
  // depend on the lane (nested loops are left to LLVM's vectorizer).
  static bool vectorizable(const Stmt& s, const Expr& lane) {
    if (!s.defined()) return true;
    switch (s->node_type) {
      case NodeType::Store: {
        // Vectors of bool are bit-packed in memory, unlike bool buffers.
        struct BoolLoads : IRVisitor {
          bool found = false;
          using IRVisitor::visit;
          void visit(const Load* op) override {
            found |= op->type.is_bool();
            IRVisitor::visit(op);
          }
        } f;
        f.visit_stmt(s);
        // A store to the same element from every lane (a reduction's
        // accumulator) is a loop-carried update, not a vector store.
        return !f.found && !s.as<Store>()->buffer->dtype.is_bool() && may_use(s.as<Store>()->index, lane);
      }
      case NodeType::Prefetch: return true;  // the first lane's line
      case NodeType::Barrier: return true;
      case NodeType::LetStmt: {
        // A store index could reach the lane through this variable: accept
        // the variable as lane-dependent when its value is.
        auto* l = s.as<LetStmt>();
        if (!may_use(l->value, lane)) return vectorizable(l->body, lane);
        return vectorizable(substitute(l->body, {{l->var, l->value}}), lane);
      }
      case NodeType::Block:
        for (auto& x : s.as<Block>()->stmts)
          if (!vectorizable(x, lane)) return false;
        return true;
      case NodeType::IfThenElse: {
        auto* i = s.as<IfThenElse>();
        // (A Let inside the loop could carry the lane into the condition: be conservative.)
        // A lane-dependent guard without an else becomes a lane mask (a ragged edge).
        if (has_let(s)) return false;
        if (uses_var(i->cond, lane)) return !i->else_case.defined() && vectorizable(i->then_case, lane);
        return vectorizable(i->then_case, lane) && vectorizable(i->else_case, lane);
      }
      default: return false;
    }
  }
  // Whether `e` may depend on `lane`: it names it, or a Let variable (which
  // may be bound to a lane-dependent value).
  static bool may_use(const Expr& e, const Expr& lane) {
    struct Lets : IRVisitor {
      bool found = false;
      using IRVisitor::visit;
      void visit(const Let* op) override { found = true; }
    } l;
    l.visit_expr(e);
    return l.found || uses_var(e, lane);
  }
  // A reduction's update of its accumulator: buf[i] = buf[i] (+|max|min) v,
  // the same i for every iteration of the loop around it.
  static bool is_reduction_update(const Stmt& s, const Expr& loop_var) {
    auto* st = s.as<Store>();
    if (!st || may_use(st->index, loop_var)) return false;
    struct Reads : IRVisitor {
      const BufferNode* buf;
      bool found = false;
      using IRVisitor::visit;
      void visit(const Load* op) override {
        found |= op->buffer.get() == buf;
        IRVisitor::visit(op);
      }
    } r;
    r.buf = st->buffer.get();
    r.visit_expr(st->value);
    return r.found;
  }
  static bool has_let(const Stmt& s) {
    struct Finder : IRVisitor {
      bool found = false;
      using IRVisitor::visit;
      void visit(const LetStmt* op) override { found = true; }
      void visit(const Let* op) override { found = true; }
    } f;
    f.visit_stmt(s);
    return f.found;
  }
  void emit_for(const For* f) {
    if (f->kind == ForKind::WorkgroupX || f->kind == ForKind::WorkgroupY || f->kind == ForKind::WorkgroupZ) {
      unsigned axis = f->kind == ForKind::WorkgroupX ? 0 : f->kind == ForKind::WorkgroupY ? 1 : 2;
      llvm::Value* idp = b_.CreateConstInBoundsGEP2_32(workgroup_ty_->getElementType(0),
                                                       b_.CreateStructGEP(workgroup_ty_, workgroup_, 0), 0, axis);
      llvm::Value* id = b_.CreateZExt(b_.CreateLoad(b_.getInt32Ty(), idp), b_.getInt64Ty());
      vars_[f->var.get()] = b_.CreateAdd(emit_expr(f->min), id);
      workgroup_vars_.insert(f->var.get());
      invariant_.clear();  // expressions of this variable are invariant from here on
      start_hoist_block();
      emit_stmt(f->body);
      vars_.erase(f->var.get());
      return;
    }
    auto extent = as_const_int(f->extent);
    if (f->kind == ForKind::Vectorized && extent && *extent >= 2 && *extent <= kMaxLanes && !lanes_ &&
        vectorizable(f->body, f->var)) {
      lanes_ = (int)*extent;
      lane_var_ = f->var.get();
      std::vector<llvm::Constant*> ramp;
      for (int64_t i = 0; i < *extent; i++) ramp.push_back(b_.getInt64((uint64_t)i));
      vars_[f->var.get()] = b_.CreateAdd(splat(emit_expr(f->min)), llvm::ConstantVector::get(ramp));
      emit_stmt(f->body);
      vars_.erase(f->var.get());
      lanes_ = 0;
      lane_var_ = nullptr;
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
    // A vectorized loop that could not be emitted as vectors is otherwise
    // left to LLVM's own vectorizer (no forcing metadata: where it declines,
    // its cost model knows why). Unrolled loops are unrolled fully by LLVM.
    // A vectorized reduction loop (the schedule vectorizes a float sum along
    // its innermost, contiguous axis) is forced: the hint also allows LLVM
    // to reorder the additions into per-lane partial sums.
    bool reduction = f->kind == ForKind::Vectorized && is_reduction_update(f->body, f->var);
    if (f->kind == ForKind::Unrolled || reduction) {
      // The loop ID refers to itself: a temporary first operand, replaced
      // below (the temporary is freed when `self` goes out of scope).
      llvm::TempMDTuple self = llvm::MDTuple::getTemporary(ctx_, {});
      llvm::Metadata* hint =
          reduction ? (llvm::Metadata*)llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"),
                                                               llvm::ConstantAsMetadata::get(b_.getTrue())})
                    : (llvm::Metadata*)llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.full")});
      auto* loop_id = llvm::MDNode::get(ctx_, {self.get(), hint});
      loop_id->replaceOperandWith(0, loop_id);
      latch->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
    }
    b_.SetInsertPoint(exit);
  }
};

// The kernel table and kiln_kernel_library_query (see kiln_kernel_abi.h);
// for static kernels, the query function is internal and the object exports
// the kiln_static_library_t descriptor's function instead.
void emit_library_table(llvm::Module& m, const std::vector<llvm::Function*>& fns, const std::vector<KernelDef>& kernels,
                        const CodegenOptions& options) {
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

  const bool is_static = !options.static_symbol.empty();
  auto* qty = llvm::FunctionType::get(ptr, {b.getInt32Ty()}, false);
  auto* q = llvm::Function::Create(qty, is_static ? llvm::Function::InternalLinkage : llvm::Function::ExternalLinkage,
                                   KILN_KERNEL_LIBRARY_QUERY_SYMBOL, m);
  if (!is_static) q->setVisibility(llvm::GlobalValue::DefaultVisibility);
  q->addFnAttr(llvm::Attribute::NoUnwind);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", q));
  llvm::Value* ok = b.CreateICmpEQ(q->getArg(0), b.getInt32(KILN_KERNEL_ABI_VERSION));
  b.CreateRet(b.CreateSelect(ok, lib_g, llvm::ConstantPointerNull::get(ptr)));
  if (!is_static) return;

  // kiln_static_library_t {abi_version, reserved, kernel_hash, name, query}.
  auto* name_str = llvm::ConstantDataArray::getString(ctx, options.static_name, true);
  auto* name_g = new llvm::GlobalVariable(m, name_str->getType(), true, llvm::GlobalValue::PrivateLinkage, name_str,
                                          "kiln_static_name");
  auto* desc_ty = llvm::StructType::get(ctx, {b.getInt32Ty(), b.getInt32Ty(), b.getInt64Ty(), ptr, ptr});
  auto* desc = llvm::ConstantStruct::get(desc_ty, {b.getInt32(KILN_KERNEL_ABI_VERSION), b.getInt32(0),
                                                   b.getInt64(options.kernel_hash), name_g, q});
  auto* desc_g = new llvm::GlobalVariable(m, desc_ty, true, llvm::GlobalValue::InternalLinkage, desc,
                                          "kiln_static_library");
  auto* fty = llvm::FunctionType::get(ptr, {}, false);
  auto* f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, options.static_symbol, m);
  f->setVisibility(llvm::GlobalValue::DefaultVisibility);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
  b.CreateRet(desc_g);
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

  // Explicit vectors as wide as the target's registers stay whole (without
  // this, CPUs tuned to prefer 256-bit vectors split 512-bit ones).
  std::string vector_width = std::to_string(vector_info(target).lanes * 32);
  std::vector<llvm::Function*> fns;
  for (auto& k : kernels) {
    report_progress(options.progress, "emitting LLVM IR", fns.size(), kernels.size(), "kernels");
    KernelEmitter e(m, dispatch_ty, workgroup_ty, vector_info(target));
    llvm::Function* f = e.emit(k);
    f->addFnAttr("target-cpu", target.cpu);
    f->addFnAttr("min-legal-vector-width", vector_width);
    if (!target.features.empty()) f->addFnAttr("target-features", target.features);
    fns.push_back(f);
  }
  emit_library_table(m, fns, kernels, options);
  // 32-bit Arm: i64 division, int64 -> float. A static object leaves them to
  // the application's own runtime library (libgcc, compiler-rt).
  if (tm->getTargetTriple().isARM() && options.static_symbol.empty()) emit_arm_eabi_helpers(m);

  std::string err;
  llvm::raw_string_ostream err_os(err);
  internal_assert(!llvm::verifyModule(m, &err_os)) << "generated LLVM IR is invalid: " << err_os.str();
  report_progress(options.progress, "optimizing " + std::to_string(kernels.size()) + " kernels (LLVM -O3)");
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
  report_progress(options.progress, "generating machine code (" + target.triple + ")");
  pm.run(m);
  return std::string(buffer.begin(), buffer.end());
}

}  // namespace kiln
