#include "tir/ir_visitor.h"

#include <set>

#include "support/diagnostics.h"

namespace kiln::tir {

// ------------------------------------------------------------- visitor --

void IRVisitor::visit_expr(const Expr& e) {
  if (!e.defined()) return;
  switch (e->node_type) {
#define KILN_X(n) \
  case NodeType::n: return visit(static_cast<const n*>(e.get()));
    KILN_TIR_EXPR_NODES(KILN_X)
#undef KILN_X
    default: internal_error << "statement node in expression position";
  }
}

void IRVisitor::visit_stmt(const Stmt& s) {
  if (!s.defined()) return;
  switch (s->node_type) {
#define KILN_X(n) \
  case NodeType::n: return visit(static_cast<const n*>(s.get()));
    KILN_TIR_STMT_NODES(KILN_X)
#undef KILN_X
    default: internal_error << "expression node in statement position";
  }
}

void IRVisitor::visit(const IntImm*) {}
void IRVisitor::visit(const FloatImm*) {}
void IRVisitor::visit(const Var*) {}
void IRVisitor::visit(const Cast* op) { visit_expr(op->value); }
#define KILN_X(n)                          \
  void IRVisitor::visit(const n* op) {     \
    visit_expr(op->a);                     \
    visit_expr(op->b);                     \
  }
KILN_X(Add) KILN_X(Sub) KILN_X(Mul) KILN_X(Div) KILN_X(Mod) KILN_X(Min) KILN_X(Max)
KILN_X(EQ) KILN_X(NE) KILN_X(LT) KILN_X(LE) KILN_X(And) KILN_X(Or)
KILN_X(BitAnd) KILN_X(BitOr) KILN_X(BitXor)
#undef KILN_X
void IRVisitor::visit(const Not* op) { visit_expr(op->a); }
void IRVisitor::visit(const BitNot* op) { visit_expr(op->a); }
void IRVisitor::visit(const Select* op) {
  visit_expr(op->cond);
  visit_expr(op->true_value);
  visit_expr(op->false_value);
}
void IRVisitor::visit(const Load* op) { visit_expr(op->index); }
void IRVisitor::visit(const Call* op) {
  for (auto& a : op->args) visit_expr(a);
}
void IRVisitor::visit(const Let* op) {
  visit_expr(op->value);
  visit_expr(op->body);
}
void IRVisitor::visit(const ProducerLoad* op) {
  for (auto& i : op->indices) visit_expr(i);
}
void IRVisitor::visit(const LetStmt* op) {
  visit_expr(op->value);
  visit_stmt(op->body);
}
void IRVisitor::visit(const For* op) {
  visit_expr(op->min);
  visit_expr(op->extent);
  visit_stmt(op->body);
}
void IRVisitor::visit(const Store* op) {
  visit_expr(op->index);
  visit_expr(op->value);
}
void IRVisitor::visit(const Prefetch* op) { visit_expr(op->index); }
void IRVisitor::visit(const IfThenElse* op) {
  visit_expr(op->cond);
  visit_stmt(op->then_case);
  visit_stmt(op->else_case);
}
void IRVisitor::visit(const Block* op) {
  for (auto& s : op->stmts) visit_stmt(s);
}
void IRVisitor::visit(const Allocate* op) { visit_stmt(op->body); }
void IRVisitor::visit(const Barrier*) {}

// ------------------------------------------------------------- mutator --

Expr IRMutator::mutate(const Expr& e) {
  if (!e.defined()) return e;
  switch (e->node_type) {
#define KILN_X(n) \
  case NodeType::n: return visit(static_cast<const n*>(e.get()), e);
    KILN_TIR_EXPR_NODES(KILN_X)
#undef KILN_X
    default: internal_error << "statement node in expression position";
  }
}

Stmt IRMutator::mutate(const Stmt& s) {
  if (!s.defined()) return s;
  switch (s->node_type) {
#define KILN_X(n) \
  case NodeType::n: return visit(static_cast<const n*>(s.get()), s);
    KILN_TIR_STMT_NODES(KILN_X)
#undef KILN_X
    default: internal_error << "expression node in statement position";
  }
}

Expr IRMutator::visit(const IntImm*, const Expr& self) { return self; }
Expr IRMutator::visit(const FloatImm*, const Expr& self) { return self; }
Expr IRMutator::visit(const Var*, const Expr& self) { return self; }
Expr IRMutator::visit(const Cast* op, const Expr& self) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? self : Cast::make(op->type, v);
}
#define KILN_X(n)                                                  \
  Expr IRMutator::visit(const n* op, const Expr& self) {           \
    Expr a = mutate(op->a), b = mutate(op->b);                     \
    return a.same_as(op->a) && b.same_as(op->b) ? self : n::make(a, b); \
  }
KILN_X(Add) KILN_X(Sub) KILN_X(Mul) KILN_X(Div) KILN_X(Mod) KILN_X(Min) KILN_X(Max)
KILN_X(EQ) KILN_X(NE) KILN_X(LT) KILN_X(LE) KILN_X(And) KILN_X(Or)
KILN_X(BitAnd) KILN_X(BitOr) KILN_X(BitXor)
#undef KILN_X
Expr IRMutator::visit(const Not* op, const Expr& self) {
  Expr a = mutate(op->a);
  return a.same_as(op->a) ? self : Not::make(a);
}
Expr IRMutator::visit(const BitNot* op, const Expr& self) {
  Expr a = mutate(op->a);
  return a.same_as(op->a) ? self : BitNot::make(a);
}
Expr IRMutator::visit(const Select* op, const Expr& self) {
  Expr c = mutate(op->cond), t = mutate(op->true_value), f = mutate(op->false_value);
  if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
  return Select::make(c, t, f);
}
Expr IRMutator::visit(const Load* op, const Expr& self) {
  Expr i = mutate(op->index);
  return i.same_as(op->index) ? self : Load::make(op->buffer, i);
}
Expr IRMutator::visit(const Call* op, const Expr& self) {
  std::vector<Expr> args;
  bool changed = false;
  for (auto& a : op->args) {
    args.push_back(mutate(a));
    changed |= !args.back().same_as(a);
  }
  return changed ? Call::make(op->op, args) : self;
}
Expr IRMutator::visit(const Let* op, const Expr& self) {
  Expr v = mutate(op->value), b = mutate(op->body);
  return v.same_as(op->value) && b.same_as(op->body) ? self : Let::make(op->var, v, b);
}
Expr IRMutator::visit(const ProducerLoad* op, const Expr& self) {
  std::vector<Expr> idx;
  bool changed = false;
  for (auto& i : op->indices) {
    idx.push_back(mutate(i));
    changed |= !idx.back().same_as(i);
  }
  return changed ? ProducerLoad::make(op->producer, idx) : self;
}
Stmt IRMutator::visit(const LetStmt* op, const Stmt& self) {
  Expr v = mutate(op->value);
  Stmt b = mutate(op->body);
  return v.same_as(op->value) && b.same_as(op->body) ? self : LetStmt::make(op->var, v, b);
}
Stmt IRMutator::visit(const For* op, const Stmt& self) {
  Expr mn = mutate(op->min), ext = mutate(op->extent);
  Stmt b = mutate(op->body);
  if (mn.same_as(op->min) && ext.same_as(op->extent) && b.same_as(op->body)) return self;
  return For::make(op->var, mn, ext, op->kind, b);
}
Stmt IRMutator::visit(const Store* op, const Stmt& self) {
  Expr i = mutate(op->index), v = mutate(op->value);
  return i.same_as(op->index) && v.same_as(op->value) ? self : Store::make(op->buffer, i, v);
}
Stmt IRMutator::visit(const Prefetch* op, const Stmt& self) {
  Expr i = mutate(op->index);
  return i.same_as(op->index) ? self : Prefetch::make(op->buffer, i);
}
Stmt IRMutator::visit(const IfThenElse* op, const Stmt& self) {
  Expr c = mutate(op->cond);
  Stmt t = mutate(op->then_case), e = mutate(op->else_case);
  if (c.same_as(op->cond) && t.same_as(op->then_case) && e.same_as(op->else_case)) return self;
  return IfThenElse::make(c, t, e);
}
Stmt IRMutator::visit(const Block* op, const Stmt& self) {
  std::vector<Stmt> stmts;
  bool changed = false;
  for (auto& s : op->stmts) {
    stmts.push_back(mutate(s));
    changed |= !stmts.back().same_as(s);
  }
  return changed ? Block::make(stmts) : self;
}
Stmt IRMutator::visit(const Barrier*, const Stmt& self) { return self; }
Stmt IRMutator::visit(const Allocate* op, const Stmt& self) {
  Stmt b = mutate(op->body);
  return b.same_as(op->body) ? self : Allocate::make(op->buffer, b, op->scope);
}

// ---------------------------------------------------------- substitute --

namespace {
class Substituter : public IRMutator {
 public:
  explicit Substituter(const std::vector<std::pair<Expr, Expr>>& vars) : vars_(vars) {}

 protected:
  using IRMutator::visit;
  Expr visit(const Var* op, const Expr& self) override {
    for (auto& [v, e] : vars_)
      if (v.get() == op) return e;
    return self;
  }

 private:
  const std::vector<std::pair<Expr, Expr>>& vars_;
};
}  // namespace

bool uses_var(const Expr& e, const Expr& var) {
  struct Finder : IRVisitor {
    const ExprNode* v;
    bool found = false;
    using IRVisitor::visit;
    void visit(const Var* op) override { found |= op == v; }
  } f;
  f.v = var.get();
  f.visit_expr(e);
  return f.found;
}

namespace {
struct SymbolFinder : IRVisitor {
  std::set<int> found;
  using IRVisitor::visit;
  void visit(const Var* op) override {
    if (op->symbol >= 0) found.insert(op->symbol);
  }
};
}  // namespace

bool only_symbols(const Expr& e) {
  struct Finder : IRVisitor {
    bool ok = true;
    using IRVisitor::visit;
    void visit(const Var* op) override { ok &= op->symbol >= 0; }
    void visit(const Load*) override { ok = false; }
    void visit(const Call*) override { ok = false; }
  } f;
  f.visit_expr(e);
  return f.ok && e.type().is_int();
}

bool uses_unbounded_symbol(const Expr& e) {
  struct Finder : IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const Var* op) override { found |= op->symbol >= 0 && op->hi >= kUnboundedSymbolMax; }
  } f;
  f.visit_expr(e);
  return f.found;
}

std::vector<int> symbols_used(const Stmt& s) {
  SymbolFinder f;
  f.visit_stmt(s);
  return std::vector<int>(f.found.begin(), f.found.end());
}
std::vector<int> symbols_used(const Expr& e) {
  SymbolFinder f;
  f.visit_expr(e);
  return std::vector<int>(f.found.begin(), f.found.end());
}

Expr substitute(const Expr& e, const std::vector<std::pair<Expr, Expr>>& vars) { return Substituter(vars).mutate(e); }
Stmt substitute(const Stmt& s, const std::vector<std::pair<Expr, Expr>>& vars) { return Substituter(vars).mutate(s); }

}  // namespace kiln::tir
