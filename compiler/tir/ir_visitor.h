// Visitors and mutators over TIR, with dispatch derived from the node list.
//
// IRVisitor walks a tree (override visit() for the nodes you care about and
// call the base to keep recursing). IRMutator rebuilds a tree bottom-up,
// reusing any node whose children did not change.
#pragma once

#include "tir/ir.h"

namespace kiln::tir {

#define KILN_X(n) struct n;
KILN_TIR_EXPR_NODES(KILN_X)
KILN_TIR_STMT_NODES(KILN_X)
#undef KILN_X

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  void visit_expr(const Expr& e);
  void visit_stmt(const Stmt& s);

 protected:
#define KILN_X(n) virtual void visit(const n* op);
  KILN_TIR_EXPR_NODES(KILN_X)
  KILN_TIR_STMT_NODES(KILN_X)
#undef KILN_X
};

class IRMutator {
 public:
  virtual ~IRMutator() = default;
  Expr mutate(const Expr& e);
  Stmt mutate(const Stmt& s);

 protected:
  // `self` is the handle of `op`, returned as-is when nothing changed.
#define KILN_X(n) virtual Expr visit(const n* op, const Expr& self);
  KILN_TIR_EXPR_NODES(KILN_X)
#undef KILN_X
#define KILN_X(n) virtual Stmt visit(const n* op, const Stmt& self);
  KILN_TIR_STMT_NODES(KILN_X)
#undef KILN_X
};

// Whether `e` refers to variable `var` (by identity).
bool uses_var(const Expr& e, const Expr& var);

// The indices of the shape symbols (Vars with symbol >= 0) that `s` or `e`
// uses, ascending, each once.
std::vector<int> symbols_used(const Stmt& s);
std::vector<int> symbols_used(const Expr& e);

// Whether e is integer arithmetic over shape symbols and constants only (no
// loop variables, loads or calls): a run-time extent or a value of them.
bool only_symbols(const Expr& e);

// Whether `e` uses a shape symbol with no bound (its hi reaches
// kUnboundedSymbolMax): its extents have no compile-time largest value,
// and the runtime checks each run's instead.
bool uses_unbounded_symbol(const Expr& e);

// Replaces each Var in `vars` (by identity) with the matching expression.
Expr substitute(const Expr& e, const std::vector<std::pair<Expr, Expr>>& vars);
Stmt substitute(const Stmt& s, const std::vector<std::pair<Expr, Expr>>& vars);

}  // namespace kiln::tir
