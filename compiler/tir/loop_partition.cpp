#include "tir/loop_partition.h"

#include <algorithm>

#include "tir/ir_visitor.h"
#include "tir/simplify.h"

namespace kiln::tir {
namespace {

constexpr int64_t kMaxExtent = 1024;  // longer loops are left alone (compile time)

// Counts the comparisons left in a statement (each guard is a few of them;
// the simplifier removes those that loop bounds decide).
struct ConditionCount : IRVisitor {
  int count = 0;
  using IRVisitor::visit;
  void visit(const LT* op) override {
    count++;
    IRVisitor::visit(op);
  }
  void visit(const LE* op) override {
    count++;
    IRVisitor::visit(op);
  }
};

int conditions(const Stmt& s) {
  ConditionCount c;
  c.visit_stmt(s);
  return c.count;
}

class Partitioner : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const For* op, const Stmt& self) override {
    auto mn = as_const_int(op->min), ext = as_const_int(op->extent);
    bool workgroup = op->kind == ForKind::WorkgroupX || op->kind == ForKind::WorkgroupY || op->kind == ForKind::WorkgroupZ;
    if ((op->kind != ForKind::Serial && !workgroup) || !mn || !ext || *ext < 3 || *ext > kMaxExtent ||
        conditions(op->body) == 0)
      return IRMutator::visit(op, self);
    // Conditions left in the body at each value of the loop variable.
    std::vector<int> left(*ext);
    for (int64_t i = 0; i < *ext; i++) left[i] = conditions(simplify(substitute(op->body, {{op->var, Expr(*mn + i)}})));
    int best = *std::min_element(left.begin(), left.end());
    int64_t run_lo = 0, run_len = 0;
    for (int64_t i = 0; i < *ext;) {
      if (left[i] != best) {
        i++;
        continue;
      }
      int64_t j = i;
      while (j < *ext && left[j] == best) j++;
      if (j - i > run_len) run_lo = i, run_len = j - i;
      i = j;
    }
    // The interior must be most of the loop (padding guards fail only near
    // the ends); conditions that change every few iterations (a parity)
    // would otherwise split the loop into pieces recursively.
    if (run_len == *ext || 2 * run_len < *ext || best == conditions(simplify(op->body)))
      return IRMutator::visit(op, self);
    if (workgroup) {
      // Each workgroup runs one iteration: branch on the interior instead of
      // splitting the loop. Inside, a clamped copy of the variable carries
      // the interior's range to the simplifier.
      int64_t lo = *mn + run_lo, hi = lo + run_len;
      Expr inner = Var::make(Index(), op->var.as<Var>()->name + "_in");
      Stmt interior = LetStmt::make(inner, max(min(op->var, Expr(hi - 1)), Expr(lo)),
                                    substitute(op->body, {{op->var, inner}}));
      Stmt border = mutate(op->body);
      Stmt body = IfThenElse::make(op->var >= Expr(lo) && op->var < Expr(hi), mutate(simplify(interior)), border);
      return For::make(op->var, op->min, op->extent, op->kind, body);
    }
    // before [min, min + lo), interior [min + lo, min + lo + len), after.
    std::vector<Stmt> parts;
    auto part = [&](int64_t lo, int64_t len) {
      if (len <= 0) return;
      Expr v = Var::make(Index(), op->var.as<Var>()->name);
      Stmt body = substitute(op->body, {{op->var, v}});
      parts.push_back(mutate(simplify(For::make(v, Expr(*mn + lo), Expr(len), op->kind, body))));
    };
    part(0, run_lo);
    part(run_lo, run_len);
    part(run_lo + run_len, *ext - run_lo - run_len);
    return Block::make(parts);
  }
};

}  // namespace

Stmt partition_loops(const Stmt& s) { return Partitioner().mutate(s); }

}  // namespace kiln::tir
