// Elementwise operators: unary activations, broadcasting binary arithmetic,
// Clip and inference-mode BatchNormalization.
#include <cmath>
#include <cstring>

#include "lower/op_lowering.h"
#include "support/diagnostics.h"

namespace kiln::lower {
namespace {

using UnaryFn = std::function<Expr(const OpContext&, const Expr&)>;

void lower_unary(OpContext& ctx, const char* what, const UnaryFn& f) {
  ctx.require_float32();
  KernelDef& kd = ctx.new_kernel(what);
  tir::Buffer x = ctx.param(kd, ctx.input(0), Access::Read);
  tir::Buffer out = ctx.param(kd, ctx.output(0), Access::Write);
  const graph::Shape& s = ctx.out_shape(0);
  kd.body = compute(out, s, [&](const Indices& i) { return f(ctx, tir::Load::make(x, flat_index(s, i))); });
}

Expr call(tir::Intrinsic op, const Expr& x) { return tir::Call::make(op, {x}); }

void lower_binary(OpContext& ctx, const char* what, bool ints_ok, Expr (*f)(Expr, Expr)) {
  const graph::Node& n = ctx.node();
  graph::DType dt = ctx.value(ctx.input(0)).dtype;
  user_assert(ctx.value(ctx.input(1)).dtype == dt && ctx.value(ctx.output(0)).dtype == dt)
      << n.describe() << ": inputs and output must have the same element type";
  bool is_float = dt == graph::DType::F32 || dt == graph::DType::F64;
  bool is_int = dt == graph::DType::I32 || dt == graph::DType::I64 || dt == graph::DType::I8 ||
                dt == graph::DType::I16 || dt == graph::DType::U8;
  user_assert(is_float || (ints_ok && is_int)) << n.describe() << ": element type " << graph::dtype_name(dt)
                                               << " is not supported for " << n.op << " yet";
  KernelDef& kd = ctx.new_kernel(what);
  tir::Buffer a = ctx.param(kd, ctx.input(0), Access::Read);
  tir::Buffer b = ctx.param(kd, ctx.input(1), Access::Read);
  tir::Buffer out = ctx.param(kd, ctx.output(0), Access::Write);
  const graph::Shape& as = ctx.in_shape(0);
  const graph::Shape& bs = ctx.in_shape(1);
  const graph::Shape& os = ctx.out_shape(0);
  kd.body = compute(out, os, [&](const Indices& i) {
    Expr av = tir::Load::make(a, flat_index(as, broadcast_index(as, i)));
    Expr bv = tir::Load::make(b, flat_index(bs, broadcast_index(bs, i)));
    return f(av, bv);
  });
}

// A scalar bound of Clip: an attribute (opset < 11), a constant input, or a
// run-time scalar input loaded by the kernel.
Expr clip_bound(OpContext& ctx, KernelDef& kd, size_t input, const char* attr, float dflt) {
  const graph::Node& n = ctx.node();
  if (ctx.graph.opset < 11) return Expr((float)n.attr_float(attr, dflt));
  if (!ctx.has_input(input)) return Expr(dflt);
  const graph::Value& v = ctx.value(ctx.input(input));
  user_assert(v.elements() == 1) << n.describe() << ": Clip bounds must be scalars";
  if (v.is_constant()) return Expr((float)v.const_at(0));
  return tir::Load::make(ctx.param(kd, ctx.input(input), Access::Read), Expr(0));
}

void lower_clip(OpContext& ctx) {
  ctx.require_float32();
  KernelDef& kd = ctx.new_kernel("clip");
  tir::Buffer x = ctx.param(kd, ctx.input(0), Access::Read);
  float inf = INFINITY;
  Expr lo = clip_bound(ctx, kd, 1, "min", -inf);
  Expr hi = clip_bound(ctx, kd, 2, "max", inf);
  tir::Buffer out = ctx.param(kd, ctx.output(0), Access::Write);
  const graph::Shape& s = ctx.out_shape(0);
  kd.body = compute(out, s, [&](const Indices& i) {
    return tir::min(tir::max(tir::Load::make(x, flat_index(s, i)), lo), hi);
  });
}

// y = (x - mean) / sqrt(var + eps) * scale + bias, per channel (axis 1).
// With constant statistics the per-channel factors are folded at compile
// time into two constants a and b: y = x * a + b.
void lower_batchnorm(OpContext& ctx) {
  ctx.require_float32();
  const graph::Node& n = ctx.node();
  user_assert(n.attr_int("training_mode", 0) == 0 && (n.outputs.size() == 1 || n.outputs[1] < 0))
      << n.describe() << ": only inference-mode BatchNormalization is supported";
  const graph::Shape& s = ctx.out_shape(0);
  user_assert(s.size() >= 2) << n.describe() << ": input must be at least 2-D";
  int64_t C = s[1];
  double eps = n.attr_float("epsilon", 1e-5);
  bool all_const = true;
  for (int i = 1; i <= 4; i++) all_const &= ctx.value(ctx.input(i)).is_constant();
  for (int i = 1; i <= 4; i++)
    user_assert(ctx.value(ctx.input(i)).elements() == C) << n.describe() << ": input " << i << " must have C elements";

  KernelDef& kd = ctx.new_kernel("batchnorm");
  tir::Buffer x = ctx.param(kd, ctx.input(0), Access::Read);
  std::function<Expr(const Indices&)> f;
  if (all_const) {
    std::vector<float> a(C), b(C);
    for (int64_t c = 0; c < C; c++) {
      double inv = 1.0 / std::sqrt(ctx.value(ctx.input(4)).const_at(c) + eps);
      double scale = ctx.value(ctx.input(1)).const_at(c) * inv;
      a[c] = (float)scale;
      b[c] = (float)(ctx.value(ctx.input(2)).const_at(c) - ctx.value(ctx.input(3)).const_at(c) * scale);
    }
    auto bytes = [](const std::vector<float>& v) {
      std::vector<uint8_t> r(v.size() * 4);
      memcpy(r.data(), v.data(), r.size());
      return r;
    };
    int av = ctx.graph.add_constant(n.name + ".bn_scale", graph::DType::F32, {C}, bytes(a));
    int bv = ctx.graph.add_constant(n.name + ".bn_shift", graph::DType::F32, {C}, bytes(b));
    tir::Buffer ab = ctx.param(kd, av, Access::Read);
    tir::Buffer bb = ctx.param(kd, bv, Access::Read);
    f = [&, ab, bb](const Indices& i) {
      return tir::Load::make(x, flat_index(s, i)) * tir::Load::make(ab, i[1]) + tir::Load::make(bb, i[1]);
    };
  } else {
    tir::Buffer scale = ctx.param(kd, ctx.input(1), Access::Read);
    tir::Buffer bias = ctx.param(kd, ctx.input(2), Access::Read);
    tir::Buffer mean = ctx.param(kd, ctx.input(3), Access::Read);
    tir::Buffer var = ctx.param(kd, ctx.input(4), Access::Read);
    f = [&, scale, bias, mean, var](const Indices& i) {
      Expr c = i[1];
      Expr inv = Expr(1.0f) / call(tir::Intrinsic::Sqrt, tir::Load::make(var, c) + Expr((float)eps));
      return (tir::Load::make(x, flat_index(s, i)) - tir::Load::make(mean, c)) * inv * tir::Load::make(scale, c) +
             tir::Load::make(bias, c);
    };
  }
  tir::Buffer out = ctx.param(kd, ctx.output(0), Access::Write);
  kd.body = compute(out, s, f);
}

}  // namespace

void register_elementwise_ops(std::map<std::string, OpLowering>& r) {
  auto unary = [&](const char* op, const char* what, UnaryFn f) {
    r[op] = [what, f](OpContext& c) { lower_unary(c, what, f); };
  };
  unary("Relu", "relu", [](const OpContext&, const Expr& x) { return tir::max(x, Expr(0.0f)); });
  unary("Sigmoid", "sigmoid", [](const OpContext&, const Expr& x) {
    return Expr(1.0f) / (Expr(1.0f) + call(tir::Intrinsic::Exp, Expr(0.0f) - x));
  });
  unary("Exp", "exp", [](const OpContext&, const Expr& x) { return call(tir::Intrinsic::Exp, x); });
  unary("Sqrt", "sqrt", [](const OpContext&, const Expr& x) { return call(tir::Intrinsic::Sqrt, x); });
  unary("Abs", "abs", [](const OpContext&, const Expr& x) { return call(tir::Intrinsic::Abs, x); });
  unary("Floor", "floor", [](const OpContext&, const Expr& x) { return call(tir::Intrinsic::Floor, x); });
  unary("Ceil", "ceil", [](const OpContext&, const Expr& x) { return call(tir::Intrinsic::Ceil, x); });
  unary("Neg", "neg", [](const OpContext&, const Expr& x) { return Expr(0.0f) - x; });
  unary("Reciprocal", "reciprocal", [](const OpContext&, const Expr& x) { return Expr(1.0f) / x; });
  unary("LeakyRelu", "leakyrelu", [](const OpContext& c, const Expr& x) {
    float alpha = (float)c.node().attr_float("alpha", 0.01);
    return tir::select(x < Expr(0.0f), x * Expr(alpha), x);
  });
  unary("HardSigmoid", "hardsigmoid", [](const OpContext& c, const Expr& x) {
    float alpha = (float)c.node().attr_float("alpha", 0.2), beta = (float)c.node().attr_float("beta", 0.5);
    return tir::clamp(x * Expr(alpha) + Expr(beta), Expr(0.0f), Expr(1.0f));
  });
  unary("HardSwish", "hardswish", [](const OpContext&, const Expr& x) {
    return x * tir::clamp(x * Expr(1.0f / 6.0f) + Expr(0.5f), Expr(0.0f), Expr(1.0f));
  });
  r["Add"] = [](OpContext& c) { lower_binary(c, "add", true, [](Expr a, Expr b) { return a + b; }); };
  r["Sub"] = [](OpContext& c) { lower_binary(c, "sub", true, [](Expr a, Expr b) { return a - b; }); };
  r["Mul"] = [](OpContext& c) { lower_binary(c, "mul", true, [](Expr a, Expr b) { return a * b; }); };
  r["Div"] = [](OpContext& c) { lower_binary(c, "div", false, [](Expr a, Expr b) { return a / b; }); };
  r["Clip"] = lower_clip;
  r["BatchNormalization"] = lower_batchnorm;
}

}  // namespace kiln::lower
