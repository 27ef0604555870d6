#include "tir/hoist_invariants.h"

#include <map>
#include <set>
#include <unordered_map>

#include "tir/ir_printer.h"
#include "tir/ir_visitor.h"

namespace kiln::tir {
namespace {

// Every variable a statement binds (loops, lets) anywhere inside it.
class BoundVars : public IRVisitor {
 public:
  std::set<const ExprNode*> vars;

 protected:
  using IRVisitor::visit;
  void visit(const For* op) override {
    vars.insert(op->var.get());
    IRVisitor::visit(op);
  }
  void visit(const LetStmt* op) override {
    vars.insert(op->var.get());
    IRVisitor::visit(op);
  }
  void visit(const Let* op) override {
    vars.insert(op->var.get());
    IRVisitor::visit(op);
  }
};

// The maximal subexpressions of a loop body that are pure integer or boolean
// arithmetic over variables bound outside the loop.
class Candidates : public IRVisitor {
 public:
  explicit Candidates(const std::set<const ExprNode*>& inner) : inner_(inner) {}
  std::vector<Expr> found;  // in the order first seen

 protected:
  using IRVisitor::visit;
  // Every expression child goes through here: a movable one is taken whole.
  void check(const Expr& e) {
    if (!e.defined()) return;
    if (movable(e) && !trivial(e)) {
      found.push_back(e);
      return;
    }
    visit_expr(e);
  }
#define KILN_BINARY(N)         \
  void visit(const N* op) override { \
    check(op->a);              \
    check(op->b);              \
  }
  KILN_BINARY(Add)
  KILN_BINARY(Sub)
  KILN_BINARY(Mul)
  KILN_BINARY(Div)
  KILN_BINARY(Mod)
  KILN_BINARY(Min)
  KILN_BINARY(Max)
  KILN_BINARY(EQ)
  KILN_BINARY(NE)
  KILN_BINARY(LT)
  KILN_BINARY(LE)
  KILN_BINARY(And)
  KILN_BINARY(Or)
  KILN_BINARY(BitAnd)
  KILN_BINARY(BitOr)
  KILN_BINARY(BitXor)
#undef KILN_BINARY
  void visit(const Not* op) override { check(op->a); }
  void visit(const BitNot* op) override { check(op->a); }
  void visit(const Cast* op) override { check(op->value); }
  void visit(const Select* op) override {
    check(op->cond);
    check(op->true_value);
    check(op->false_value);
  }
  void visit(const Load* op) override { check(op->index); }
  void visit(const Call* op) override {
    for (auto& a : op->args) check(a);
  }
  void visit(const Let* op) override {}  // its body sees a variable bound here: left alone
  void visit(const Store* op) override {
    check(op->index);
    check(op->value);
  }
  void visit(const Prefetch* op) override { check(op->index); }
  void visit(const IfThenElse* op) override {
    check(op->cond);
    visit_stmt(op->then_case);
    visit_stmt(op->else_case);
  }
  void visit(const LetStmt* op) override {
    check(op->value);
    visit_stmt(op->body);
  }
  void visit(const For* op) override {
    check(op->min);
    check(op->extent);
    visit_stmt(op->body);
  }

 private:
  static bool trivial(const Expr& e) {
    auto t = e->node_type;
    return t == NodeType::Var || t == NodeType::IntImm || t == NodeType::FloatImm ||
           (t == NodeType::Cast && trivial(e.as<Cast>()->value));
  }
  // Pure integer/boolean arithmetic over outer variables (memoized).
  bool movable(const Expr& e) {
    auto it = memo_.find(e.get());
    if (it != memo_.end()) return it->second;
    bool ok = (e.type().is_int() || e.type().is_uint() || e.type().is_bool()) && pure(e);
    memo_[e.get()] = ok;
    return ok;
  }
  bool pure(const Expr& e) {
    switch (e->node_type) {
      case NodeType::Var: return !inner_.count(e.get());
      case NodeType::IntImm:
      case NodeType::FloatImm: return true;
      case NodeType::Cast: return movable_any(e.as<Cast>()->value);
      case NodeType::Not: return movable(e.as<Not>()->a);
      case NodeType::BitNot: return movable(e.as<BitNot>()->a);
      case NodeType::Select: {
        auto* s = e.as<Select>();
        return movable(s->cond) && movable(s->true_value) && movable(s->false_value);
      }
#define KILN_CASE(N) \
  case NodeType::N: return movable(e.as<N>()->a) && movable(e.as<N>()->b);
        KILN_CASE(Add)
        KILN_CASE(Sub)
        KILN_CASE(Mul)
        KILN_CASE(Min)
        KILN_CASE(Max)
        KILN_CASE(EQ)
        KILN_CASE(NE)
        KILN_CASE(LT)
        KILN_CASE(LE)
        KILN_CASE(And)
        KILN_CASE(Or)
        KILN_CASE(BitAnd)
        KILN_CASE(BitOr)
        KILN_CASE(BitXor)
#undef KILN_CASE
      case NodeType::Div:
      case NodeType::Mod: {
        // Only by a nonzero constant: elsewhere a guard may protect it.
        const Expr& a = e->node_type == NodeType::Div ? e.as<Div>()->a : e.as<Mod>()->a;
        const Expr& b = e->node_type == NodeType::Div ? e.as<Div>()->b : e.as<Mod>()->b;
        auto c = as_const_int(b);
        return c && *c != 0 && movable(a);
      }
      default: return false;  // loads, calls, lets
    }
  }
  // A cast's operand may be of any type as long as it is pure arithmetic.
  bool movable_any(const Expr& e) {
    if (e.type().is_float()) return e->node_type == NodeType::FloatImm;
    return movable(e);
  }

  const std::set<const ExprNode*>& inner_;
  std::unordered_map<const ExprNode*, bool> memo_;
};

// Replaces the given nodes (by identity) with their variables.
class Replace : public IRMutator {
 public:
  explicit Replace(const std::unordered_map<const ExprNode*, Expr>& with) : with_(with) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr visit_any(const Expr& e) {
    auto it = with_.find(e.get());
    return it == with_.end() ? Expr() : it->second;
  }
#define KILN_X(n)                                        \
  Expr visit(const n* op, const Expr& self) override {   \
    Expr r = visit_any(self);                            \
    return r.defined() ? r : IRMutator::visit(op, self); \
  }
  KILN_TIR_EXPR_NODES(KILN_X)
#undef KILN_X

 private:
  const std::unordered_map<const ExprNode*, Expr>& with_;
};

class Hoister : public IRMutator {
 protected:
  using IRMutator::visit;
  Stmt visit(const For* op, const Stmt& self) override {
    BoundVars bound;
    bound.vars.insert(op->var.get());
    bound.visit_stmt(op->body);
    Candidates c(bound.vars);
    c.visit_stmt(op->body);
    std::unordered_map<const ExprNode*, Expr> with;
    std::map<std::string, Expr> by_text;  // equal expressions share one variable
    std::vector<std::pair<Expr, Expr>> lets;
    for (auto& e : c.found) {
      if (with.count(e.get())) continue;
      std::string key = to_string(e);
      auto it = by_text.find(key);
      if (it == by_text.end()) {
        Expr v = Var::make(e.type(), "h" + std::to_string(counter_++));
        it = by_text.emplace(key, v).first;
        lets.push_back({v, e});
      }
      with[e.get()] = it->second;
    }
    Stmt body = with.empty() ? op->body : Replace(with).mutate(op->body);
    body = mutate(body);  // inner loops
    Stmt loop = body.same_as(op->body) ? self : For::make(op->var, op->min, op->extent, op->kind, body);
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) loop = LetStmt::make(it->first, it->second, loop);
    return loop;
  }

 private:
  int counter_ = 0;
};

}  // namespace

Stmt hoist_invariants(const Stmt& s) { return Hoister().mutate(s); }

}  // namespace kiln::tir
