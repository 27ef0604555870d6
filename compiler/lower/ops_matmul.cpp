// Gemm and MatMul (numpy semantics: 1-D promotion, broadcast batch dims).
#include "lower/op_lowering.h"
#include "support/diagnostics.h"

namespace kiln::lower {
namespace {

// Y = alpha * op(A) * op(B) + beta * C, C broadcast to [M, N].
void lower_gemm(OpContext& ctx) {
  ctx.require_float32();
  const graph::Node& n = ctx.node();
  const graph::Shape& as = ctx.in_shape(0);
  const graph::Shape& bs = ctx.in_shape(1);
  const graph::Shape& ys = ctx.out_shape(0);
  user_assert(as.size() == 2 && bs.size() == 2) << n.describe() << ": A and B must be 2-D";
  bool ta = n.attr_int("transA", 0) != 0, tb = n.attr_int("transB", 0) != 0;
  float alpha = (float)n.attr_float("alpha", 1.0), beta = (float)n.attr_float("beta", 1.0);
  int64_t K = ta ? as[0] : as[1];
  user_assert((tb ? bs[1] : bs[0]) == K) << n.describe() << ": inner dimensions differ";

  KernelDef& kd = ctx.new_kernel("gemm");
  tir::Buffer a = ctx.param(kd, ctx.input(0), Access::Read);
  tir::Buffer b = ctx.param(kd, ctx.input(1), Access::Read);
  tir::Buffer c = ctx.has_input(2) ? ctx.param(kd, ctx.input(2), Access::Read) : nullptr;
  tir::Buffer y = ctx.param(kd, ctx.output(0), Access::Write);
  graph::Shape cs = c ? ctx.in_shape(2) : graph::Shape{};
  user_assert(cs.size() <= 2) << n.describe() << ": C must be at most 2-D";

  kd.body = loop_nest("i", ys, [&](const Indices& o) {
    return reduce(
        "acc", tir::Float(32), Expr(0.0f), {K},
        [&](const Expr& acc, const Indices& r) {
          Expr av = tir::Load::make(a, ta ? r[0] * Expr(as[1]) + o[0] : o[0] * Expr(as[1]) + r[0]);
          Expr bv = tir::Load::make(b, tb ? o[1] * Expr(bs[1]) + r[0] : r[0] * Expr(bs[1]) + o[1]);
          return acc + av * bv;
        },
        [&](const Expr& acc) {
          Expr v = alpha == 1.0f ? acc : acc * Expr(alpha);
          if (c && beta != 0.0f) {
            Expr cv = tir::Load::make(c, flat_index(cs, broadcast_index(cs, o)));
            v = v + (beta == 1.0f ? cv : cv * Expr(beta));
          }
          return tir::Store::make(y, flat_index(ys, o), v);
        });
  });
}

void lower_matmul(OpContext& ctx) {
  ctx.require_float32();
  const graph::Node& n = ctx.node();
  graph::Shape as = ctx.in_shape(0), bs = ctx.in_shape(1);
  const graph::Shape& ys = ctx.out_shape(0);
  user_assert(!as.empty() && !bs.empty()) << n.describe() << ": inputs must be at least 1-D";
  bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  int64_t K = as.back();
  user_assert(bs[bs.size() - 2] == K) << n.describe() << ": inner dimensions " << K << " and "
                                      << bs[bs.size() - 2] << " differ";
  // The full (unsqueezed) output shape: batch..., M, N.
  size_t batch_rank = std::max(as.size(), bs.size()) - 2;
  graph::Shape full(ys.begin(), ys.begin() + batch_rank);
  full.push_back(as[as.size() - 2]);
  full.push_back(bs.back());
  user_assert(graph::num_elements(full) == graph::num_elements(ys)) << n.describe() << ": unexpected output shape";

  KernelDef& kd = ctx.new_kernel("matmul");
  tir::Buffer a = ctx.param(kd, ctx.input(0), Access::Read);
  tir::Buffer b = ctx.param(kd, ctx.input(1), Access::Read);
  tir::Buffer y = ctx.param(kd, ctx.output(0), Access::Write);
  graph::Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);

  kd.body = loop_nest("i", full, [&](const Indices& o) {
    Indices batch(o.begin(), o.begin() + batch_rank);
    Expr m = o[batch_rank], nn = o[batch_rank + 1];
    return reduce(
        "acc", tir::Float(32), Expr(0.0f), {K},
        [&](const Expr& acc, const Indices& r) {
          Indices ai = broadcast_index(a_batch, batch), bi = broadcast_index(b_batch, batch);
          ai.push_back(m);
          ai.push_back(r[0]);
          bi.push_back(r[0]);
          bi.push_back(nn);
          return acc + tir::Load::make(a, flat_index(as, ai)) * tir::Load::make(b, flat_index(bs, bi));
        },
        [&](const Expr& acc) { return tir::Store::make(y, flat_index(full, o), acc); });
  });
}

}  // namespace

void register_matmul_ops(std::map<std::string, OpLowering>& r) {
  r["Gemm"] = lower_gemm;
  r["MatMul"] = lower_matmul;
}

}  // namespace kiln::lower
