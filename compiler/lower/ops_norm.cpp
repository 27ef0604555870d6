// Normalizations computed from statistics of the input itself:
// LayerNormalization (over the axes from `axis` on) and
// InstanceNormalization (per sample and channel, over the spatial axes).
//
//   mean = sum(x) / n; var = sum((x - mean)^2) / n
//   y = (x - mean) / sqrt(var + eps) * scale + bias
// The statistics are materialized: each output element reads them.
//
// Also, following ONNX's reference implementations:
//   MeanVarianceNormalization  y = (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over `axes` (default 0, 2, 3)
//   LpNormalization            y = x / (sum over axis of |x|^p)^(1/p), p = 1 or 2
//   LRN                        y = x / (bias + alpha / size * sum of x^2 over channels
//                                   [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta
#include <functional>

#include "lower/op_lowering.h"
#include "support/diagnostics.h"

namespace kiln::lower {
namespace {

struct Stats {
  te::Tensor mean, inv_std;  // shape: the input's, with the normalized dims set to 1
};

// Mean and a per-row factor `inv(variance)` over the dims where `reduced` is
// true (two-pass variance). Both are materialized: every output element reads them.
Stats normalize_stats(OpContext& ctx, const te::Tensor& x, const std::vector<bool>& reduced,
                      const std::function<Expr(const Expr& variance)>& inv) {
  te::Dims ks = x.dims(), rshape;
  for (size_t d = 0; d < ks.size(); d++)
    if (reduced[d]) {
      rshape.push_back(ks[d]);
      ks[d] = Expr(1);
    }
  auto at = [reduced](const Indices& o, const Indices& r) {
    Indices i = o;
    size_t k = 0;
    for (size_t d = 0; d < i.size(); d++)
      if (reduced[d]) i[d] = r[k++];
    return i;
  };
  tir::Type t = x.dtype();
  Expr count = te::num_elements(rshape);
  Expr n = tir::as_const_int(count) ? tir::make_const(t, (double)*tir::as_const_int(count)) : tir::cast(t, count);
  te::Tensor sum = te::reduce("sum", ks, rshape, te::ReduceKind::Sum, t, [=](const Indices& o, const Indices& r) { return x(at(o, r)); });
  te::Tensor mean = ctx.materialize(te::compute("mean", ks, [=](const Indices& o) { return sum(o) / n; }));
  te::Tensor sq = te::reduce("sumsq", ks, rshape, te::ReduceKind::Sum, t, [=](const Indices& o, const Indices& r) {
    Expr dv = x(at(o, r)) - mean(o);
    return dv * dv;
  });
  te::Tensor factor = ctx.materialize(te::compute("inv_std", ks, [=](const Indices& o) { return inv(sq(o) / n); }));
  return {mean, factor};
}

// 1 / sqrt(variance + eps): LayerNormalization, InstanceNormalization.
std::function<Expr(const Expr&)> inv_sqrt_plus(double eps) {
  return [eps](const Expr& var) {
    return tir::make_const(var.type(), 1) / tir::Call::make(tir::Intrinsic::Sqrt, {var + tir::make_const(var.type(), eps)});
  };
}

Indices keep(const Indices& i, const std::vector<bool>& reduced) {
  Indices o = i;
  for (size_t d = 0; d < o.size(); d++)
    if (reduced[d]) o[d] = Expr(0);
  return o;
}

}  // namespace

// BatchNormalization with training_mode=1 (lower_batchnorm hands it here):
// the batch's mean and (population) variance per channel normalize x, and
// outputs 1 and 2 are the running statistics, input * momentum + batch's *
// (1 - momentum). Several outputs: the fusion never makes it an epilogue.
void lower_batchnorm_training(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0), scale = ctx.in(1), bias = ctx.in(2), mean_in = ctx.in(3), var_in = ctx.in(4);
  const te::Dims s = x.dims();
  user_assert(s.size() >= 2) << n.describe() << ": input must be at least 2-D";
  const int64_t C = static_extent(s[1], "the channel count");
  for (int i = 1; i <= 4; i++)
    user_assert(ctx.value(ctx.input(i)).elements() == C) << n.describe() << ": input " << i << " must have C elements";
  std::vector<bool> reduced(s.size(), true);
  reduced[1] = false;
  const tir::Type t = x.dtype();
  auto c = [t](double v) { return tir::make_const(t, v); };
  Stats st = normalize_stats(ctx, x, reduced, [](const Expr& var) { return var; });  // inv_std holds the variance
  const double eps = n.attr_float("epsilon", 1e-5), momentum = n.attr_float("momentum", 0.9);
  Indices zeros(s.size(), Expr(0));
  auto stat = [=](const te::Tensor& v, const Expr& ch) {
    Indices i = zeros;
    i[1] = ch;
    return v(i);
  };
  ctx.set_output(0, te::compute("batchnorm", s, [=](const Indices& i) {
    Indices ch = {i[1]};
    Expr inv = c(1) / tir::Call::make(tir::Intrinsic::Sqrt, {stat(st.inv_std, i[1]) + c(eps)});
    return (x(i) - stat(st.mean, i[1])) * inv * scale(ch) + bias(ch);
  }));
  const te::Tensor* running[2] = {&mean_in, &var_in};
  const te::Tensor* batch[2] = {&st.mean, &st.inv_std};
  for (size_t o = 1; o <= 2; o++) {
    if (o >= n.outputs.size() || n.outputs[o] < 0) continue;
    te::Tensor r = *running[o - 1], b = *batch[o - 1];
    ctx.set_output(o, te::compute(o == 1 ? "running_mean" : "running_var", {Expr(C)}, [=](const Indices& i) {
      return r(i) * c(momentum) + stat(b, i[0]) * c(1 - momentum);
    }));
  }
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
  Stats s = normalize_stats(ctx, x, reduced, inv_sqrt_plus(n.attr_float("epsilon", 1e-5)));
  ctx.set_output(0, te::compute("layernorm", x.dims(), [=](const Indices& i) {
    Indices o = keep(i, reduced);
    Expr y = (x(i) - s.mean(o)) * s.inv_std(o) * scale(broadcast_index(scale.dims(), i));
    return bias.defined() ? y + bias(broadcast_index(bias.dims(), i)) : y;
  }));
  // Optional outputs: the statistics themselves (kept-dims shape).
  if (n.outputs.size() > 1 && n.outputs[1] >= 0)
    ctx.set_output(1, te::compute("mean", s.mean.dims(), [m = s.mean](const Indices& i) { return m(i); }));
  if (n.outputs.size() > 2 && n.outputs[2] >= 0)
    ctx.set_output(2, te::compute("inv_std", s.inv_std.dims(), [v = s.inv_std](const Indices& i) { return v(i); }));
}

void lower_instance_norm(OpContext& ctx) {
  ctx.require_float();
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0), scale = ctx.in(1), bias = ctx.in(2);
  user_assert(x.ndim() >= 3) << n.describe() << ": input must be at least 3-D";
  std::vector<bool> reduced(x.ndim(), true);
  reduced[0] = reduced[1] = false;
  Stats s = normalize_stats(ctx, x, reduced, inv_sqrt_plus(n.attr_float("epsilon", 1e-5)));
  ctx.set_output(0, te::compute("instancenorm", x.dims(), [=](const Indices& i) {
    Indices o = keep(i, reduced);
    return (x(i) - s.mean(o)) * s.inv_std(o) * scale({i[1]}) + bias({i[1]});
  }));
}

void lower_mvn(OpContext& ctx) {
  ctx.require_float();
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0);
  int64_t rank = (int64_t)x.ndim();
  std::vector<bool> reduced(rank, false);
  for (int64_t a : n.attr_ints("axes", {0, 2, 3})) reduced[normalize_axis(ctx, a, rank)] = true;
  // ONNX's definition: (x - mean) / (sqrt(variance) + 1e-9).
  Stats s = normalize_stats(ctx, x, reduced, [](const Expr& var) {
    return tir::make_const(var.type(), 1) / (tir::Call::make(tir::Intrinsic::Sqrt, {var}) + tir::make_const(var.type(), 1e-9));
  });
  ctx.set_output(0, te::compute("mvn", x.dims(), [=](const Indices& i) {
    Indices o = keep(i, reduced);
    return (x(i) - s.mean(o)) * s.inv_std(o);
  }));
}

void lower_lp_normalization(OpContext& ctx) {
  ctx.require_float();
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0);
  int64_t rank = (int64_t)x.ndim();
  int64_t axis = normalize_axis(ctx, n.attr_int("axis", -1), rank);
  int64_t p = n.attr_int("p", 2);
  user_assert(p == 1 || p == 2) << n.describe() << ": p must be 1 or 2";
  te::Dims ks = x.dims();
  ks[axis] = Expr(1);
  tir::Type t = x.dtype();
  te::Tensor norm = ctx.materialize(te::reduce("norm", ks, {x.dims()[axis]}, te::ReduceKind::Sum, t, [=](const Indices& o, const Indices& r) {
    Indices i = o;
    i[axis] = r[0];
    Expr v = x(i);
    return p == 1 ? tir::Call::make(tir::Intrinsic::Abs, {v}) : v * v;
  }));
  ctx.set_output(0, te::compute("lpnorm", x.dims(), [=](const Indices& i) {
    Indices o = i;
    o[axis] = Expr(0);
    Expr d = p == 1 ? norm(o) : tir::Call::make(tir::Intrinsic::Sqrt, {norm(o)});
    // A zero norm gives 0, not 0 / 0 (ONNX's reference since onnx 1.20).
    return tir::select(tir::EQ::make(d, tir::make_const(t, 0)), tir::make_const(t, 0), x(i) / d);
  }));
}

void lower_lrn(OpContext& ctx) {
  ctx.require_float();
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0);
  user_assert(x.ndim() >= 3) << n.describe() << ": input must be at least 3-D";
  int64_t size = n.attr_int("size", 0);
  user_assert(size >= 1) << n.describe() << ": size must be positive";
  double alpha = n.attr_float("alpha", 1e-4), beta = n.attr_float("beta", 0.75), bias = n.attr_float("bias", 1.0);
  int64_t before = (size - 1) / 2;
  tir::Type t = x.dtype();
  te::Tensor sq = te::reduce("square_sum", x.dims(), {Expr(size)}, te::ReduceKind::Sum, t, [=](const Indices& o, const Indices& r) {
    Indices i = o;
    i[1] = o[1] - Expr(before) + r[0];
    Expr v = padded_read(x, i, tir::make_const(t, 0));
    return v * v;
  });
  ctx.set_output(0, te::compute("lrn", x.dims(), [=](const Indices& i) {
    Expr base = tir::make_const(t, bias) + tir::make_const(t, alpha / (double)size) * sq(i);
    return x(i) / tir::Call::make(tir::Intrinsic::Pow, {base, tir::make_const(t, beta)});
  }));
}

}  // namespace kiln::lower
