#include "tir/inplace.h"

#include <map>
#include <set>

#include "tir/ir_visitor.h"

namespace kiln::tir {

bool equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined() || a->node_type != b->node_type || a.type() != b.type()) return false;
  switch (a->node_type) {
    case NodeType::IntImm: return a.as<IntImm>()->value == b.as<IntImm>()->value;
    case NodeType::FloatImm: return a.as<FloatImm>()->value == b.as<FloatImm>()->value;
    case NodeType::Var: return false;  // identity checked above
    case NodeType::Cast: return equal(a.as<Cast>()->value, b.as<Cast>()->value);
#define KILN_X(n) \
  case NodeType::n: return equal(a.as<n>()->a, b.as<n>()->a) && equal(a.as<n>()->b, b.as<n>()->b);
      KILN_X(Add) KILN_X(Sub) KILN_X(Mul) KILN_X(Div) KILN_X(Mod) KILN_X(Min) KILN_X(Max)
      KILN_X(EQ) KILN_X(NE) KILN_X(LT) KILN_X(LE) KILN_X(And) KILN_X(Or)
      KILN_X(BitAnd) KILN_X(BitOr) KILN_X(BitXor)
#undef KILN_X
    case NodeType::Not: return equal(a.as<Not>()->a, b.as<Not>()->a);
    case NodeType::BitNot: return equal(a.as<BitNot>()->a, b.as<BitNot>()->a);
    case NodeType::Select: {
      auto x = a.as<Select>(), y = b.as<Select>();
      return equal(x->cond, y->cond) && equal(x->true_value, y->true_value) && equal(x->false_value, y->false_value);
    }
    case NodeType::Load: {
      auto x = a.as<Load>(), y = b.as<Load>();
      return x->buffer == y->buffer && equal(x->index, y->index);
    }
    default: return false;  // calls, lets: not needed for index comparison
  }
}

namespace {

class InplaceFinder : public IRVisitor {
 public:
  std::set<const BufferNode*> unsafe;                              // inputs read outside a matching store
  std::map<const BufferNode*, std::set<const BufferNode*>> fits;   // output -> inputs read only at its index

 protected:
  using IRVisitor::visit;
  const Store* store_ = nullptr;  // the store whose value is being visited

  void visit(const Store* op) override {
    visit_expr(op->index);
    const Store* outer = store_;
    store_ = op;
    visit_expr(op->value);
    store_ = outer;
  }
  void visit(const Load* op) override {
    visit_expr(op->index);
    if (op->buffer->binding < 0) return;  // locals
    // Only a read at the index of a store to another parameter is safe; one
    // into a local (an accumulator, a staging buffer) reaches the output by
    // a path this analysis does not follow.
    if (!store_ || store_->buffer->binding < 0 || !equal(op->index, store_->index)) {
      unsafe.insert(op->buffer.get());
    } else {
      fits[store_->buffer.get()].insert(op->buffer.get());
    }
  }
};

}  // namespace

std::vector<std::pair<int, int>> inplace_pairs(const Stmt& body, const std::vector<Buffer>& params) {
  InplaceFinder f;
  f.visit_stmt(body);
  // Every store to the output must be such a store: check outputs stored
  // anywhere with a different index set by requiring each input to be safe.
  std::vector<std::pair<int, int>> pairs;
  for (auto& [out, ins] : f.fits)
    for (auto* in : ins)
      if (!f.unsafe.count(in) && in != out && in->dtype == out->dtype && in->size == out->size)
        pairs.push_back({in->binding, out->binding});
  return pairs;
}

}  // namespace kiln::tir
