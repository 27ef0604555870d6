// Gemm and MatMul (numpy semantics: 1-D promotion, broadcast batch dims).
#include "lower/op_lowering.h"
#include "support/diagnostics.h"

namespace kiln::lower {
namespace {

// Y = alpha * op(A) * op(B) + beta * C, C broadcast to [M, N].
void lower_gemm(OpContext& ctx) {
  ctx.require_float();
  const graph::Node& n = ctx.node();
  te::Tensor a = ctx.in(0), b = ctx.in(1);
  const graph::Shape& ys = ctx.out_shape(0);
  user_assert(a.ndim() == 2 && b.ndim() == 2) << n.describe() << ": A and B must be 2-D";
  bool ta = n.attr_int("transA", 0) != 0, tb = n.attr_int("transB", 0) != 0;
  double alpha = n.attr_float("alpha", 1.0), beta = n.attr_float("beta", 1.0);
  int64_t K = ta ? a.shape()[0] : a.shape()[1];
  user_assert((tb ? b.shape()[1] : b.shape()[0]) == K) << n.describe() << ": inner dimensions differ";
  tir::Type t = a.dtype();
  te::Tensor ab = te::reduce("gemm", ys, {K}, te::ReduceKind::Sum, t, [=](const Indices& o, const Indices& r) {
    return a(ta ? Indices{r[0], o[0]} : Indices{o[0], r[0]}) * b(tb ? Indices{o[1], r[0]} : Indices{r[0], o[1]});
  });
  te::Tensor c = ctx.has_input(2) ? ctx.in(2) : te::Tensor();
  user_assert(!c.defined() || c.ndim() <= 2) << n.describe() << ": C must be at most 2-D";
  ctx.set_output(0, te::compute("gemm_out", ys, [=](const Indices& o) {
    Expr v = alpha == 1.0 ? ab(o) : ab(o) * tir::make_const(t, alpha);
    if (c.defined() && beta != 0.0) {
      Expr cv = c(broadcast_index(c.shape(), o));
      v = v + (beta == 1.0 ? cv : cv * tir::make_const(t, beta));
    }
    return v;
  }));
}

void lower_matmul(OpContext& ctx) {
  ctx.require_float();
  const graph::Node& n = ctx.node();
  te::Tensor a = ctx.in(0), b = ctx.in(1);
  graph::Shape as = a.shape(), bs = b.shape();
  const graph::Shape& ys = ctx.out_shape(0);
  user_assert(!as.empty() && !bs.empty()) << n.describe() << ": inputs must be at least 1-D";
  bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  int64_t K = as.back();
  user_assert(bs[bs.size() - 2] == K) << n.describe() << ": inner dimensions " << K << " and " << bs[bs.size() - 2]
                                      << " differ";
  size_t batch_rank = std::max(as.size(), bs.size()) - 2;
  graph::Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  // The result in the promoted (batch..., M, N) form, then viewed as the output shape.
  graph::Shape full(ys.begin(), ys.begin() + batch_rank);
  full.push_back(as[as.size() - 2]);
  full.push_back(bs.back());
  user_assert(graph::num_elements(full) == graph::num_elements(ys)) << n.describe() << ": unexpected output shape";
  te::Tensor mm = te::reduce("matmul", full, {K}, te::ReduceKind::Sum, a.dtype(), [=](const Indices& o, const Indices& r) {
    Indices batch(o.begin(), o.begin() + batch_rank);
    Indices ai = broadcast_index(a_batch, batch), bi = broadcast_index(b_batch, batch);
    ai.push_back(o[batch_rank]);
    ai.push_back(r[0]);
    bi.push_back(r[0]);
    bi.push_back(o[batch_rank + 1]);
    if (a_vec) ai = {r[0]};
    if (b_vec) bi = Indices(bi.begin(), bi.end() - 1);
    return a(ai) * b(bi);
  });
  if (full != ys) {  // a 1-D operand: drop the promoted unit dimension
    te::Tensor src = mm;
    mm = te::compute("matmul_view", ys, [=](const Indices& o) {
      Indices fi(o.begin(), o.begin() + batch_rank);
      fi.push_back(a_vec ? Expr(0) : o[batch_rank]);
      fi.push_back(b_vec ? Expr(0) : o[o.size() - 1]);
      return src(fi);
    });
  }
  ctx.set_output(0, mm);
}

}  // namespace

void register_matmul_ops(std::map<std::string, OpLowering>& r) {
  r["Gemm"] = lower_gemm;
  r["MatMul"] = lower_matmul;
}

}  // namespace kiln::lower
