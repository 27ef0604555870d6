// Softmax and LogSoftmax. Opset >= 13 normalizes along one axis; older
// opsets flatten the input to 2-D at `axis` and normalize each row.
//
//   m = max(x); s = sum(exp(x - m)); y = exp(x - m) / s
#include "lower/op_lowering.h"
#include "support/diagnostics.h"

#include <limits>

namespace kiln::lower {
namespace {

void lower_softmax(OpContext& ctx, bool log) {
  ctx.require_float32();
  const graph::Node& n = ctx.node();
  const graph::Shape& s = ctx.out_shape(0);
  int64_t rank = (int64_t)s.size();
  int64_t axis = normalize_axis(ctx, n.attr_int("axis", ctx.graph.opset >= 13 ? -1 : 1), rank);
  int64_t outer = 1, len = 1, inner = 1;
  for (int64_t i = 0; i < axis; i++) outer *= s[i];
  if (ctx.graph.opset >= 13) {
    len = s[axis];
    for (int64_t i = axis + 1; i < rank; i++) inner *= s[i];
  } else {
    for (int64_t i = axis; i < rank; i++) len *= s[i];
  }
  KernelDef& kd = ctx.new_kernel(log ? "logsoftmax" : "softmax");
  tir::Buffer x = ctx.param(kd, ctx.input(0), Access::Read);
  tir::Buffer y = ctx.param(kd, ctx.output(0), Access::Write);
  graph::Shape view = {outer, len, inner};
  auto exp = [](Expr e) { return tir::Call::make(tir::Intrinsic::Exp, {e}); };
  kd.body = loop_nest("i", {outer, inner}, [&](const Indices& o) {
    auto at = [&](const Expr& j) { return flat_index(view, {o[0], j, o[1]}); };
    float lowest = -std::numeric_limits<float>::infinity();
    return reduce(
        "max", tir::Float(32), Expr(lowest), {len},
        [&](const Expr& acc, const Indices& r) { return tir::max(acc, tir::Load::make(x, at(r[0]))); },
        [&](const Expr& m) {
          return reduce(
              "sum", tir::Float(32), Expr(0.0f), {len},
              [&](const Expr& acc, const Indices& r) { return acc + exp(tir::Load::make(x, at(r[0])) - m); },
              [&](const Expr& sum) {
                return loop_nest(
                    "j", {len},
                    [&](const Indices& j) {
                      Expr d = tir::Load::make(x, at(j[0])) - m;
                      Expr v = log ? d - tir::Call::make(tir::Intrinsic::Log, {sum}) : exp(d) / sum;
                      return tir::Store::make(y, at(j[0]), v);
                    },
                    false);
              });
        });
  });
}

}  // namespace

void register_softmax_ops(std::map<std::string, OpLowering>& r) {
  r["Softmax"] = [](OpContext& c) { lower_softmax(c, false); };
}

}  // namespace kiln::lower
