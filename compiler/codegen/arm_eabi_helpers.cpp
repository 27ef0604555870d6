// Arm run-time ABI helpers (arm_eabi_helpers.h), built with IRBuilder from
// operations AArch32 has instructions for: 64-bit shifts, compares and
// subtractions, clz, and int32 -> float conversion.
#include "codegen/arm_eabi_helpers.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

namespace kiln {

namespace {

llvm::Function* make_helper(llvm::Module& m, const char* name, llvm::FunctionType* type) {
  auto* f = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, m);
  f->setVisibility(llvm::GlobalValue::HiddenVisibility);
  f->setCallingConv(llvm::CallingConv::ARM_AAPCS);  // the run-time ABI's: base AAPCS, even on armhf
  f->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::appendToCompilerUsed(m, {f});  // nothing in the IR calls it before instruction selection
  return f;
}

// {quotient, remainder} of unsigned 64-bit n / d by restoring division, one
// quotient bit per step from d's highest useful shift; d == 0 gives {0, n}.
llvm::Function* emit_uldivmod(llvm::Module& m) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  auto* i64 = b.getInt64Ty();
  auto* pair = llvm::StructType::get(ctx, {i64, i64});
  llvm::Function* f = make_helper(m, "__aeabi_uldivmod", llvm::FunctionType::get(pair, {i64, i64}, false));
  llvm::Value* n = f->getArg(0);
  llvm::Value* d = f->getArg(1);
  auto* entry = llvm::BasicBlock::Create(ctx, "entry", f);
  auto* small = llvm::BasicBlock::Create(ctx, "small", f);
  auto* start = llvm::BasicBlock::Create(ctx, "start", f);
  auto* loop = llvm::BasicBlock::Create(ctx, "loop", f);
  auto* done = llvm::BasicBlock::Create(ctx, "done", f);
  auto result = [&](llvm::Value* q, llvm::Value* r) {
    b.CreateRet(b.CreateInsertValue(b.CreateInsertValue(llvm::UndefValue::get(pair), q, 0), r, 1));
  };
  b.SetInsertPoint(entry);
  b.CreateCondBr(b.CreateOr(b.CreateICmpEQ(d, b.getInt64(0)), b.CreateICmpULT(n, d)), small, start);
  b.SetInsertPoint(small);
  result(b.getInt64(0), n);
  b.SetInsertPoint(start);  // n >= d > 0: d shifted up to n's highest bit
  llvm::Function* ctlz = llvm::Intrinsic::getDeclaration(&m, llvm::Intrinsic::ctlz, {i64});
  llvm::Value* shift = b.CreateSub(b.CreateCall(ctlz, {d, b.getTrue()}), b.CreateCall(ctlz, {n, b.getTrue()}));
  llvm::Value* divisor0 = b.CreateShl(d, shift);
  b.CreateBr(loop);
  b.SetInsertPoint(loop);
  auto* step = b.CreatePHI(i64, 2);
  auto* rem = b.CreatePHI(i64, 2);
  auto* quo = b.CreatePHI(i64, 2);
  auto* divisor = b.CreatePHI(i64, 2);
  llvm::Value* fits = b.CreateICmpUGE(rem, divisor);
  llvm::Value* rem_next = b.CreateSelect(fits, b.CreateSub(rem, divisor), rem);
  llvm::Value* quo_next = b.CreateOr(b.CreateShl(quo, 1), b.CreateZExt(fits, i64));
  llvm::Value* divisor_next = b.CreateLShr(divisor, 1);
  llvm::Value* step_next = b.CreateSub(step, b.getInt64(1));
  step->addIncoming(shift, start);
  rem->addIncoming(n, start);
  quo->addIncoming(b.getInt64(0), start);
  divisor->addIncoming(divisor0, start);
  step->addIncoming(step_next, loop);
  rem->addIncoming(rem_next, loop);
  quo->addIncoming(quo_next, loop);
  divisor->addIncoming(divisor_next, loop);
  b.CreateCondBr(b.CreateICmpEQ(step, b.getInt64(0)), done, loop);
  b.SetInsertPoint(done);
  result(quo_next, rem_next);
  return f;
}

// Signed: the quotient truncates towards zero, the remainder has n's sign.
void emit_ldivmod(llvm::Module& m, llvm::Function* uldivmod) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  auto* i64 = b.getInt64Ty();
  auto* pair = llvm::StructType::get(ctx, {i64, i64});
  llvm::Function* f = make_helper(m, "__aeabi_ldivmod", llvm::FunctionType::get(pair, {i64, i64}, false));
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
  llvm::Value* n = f->getArg(0);
  llvm::Value* d = f->getArg(1);
  llvm::Value* n_negative = b.CreateICmpSLT(n, b.getInt64(0));
  llvm::Value* d_negative = b.CreateICmpSLT(d, b.getInt64(0));
  llvm::CallInst* qr = b.CreateCall(uldivmod, {b.CreateSelect(n_negative, b.CreateNeg(n), n),
                                              b.CreateSelect(d_negative, b.CreateNeg(d), d)});
  qr->setCallingConv(llvm::CallingConv::ARM_AAPCS);
  llvm::Value* q = b.CreateExtractValue(qr, 0);
  llvm::Value* r = b.CreateExtractValue(qr, 1);
  q = b.CreateSelect(b.CreateXor(n_negative, d_negative), b.CreateNeg(q), q);
  r = b.CreateSelect(n_negative, b.CreateNeg(r), r);
  b.CreateRet(b.CreateInsertValue(b.CreateInsertValue(llvm::UndefValue::get(pair), q, 0), r, 1));
}

// int64 (signed or not) -> float, rounded to nearest even once: the value's
// top 26 bits (24 of mantissa, a round bit, and a sticky bit ORed with all
// lower ones) are converted by the FPU, then scaled by an exact power of two.
void emit_l2f(llvm::Module& m, const char* name, bool is_signed) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  auto* i64 = b.getInt64Ty();
  llvm::Function* f = make_helper(m, name, llvm::FunctionType::get(b.getFloatTy(), {i64}, false));
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
  llvm::Value* x = f->getArg(0);
  llvm::Value* negative = is_signed ? b.CreateICmpSLT(x, b.getInt64(0)) : b.getFalse();
  llvm::Value* u = b.CreateSelect(negative, b.CreateNeg(x), x);  // |x|, INT64_MIN as 2^63
  llvm::Function* ctlz = llvm::Intrinsic::getDeclaration(&m, llvm::Intrinsic::ctlz, {i64});
  llvm::Value* bits = b.CreateSub(b.getInt64(64), b.CreateCall(ctlz, {u, b.getFalse()}));
  llvm::Value* over = b.CreateSub(bits, b.getInt64(26));
  llvm::Value* shift = b.CreateSelect(b.CreateICmpSGT(over, b.getInt64(0)), over, b.getInt64(0));
  llvm::Value* lost = b.CreateAnd(u, b.CreateSub(b.CreateShl(b.getInt64(1), shift), b.getInt64(1)));
  llvm::Value* sticky = b.CreateZExt(b.CreateICmpNE(lost, b.getInt64(0)), b.getInt32Ty());
  llvm::Value* top = b.CreateOr(b.CreateTrunc(b.CreateLShr(u, shift), b.getInt32Ty()), sticky);  // < 2^26
  llvm::Value* value = b.CreateUIToFP(top, b.getFloatTy());
  llvm::Value* exponent = b.CreateShl(b.CreateAdd(b.CreateTrunc(shift, b.getInt32Ty()), b.getInt32(127)), 23);
  value = b.CreateFMul(value, b.CreateBitCast(exponent, b.getFloatTy()));  // 2^shift, shift <= 38: exact
  b.CreateRet(b.CreateSelect(negative, b.CreateFNeg(value), value));
}

}  // namespace

void emit_arm_eabi_helpers(llvm::Module& m) {
  llvm::Function* uldivmod = emit_uldivmod(m);
  emit_ldivmod(m, uldivmod);
  emit_l2f(m, "__aeabi_ul2f", false);
  emit_l2f(m, "__aeabi_l2f", true);
}

}  // namespace kiln
