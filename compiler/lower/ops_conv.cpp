// Conv (1-D to 3-D, pads, strides, dilations, groups, auto_pad), NCHW layout.
//
//   out[n, m, o...] = bias[m] + sum_{c, k...} x[n, g*Cg + c, o*s - pad + k*d] * w[m, c, k...]
//   with g = m / (M / group) and Cg = C / group.
#include "lower/op_lowering.h"
#include "support/diagnostics.h"

namespace kiln::lower {
namespace {

void lower_conv(OpContext& ctx) {
  ctx.require_float();
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0), w = ctx.in(1);
  const graph::Shape& xs = x.shape();
  const graph::Shape& ws = w.shape();
  const graph::Shape& os = ctx.out_shape(0);
  user_assert(xs.size() >= 3 && xs.size() <= 5 && ws.size() == xs.size())
      << n.describe() << ": input and weight must be 3-D to 5-D with the same rank";
  size_t k = xs.size() - 2;
  int64_t group = n.attr_int("group", 1);
  int64_t C = xs[1], M = ws[0], Cg = ws[1];
  user_assert(group >= 1 && C % group == 0 && M % group == 0 && Cg * group == C)
      << n.describe() << ": group " << group << " does not divide channels " << C << " and filters " << M;
  std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  std::vector<int64_t> strides = n.attr_ints("strides", std::vector<int64_t>(k, 1));
  std::vector<int64_t> dilations = n.attr_ints("dilations", std::vector<int64_t>(k, 1));
  user_assert(strides.size() == k && dilations.size() == k) << n.describe() << ": strides/dilations rank mismatch";
  std::vector<int64_t> pads = spatial_pads(ctx, xs, os, kernel, strides, dilations);
  int64_t Mg = M / group;
  tir::Type t = x.dtype();

  graph::Shape rshape = {Cg};
  rshape.insert(rshape.end(), kernel.begin(), kernel.end());
  te::Tensor conv = te::reduce("conv", os, rshape, te::ReduceKind::Sum, t, [&, x, w](const Indices& o, const Indices& r) {
    Indices xi = {o[0], (o[1] / Expr(Mg)) * Expr(Cg) + r[0]};
    Indices wi = {o[1], r[0]};
    for (size_t i = 0; i < k; i++) {
      xi.push_back(o[2 + i] * Expr(strides[i]) - Expr(pads[i]) + r[1 + i] * Expr(dilations[i]));
      wi.push_back(r[1 + i]);
    }
    return padded_read(x, xi, tir::make_const(t, 0)) * w(wi);
  });
  if (ctx.has_input(2)) {
    te::Tensor b = ctx.in(2), acc = conv;
    conv = te::compute("conv_bias", os, [acc, b](const Indices& o) { return acc(o) + b({o[1]}); });
  }
  ctx.set_output(0, conv);
}

}  // namespace

void register_conv_ops(std::map<std::string, OpLowering>& r) { r["Conv"] = lower_conv; }

}  // namespace kiln::lower
