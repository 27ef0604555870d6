#include "tir/unroll_loops.h"

#include "tir/ir_visitor.h"

namespace kiln::tir {
namespace {

constexpr int64_t kMaxUnroll = 64;  // longer loops stay loops

bool contains_vector_loop(const Stmt& s) {
  struct Finder : IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const For* op) override {
      found |= op->kind == ForKind::Vectorized;
      IRVisitor::visit(op);
    }
  } f;
  f.visit_stmt(s);
  return f.found;
}

class Unroller : public IRMutator {
 public:
  explicit Unroller(bool all) : all_(all) {}

 protected:
  using IRMutator::visit;
  Stmt visit(const For* op, const Stmt& self) override {
    Stmt body = mutate(op->body);
    auto mn = as_const_int(op->min), ext = as_const_int(op->extent);
    if (op->kind != ForKind::Unrolled || !mn || !ext || *ext > kMaxUnroll || (!all_ && !contains_vector_loop(body)))
      return body.same_as(op->body) ? self : For::make(op->var, op->min, op->extent, op->kind, body);
    std::vector<Stmt> copies;
    for (int64_t i = 0; i < *ext; i++) copies.push_back(substitute(body, {{op->var, Expr(*mn + i)}}));
    return Block::make(copies);
  }

 private:
  bool all_;  // every unrolled loop, not only those around vector loops
};

}  // namespace

Stmt unroll_loops(const Stmt& s, bool all) { return Unroller(all).mutate(s); }

}  // namespace kiln::tir
