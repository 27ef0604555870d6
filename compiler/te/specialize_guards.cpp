#include "te/specialize_guards.h"

#include "tir/ir_visitor.h"

namespace kiln::te {
namespace {

// The statement with every guard on `cond` (by identity) replaced by its body.
class DropGuard : public tir::IRMutator {
 public:
  explicit DropGuard(const tir::Expr& cond) : cond_(cond) {}
  using tir::IRMutator::mutate;

 protected:
  using tir::IRMutator::visit;
  tir::Stmt visit(const tir::IfThenElse* op, const tir::Stmt& self) override {
    if (op->cond.same_as(cond_) && !op->else_case.defined()) return mutate(op->then_case);
    return tir::IRMutator::visit(op, self);
  }

 private:
  tir::Expr cond_;
};

// Inside the loop of `spec.loop_var`: if (full) body-without-the-guard else body.
class Specialize : public tir::IRMutator {
 public:
  explicit Specialize(const GuardSpec& spec) : spec_(spec) {}
  using tir::IRMutator::mutate;

 protected:
  using tir::IRMutator::visit;
  tir::Stmt visit(const tir::For* op, const tir::Stmt& self) override {
    if (!op->var.same_as(spec_.loop_var)) return tir::IRMutator::visit(op, self);
    tir::Stmt fast = DropGuard(spec_.guard).mutate(op->body);
    if (fast.same_as(op->body)) return self;  // the guard is not inside
    return tir::For::make(op->var, op->min, op->extent, op->kind, tir::IfThenElse::make(spec_.full, fast, op->body));
  }

 private:
  const GuardSpec& spec_;
};

}  // namespace

tir::Stmt specialize_guards(const tir::Stmt& s, const std::vector<GuardSpec>& specs) {
  tir::Stmt out = s;
  for (size_t i = 0; i < specs.size() && i < kMaxSpecializedGuards; i++) out = Specialize(specs[i]).mutate(out);
  return out;
}

}  // namespace kiln::te
