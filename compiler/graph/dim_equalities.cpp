// Run-time dimensions known equal (Graph::add_equal_dims): the rewrites from
// the longer form to the shorter, and comparing dimensions through them.
#include <string>

#include "graph/graph.h"
#include "tir/inplace.h"
#include "tir/ir_printer.h"
#include "tir/ir_visitor.h"
#include "tir/simplify.h"

namespace kiln::graph {
namespace {

// Rewrites run from larger to smaller expressions in this strict order, so a
// chain of them ends (no cycle): a constant first (never rewritten into
// anything), then shorter text, then by the text.
bool smaller(const tir::Expr& a, const tir::Expr& b) {
  bool ca = tir::as_const_int(a) != nullptr, cb = tir::as_const_int(b) != nullptr;
  if (ca != cb) return ca;
  std::string sa = tir::to_string(a), sb = tir::to_string(b);
  return sa.size() != sb.size() ? sa.size() < sb.size() : sa < sb;
}

// Rewriting one subexpression can expose another: a few rounds reach the
// fixed point of any real model's handful of equalities.
constexpr int kMaxRounds = 8;

// Rewrites bottom-up, simplifying each node once its operands are in
// canonical form and then matching it whole: a rewrite applies before the
// simplifier distributes the product around it (2 * (a + 1) -> 2a + 2) and
// hides its form.
class Canonicalizer : public tir::IRMutator {
 public:
  explicit Canonicalizer(const std::vector<std::pair<tir::Expr, tir::Expr>>& rewrites) : rewrites_(rewrites) {}

 protected:
  using tir::IRMutator::visit;
#define KILN_X(n) \
  tir::Expr visit(const tir::n* op, const tir::Expr& self) override { return rewrite(tir::IRMutator::visit(op, self)); }
  KILN_TIR_EXPR_NODES(KILN_X)
#undef KILN_X

 private:
  tir::Expr rewrite(const tir::Expr& e) const {
    tir::Expr s = tir::simplify(e);
    for (auto& [from, to] : rewrites_)
      if (tir::equal(s, from)) return to;
    return s;
  }
  const std::vector<std::pair<tir::Expr, tir::Expr>>& rewrites_;
};

}  // namespace

tir::Expr Graph::canonical(const tir::Expr& e) const {
  tir::Expr x = e;  // not simplified first: see Canonicalizer
  if (equal_dims.empty()) return tir::simplify(x);
  for (int round = 0; round < kMaxRounds; round++) {
    tir::Expr y = Canonicalizer(equal_dims).mutate(x);
    if (tir::equal(x, y)) break;
    x = y;
  }
  return x;
}

void Graph::add_equal_dims(const tir::Expr& a, const tir::Expr& b) {
  tir::Expr x = canonical(a), y = canonical(b);
  if (tir::equal(x, y)) return;
  if (smaller(x, y)) equal_dims.push_back({y, x});
  else equal_dims.push_back({x, y});
}

bool Graph::same_dims(const DimExprs& a, const DimExprs& b) const {
  if (graph::same_dims(a, b)) return true;
  if (a.size() != b.size() || equal_dims.empty()) return false;
  for (size_t i = 0; i < a.size(); i++)
    if (!tir::provably_equal(canonical(a[i]), canonical(b[i]))) return false;
  return true;
}

}  // namespace kiln::graph
