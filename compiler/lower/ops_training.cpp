// Training: ONNX's optimizers (domain ai.onnx.preview.training), one
// update step each: Adagrad, Momentum (standard and Nesterov) and Adam.
//
// A node updates every tensor it lists. Inputs: R (the learning rate, a
// float scalar), T (the step count, an int64 scalar), then X_1..X_n, their
// gradients G_1..G_n and the optimizer's state (Adagrad: H; Momentum: V;
// Adam: V, then H), each group of n; outputs the new X's, then the new
// state tensors in the same order. Every output is an elementwise kernel of
// its own over X_i's shape (the shared terms are recomputed: they are a few
// operations per element). With g = norm_coefficient * X + G:
//   Adagrad:  r = R / (1 + T decay_factor); H' = H + g^2;
//             X' = X - r g / (sqrt(H') + epsilon)
//   Momentum: V' = alpha V + (T > 0 ? beta : 1) g;
//             X' = X - R V' (standard) or X - R (g + alpha V') (nesterov)
//   Adam:     V' = alpha V + (1 - alpha) g; H' = beta H + (1 - beta) g^2;
//             r = T > 0 ? R sqrt(1 - beta^T) / (1 - alpha^T) : R;
//             X' = (1 - norm_coefficient_post) (X - r V' / (sqrt(H') + epsilon))
// in X's float type (R and the attributes converted to it); epsilon's
// default is ONNX's 1e-6.
#include "lower/op_lowering.h"
#include "support/diagnostics.h"

namespace kiln::lower {

void lower_optimizer(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const graph::Op op = ctx.op();
  const size_t groups = op == graph::Op::Adam ? 4 : 3;  // X, G and the state tensors
  user_assert(n.inputs.size() >= 2 + groups && (n.inputs.size() - 2) % groups == 0)
      << n.describe() << ": needs R, T and " << groups << " tensors per updated input";
  const size_t count = (n.inputs.size() - 2) / groups;
  user_assert(n.outputs.size() <= (groups - 1) * count) << n.describe() << ": too many outputs";
  const tir::Type t = graph::dtype_to_tir(ctx.in_dtype(2));
  user_assert(t.is_float()) << n.describe() << ": X must be a float tensor";
  for (size_t i = 2; i < n.inputs.size(); i++) {
    user_assert(ctx.has_input(i) && ctx.in_dtype(i) == ctx.in_dtype(2))
        << n.describe() << ": every X, G and state tensor must be present and of X's type";
  }
  auto c = [t](double v) { return tir::make_const(t, v); };
  const Expr R = scalar_input(ctx, 0, t);
  const Expr T = scalar_input(ctx, 1, tir::Int(64));
  const Expr Tf = tir::cast(t, T), started = T > Expr(0);
  const double norm = n.attr_float("norm_coefficient", 0.0);
  auto sqrt = [](const Expr& x) { return tir::Call::make(tir::Intrinsic::Sqrt, {x}); };
  auto pow = [](const Expr& x, const Expr& y) { return tir::Call::make(tir::Intrinsic::Pow, {x, y}); };

  for (size_t k = 0; k < count; k++) {
    te::Tensor X = ctx.in(2 + k), G = ctx.in(2 + count + k), S1 = ctx.in(2 + 2 * count + k);
    te::Tensor S2 = op == graph::Op::Adam ? ctx.in(2 + 3 * count + k) : te::Tensor();
    user_assert(ctx.in_shape(2 + count + k) == X.shape() && ctx.in_shape(2 + 2 * count + k) == X.shape() &&
                (!S2.defined() || S2.shape() == X.shape()))
        << n.describe() << ": X, G and the state tensors of input " << k << " must have the same shape";
    auto g = [=](const Indices& i) { return c(norm) * X(i) + G(i); };
    std::function<Expr(const Indices&)> x_new, state1, state2;
    if (op == graph::Op::Adagrad) {
      const double decay = n.attr_float("decay_factor", 0.0), eps = n.attr_float("epsilon", 1e-6);
      const Expr r = R / (c(1) + Tf * c(decay));
      state1 = [=](const Indices& i) { return S1(i) + g(i) * g(i); };
      x_new = [=](const Indices& i) { return X(i) - r * g(i) / (sqrt(state1(i)) + c(eps)); };
    } else if (op == graph::Op::Momentum) {
      for (const char* a : {"alpha", "beta", "mode", "norm_coefficient"})
        user_assert(n.has_attr(a)) << n.describe() << ": attribute '" << a << "' is required";
      const double alpha = n.attr_float("alpha", 0.0), beta = n.attr_float("beta", 0.0);
      const std::string mode = n.attr_string("mode", "standard");
      user_assert(mode == "standard" || mode == "nesterov") << n.describe() << ": mode must be standard or nesterov";
      const Expr b = tir::select(started, c(beta), c(1));
      state1 = [=](const Indices& i) { return c(alpha) * S1(i) + b * g(i); };
      if (mode == "standard") x_new = [=](const Indices& i) { return X(i) - R * state1(i); };
      else x_new = [=](const Indices& i) { return X(i) - R * (g(i) + c(alpha) * state1(i)); };
    } else {
      const double alpha = n.attr_float("alpha", 0.9), beta = n.attr_float("beta", 0.999);
      const double eps = n.attr_float("epsilon", 1e-6), post = n.attr_float("norm_coefficient_post", 0.0);
      const Expr r = tir::select(started, R * sqrt(c(1) - pow(c(beta), Tf)) / (c(1) - pow(c(alpha), Tf)), R);
      state1 = [=](const Indices& i) { return c(alpha) * S1(i) + c(1 - alpha) * g(i); };
      state2 = [=](const Indices& i) { return c(beta) * S2(i) + c(1 - beta) * g(i) * g(i); };
      x_new = [=](const Indices& i) { return c(1 - post) * (X(i) - r * state1(i) / (sqrt(state2(i)) + c(eps))); };
    }
    const te::Dims dims = X.dims();
    const std::function<Expr(const Indices&)> outs[3] = {x_new, state1, state2};
    for (size_t o = 0; o < groups - 1; o++) {
      size_t slot = o * count + k;
      if (slot < n.outputs.size() && n.outputs[slot] >= 0)
        ctx.set_output(slot, te::compute(o == 0 ? "x_new" : "state", dims, outs[o]));
    }
  }
}

}  // namespace kiln::lower
