// Normalizations computed from statistics of the input itself:
// LayerNormalization (over the axes from `axis` on) and
// InstanceNormalization (per sample and channel, over the spatial axes).
//
//   mean = sum(x) / n; var = sum((x - mean)^2) / n
//   y = (x - mean) / sqrt(var + eps) * scale + bias
// The statistics are materialized: each output element reads them.
#include "lower/op_lowering.h"
#include "support/diagnostics.h"

namespace kiln::lower {
namespace {

struct Stats {
  te::Tensor mean, inv_std;  // shape: the input's, with the normalized dims set to 1
};

// Statistics over the dims where `reduced` is true.
Stats normalize_stats(OpContext& ctx, const te::Tensor& x, const std::vector<bool>& reduced, double eps) {
  graph::Shape ks = x.shape(), rshape;
  for (size_t d = 0; d < ks.size(); d++)
    if (reduced[d]) {
      rshape.push_back(ks[d]);
      ks[d] = 1;
    }
  auto at = [reduced](const Indices& o, const Indices& r) {
    Indices i = o;
    size_t k = 0;
    for (size_t d = 0; d < i.size(); d++)
      if (reduced[d]) i[d] = r[k++];
    return i;
  };
  tir::Type t = x.dtype();
  Expr n = tir::make_const(t, (double)graph::num_elements(rshape));
  te::Tensor sum = te::reduce("sum", ks, rshape, te::ReduceKind::Sum, t, [=](const Indices& o, const Indices& r) { return x(at(o, r)); });
  te::Tensor mean = ctx.materialize(te::compute("mean", ks, [=](const Indices& o) { return sum(o) / n; }));
  te::Tensor sq = te::reduce("sumsq", ks, rshape, te::ReduceKind::Sum, t, [=](const Indices& o, const Indices& r) {
    Expr dv = x(at(o, r)) - mean(o);
    return dv * dv;
  });
  te::Tensor inv = ctx.materialize(te::compute("inv_std", ks, [=](const Indices& o) {
    return tir::make_const(t, 1) / tir::Call::make(tir::Intrinsic::Sqrt, {sq(o) / n + tir::make_const(t, eps)});
  }));
  return {mean, inv};
}

Indices keep(const Indices& i, const std::vector<bool>& reduced) {
  Indices o = i;
  for (size_t d = 0; d < o.size(); d++)
    if (reduced[d]) o[d] = Expr(0);
  return o;
}

void lower_layer_norm(OpContext& ctx) {
  ctx.require_float();
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0), scale = ctx.in(1);
  te::Tensor bias = ctx.has_input(2) ? ctx.in(2) : te::Tensor();
  int64_t rank = (int64_t)x.ndim();
  int64_t axis = normalize_axis(ctx, n.attr_int("axis", -1), rank);
  std::vector<bool> reduced(rank, false);
  for (int64_t d = axis; d < rank; d++) reduced[d] = true;
  Stats s = normalize_stats(ctx, x, reduced, n.attr_float("epsilon", 1e-5));
  ctx.set_output(0, te::compute("layernorm", x.shape(), [=](const Indices& i) {
    Indices o = keep(i, reduced);
    Expr y = (x(i) - s.mean(o)) * s.inv_std(o) * scale(broadcast_index(scale.shape(), i));
    return bias.defined() ? y + bias(broadcast_index(bias.shape(), i)) : y;
  }));
  // Optional outputs: the statistics themselves (kept-dims shape).
  if (n.outputs.size() > 1 && n.outputs[1] >= 0)
    ctx.set_output(1, te::compute("mean", s.mean.shape(), [m = s.mean](const Indices& i) { return m(i); }));
  if (n.outputs.size() > 2 && n.outputs[2] >= 0)
    ctx.set_output(2, te::compute("inv_std", s.inv_std.shape(), [v = s.inv_std](const Indices& i) { return v(i); }));
}

void lower_instance_norm(OpContext& ctx) {
  ctx.require_float();
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0), scale = ctx.in(1), bias = ctx.in(2);
  user_assert(x.ndim() >= 3) << n.describe() << ": input must be at least 3-D";
  std::vector<bool> reduced(x.ndim(), true);
  reduced[0] = reduced[1] = false;
  Stats s = normalize_stats(ctx, x, reduced, n.attr_float("epsilon", 1e-5));
  ctx.set_output(0, te::compute("instancenorm", x.shape(), [=](const Indices& i) {
    Indices o = keep(i, reduced);
    return (x(i) - s.mean(o)) * s.inv_std(o) * scale({i[1]}) + bias({i[1]});
  }));
}

}  // namespace

void register_norm_ops(std::map<std::string, OpLowering>& r) {
  r["LayerNormalization"] = lower_layer_norm;
  r["InstanceNormalization"] = lower_instance_norm;
}

}  // namespace kiln::lower
