// Conv (1-D to 3-D, pads, strides, dilations, groups, auto_pad), NCHW layout.
//
//   out[n, m, o...] = bias[m] + sum_{c, k...} x[n, g*Cg + c, o*s - pad + k*d] * w[m, c, k...]
//   with g = m / (M / group) and Cg = C / group.
#include "lower/op_lowering.h"
#include "support/diagnostics.h"

namespace kiln::lower {
namespace {

void lower_conv(OpContext& ctx) {
  ctx.require_float32();
  const graph::Node& n = ctx.node();
  const graph::Shape& xs = ctx.in_shape(0);
  const graph::Shape& ws = ctx.in_shape(1);
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

  KernelDef& kd = ctx.new_kernel("conv");
  tir::Buffer x = ctx.param(kd, ctx.input(0), Access::Read);
  tir::Buffer w = ctx.param(kd, ctx.input(1), Access::Read);
  tir::Buffer b = ctx.has_input(2) ? ctx.param(kd, ctx.input(2), Access::Read) : nullptr;
  tir::Buffer out = ctx.param(kd, ctx.output(0), Access::Write);

  graph::Shape rshape = {Cg};
  rshape.insert(rshape.end(), kernel.begin(), kernel.end());
  kd.body = loop_nest("i", os, [&](const Indices& o) {
    Expr m = o[1];
    Expr init = b ? tir::Load::make(b, m) : Expr(0.0f);
    return reduce(
        "acc", tir::Float(32), init, rshape,
        [&](const Expr& acc, const Indices& r) {
          Indices xi = {o[0], (m / Expr(Mg)) * Expr(Cg) + r[0]};
          Indices wi = {m, r[0]};
          for (size_t i = 0; i < k; i++) {
            xi.push_back(o[2 + i] * Expr(strides[i]) - Expr(pads[i]) + r[1 + i] * Expr(dilations[i]));
            wi.push_back(r[1 + i]);
          }
          Expr xv = padded_load(x, xs, xi, Expr(0.0f));
          return acc + xv * tir::Load::make(w, flat_index(ws, wi));
        },
        [&](const Expr& acc) { return tir::Store::make(out, flat_index(os, o), acc); });
  });
}

}  // namespace

void register_conv_ops(std::map<std::string, OpLowering>& r) { r["Conv"] = lower_conv; }

}  // namespace kiln::lower
