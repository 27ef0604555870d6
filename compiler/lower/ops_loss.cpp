// Losses as inference operators: NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss (log-softmax over axis 1, then NLL).
//
//   loss[n, d...] = -w[t] * logp[n, t, d...]   with t = target[n, d...],
//                   0 where t == ignore_index
//   reduction: none | sum | mean (divided by the sum of the weights used)
#include "lower/op_lowering.h"
#include "support/diagnostics.h"

namespace kiln::lower {

void lower_nll(OpContext& ctx) {
  const bool softmax = ctx.op() == graph::Op::SoftmaxCrossEntropyLoss;
  const graph::Node& n = ctx.node();
  user_assert(ctx.in_dtype(0) == graph::DType::F32 || ctx.in_dtype(0) == graph::DType::F64)
      << n.describe() << ": scores must be float32 or float64";
  te::Tensor x = ctx.in(0), target = ctx.in(1);
  te::Tensor weight = ctx.has_input(2) ? ctx.in(2) : te::Tensor();
  std::string reduction = n.attr_string("reduction", "mean");
  bool has_ignore = n.has_attr("ignore_index");
  int64_t ignore = n.attr_int("ignore_index", 0);
  graph::Shape xs = x.shape();
  int64_t C = xs.at(1);
  tir::Type t = x.dtype();
  te::Tensor logp = x;
  if (softmax) {  // log_softmax over axis 1
    graph::Shape ks = xs;
    ks[1] = 1;
    auto at = [](const Indices& o, const Expr& c) {
      Indices i = o;
      i[1] = c;
      return i;
    };
    te::Tensor m = ctx.materialize(te::reduce("max", ks, {C}, te::ReduceKind::Max, t, [=](const Indices& o, const Indices& r) { return x(at(o, r[0])); }));
    te::Tensor s = ctx.materialize(te::reduce("sum", ks, {C}, te::ReduceKind::Sum, t, [=](const Indices& o, const Indices& r) {
      return tir::Call::make(tir::Intrinsic::Exp, {x(at(o, r[0])) - m(o)});
    }));
    logp = ctx.materialize(te::compute("log_prob", xs, [=](const Indices& i) {
      Indices o = at(i, Expr(0));
      return x(i) - m(o) - tir::Call::make(tir::Intrinsic::Log, {s(o)});
    }));
    if (n.outputs.size() > 1 && n.outputs[1] >= 0)
      ctx.set_output(1, te::compute("log_prob_out", xs, [logp](const Indices& i) { return logp(i); }));
  }
  graph::Shape ts = target.shape();  // [N, d...]
  auto class_of = [=](const Indices& i) {
    Expr c = tir::cast(tir::Index(), target(i));
    return tir::clamp(c, Expr(0), Expr(C - 1));
  };
  auto kept = [=](const Indices& i) {
    return has_ignore ? tir::NE::make(tir::cast(tir::Index(), target(i)), Expr(ignore)) : tir::IntImm::make(tir::Bool(), 1);
  };
  auto w_of = [=](const Indices& i) {
    Expr w = weight.defined() ? weight({class_of(i)}) : tir::make_const(t, 1);
    return tir::select(kept(i), w, tir::make_const(t, 0));
  };
  auto loss_at = [=](const Indices& i) {
    Indices xi = {i[0], class_of(i)};
    xi.insert(xi.end(), i.begin() + 1, i.end());
    return tir::select(kept(i), tir::make_const(t, 0) - logp(xi) * w_of(i), tir::make_const(t, 0));
  };
  if (reduction == "none") {
    ctx.set_output(0, te::compute("loss", ts, loss_at));
    return;
  }
  user_assert(reduction == "sum" || reduction == "mean") << n.describe() << ": unknown reduction '" << reduction << "'";
  te::Tensor total = te::reduce("total", {}, ts, te::ReduceKind::Sum, t, [=](const Indices&, const Indices& r) { return loss_at(r); });
  if (reduction == "sum") {
    ctx.set_output(0, te::compute("loss", {}, [total](const Indices& i) { return total(i); }));
    return;
  }
  te::Tensor wsum = te::reduce("weight_sum", {}, ts, te::ReduceKind::Sum, t, [=](const Indices&, const Indices& r) { return w_of(r); });
  ctx.set_output(0, te::compute("loss", {}, [=](const Indices& i) { return total(i) / wsum(i); }));
}

}  // namespace kiln::lower
