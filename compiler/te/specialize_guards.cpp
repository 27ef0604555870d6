#include "te/specialize_guards.h"

#include <optional>

#include "te/schedule.h"
#include "tir/ir_printer.h"
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
    // An interior / border split (merge_interior) whose interior has no such
    // guard: only the border is specialized (not both copies of the interior).
    auto* branch = op->body.as<tir::IfThenElse>();
    if (branch && branch->else_case.defined() && DropGuard(spec_.guard).mutate(branch->then_case).same_as(branch->then_case)) {
      tir::Stmt border = tir::IfThenElse::make(spec_.full, DropGuard(spec_.guard).mutate(branch->else_case), branch->else_case);
      return tir::For::make(op->var, op->min, op->extent, op->kind, tir::IfThenElse::make(branch->cond, branch->then_case, border));
    }
    return tir::For::make(op->var, op->min, op->extent, op->kind, tir::IfThenElse::make(spec_.full, fast, op->body));
  }

 private:
  const GuardSpec& spec_;
};


// The coefficient of `var` in e when e is a sum of terms, each a variable
// times constants (or free of var); nullopt where var appears otherwise
// (inside a division, a min, ...).
std::optional<int64_t> linear_coefficient(const tir::Expr& e, const tir::Expr& var) {
  if (!tir::uses_var(e, var)) return 0;
  if (e.same_as(var)) return 1;
  if (auto* a = e.as<tir::Add>()) {
    auto x = linear_coefficient(a->a, var), y = linear_coefficient(a->b, var);
    if (!x || !y) return std::nullopt;
    return *x + *y;
  }
  if (auto* m = e.as<tir::Mul>()) {
    const int64_t* k = tir::as_const_int(m->b) ? tir::as_const_int(m->b) : tir::as_const_int(m->a);
    const tir::Expr& other = tir::as_const_int(m->b) ? m->a : m->b;
    if (!k) return std::nullopt;
    auto x = linear_coefficient(other, var);
    if (!x) return std::nullopt;
    return *x * *k;
  }
  return std::nullopt;
}

}  // namespace

tir::Expr interior_condition(const Stage& stage, const std::vector<tir::Expr>& axes, tir::Expr* out_loop_var) {
  const TensorNode* t = stage.tensor.get();
  if (!t->fbody_interior || stage.tensorized) return tir::Expr();
  size_t first_reduce = stage.leaves.size();
  for (size_t i = 0; i < stage.leaves.size(); i++)
    if (stage.leaves[i]->reduce) {
      first_reduce = i;
      break;
    }
  if (first_reduce == 0 || first_reduce == stage.leaves.size()) return tir::Expr();
  size_t at = first_reduce - 1;
  for (auto& l : stage.leaves)
    if (tir::is_local_loop(l->kind)) return tir::Expr();
  tir::Expr cond;
  for (size_t a = 0; a < axes.size() && a < t->interior.size(); a++) {
    const auto& [lo, hi] = t->interior[a];
    if (!lo.defined() && !hi.defined()) continue;
    // The axis over the loops inside `at`: least and greatest values.
    std::vector<std::pair<tir::Expr, tir::Expr>> least, most;
    for (size_t i = at + 1; i < stage.leaves.size(); i++) {
      const IterVar& l = stage.leaves[i];
      auto k = linear_coefficient(axes[a], l->var);
      if (!k || *k < 0) return tir::Expr();  // not monotone: no bound
      if (*k == 0) continue;
      least.push_back({l->var, tir::Expr(0)});
      most.push_back({l->var, l->extent_expr() - tir::Expr(1)});
    }
    tir::Expr c;
    if (lo.defined()) c = tir::substitute(axes[a], least) >= lo;
    if (hi.defined()) {
      tir::Expr h = tir::substitute(axes[a], most) < hi;
      c = c.defined() ? (c && h) : h;
    }
    cond = cond.defined() ? (cond && c) : c;
  }
  *out_loop_var = stage.leaves[at]->var;
  return cond;
}

tir::Stmt merge_interior(const tir::Stmt& general, const tir::Stmt& interior, const tir::Expr& loop_var,
                         const tir::Expr& cond) {
  if (!general.defined() || !interior.defined() || general->node_type != interior->node_type) return general;
  if (auto* f = general.as<tir::For>()) {
    auto* g = interior.as<tir::For>();
    if (!f->var.same_as(g->var)) return general;
    tir::Stmt body = f->var.same_as(loop_var) ? tir::IfThenElse::make(cond, g->body, f->body)
                                               : merge_interior(f->body, g->body, loop_var, cond);
    return tir::For::make(f->var, f->min, f->extent, f->kind, body);
  }
  if (auto* i = general.as<tir::IfThenElse>()) {  // a guard: the same condition in both
    auto* j = interior.as<tir::IfThenElse>();
    if (i->else_case.defined() || j->else_case.defined() || tir::to_string(i->cond) != tir::to_string(j->cond))
      return general;
    return tir::IfThenElse::make(i->cond, merge_interior(i->then_case, j->then_case, loop_var, cond));
  }
  return general;  // (an Allocate or a statement above the loop: the two lowerings differ there)
}


tir::Stmt specialize_guards(const tir::Stmt& s, const std::vector<GuardSpec>& specs) {
  tir::Stmt out = s;
  for (size_t i = 0; i < specs.size() && i < kMaxSpecializedGuards; i++) out = Specialize(specs[i]).mutate(out);
  return out;
}

}  // namespace kiln::te
