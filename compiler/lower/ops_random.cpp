// Random: RandomUniform(Like), RandomNormal(Like), Bernoulli, Multinomial and
// Dropout in training mode (decision 46).
//
// Every random number is a pure function of (seed, element index): a
// counter-based generator, so kernels stay parallel and schedulable and the
// values do not depend on the thread count, the target or the schedule. The
// index is the output's row-major flat index (as uint32); the generator is a
// 32-bit integer finalizer applied twice (multiply, shift-add and rotate
// rounds in the shape of murmur3's, with + in place of xor, which TIR does
// not have) over index * golden + seed. It is a statistical generator, not
// a cryptographic one: correlations between elements 512 apart measure
// about 0.003. The top 24 bits give a float in [0, 1); normals
// come from two such uniforms (Box-Muller, the second stream seeded apart).
// The seed is the node's `seed` attribute when present, else a hash of the
// node's name: outputs are fixed for a bundle, the same every run (an
// inference engine's choice; ONNX leaves unseeded values to the runtime).
#include <cmath>
#include <cstring>

#include "lower/op_lowering.h"
#include "lower/serial_tir.h"
#include "support/diagnostics.h"

namespace kiln::lower {

namespace {

using te::Indices;
using tir::Expr;

// murmur3's 32-bit finalizer (here, at compile time, with xor).
uint32_t fmix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x85ebca6bu;
  x ^= x >> 13;
  x *= 0xc2b2ae35u;
  return x ^ (x >> 16);
}

// The seed of `stream` (0, 1, ...) of node n. Streams must be unrelated:
// seeds that differ by a multiple of the index multiplier would give the same
// draws shifted by some elements (RandomNormal's two uniforms once did).
uint32_t node_seed(const graph::Node& n, uint32_t stream) {
  uint32_t h = 2166136261u;  // FNV-1a
  if (n.has_attr("seed")) {
    double s = n.attr_float("seed", 0.0);
    int64_t i = std::isfinite(s) ? (int64_t)std::fmod(s, 4294967296.0) : 0;
    for (int k = 0; k < 4; k++) h = (h ^ (uint32_t)((uint64_t)i >> (8 * k) & 0xff)) * 16777619u;
  } else {
    for (char c : n.name) h = (h ^ (uint8_t)c) * 16777619u;
  }
  return fmix32(h ^ fmix32(stream + 1));
}

Expr u32(uint32_t v) { return tir::make_const(tir::UInt(32), (int64_t)v); }

// f(x) with x bound once (a Let): every round reads its input twice, so
// without the bindings the expression would double with each round.
template <typename F>
Expr bind(const Expr& x, F f) {
  Expr v = tir::Var::make(tir::UInt(32), "rng");
  return tir::Let::make(v, x, f(v));
}
// x + (x >> k) over uint32 (the shift as an unsigned division).
Expr mix(const Expr& x, int k) {
  return bind(x, [&](const Expr& v) { return v + v / u32(1u << k); });
}
// x rotated left by r bits (the two parts' bits are disjoint, so + is |).
Expr rotl(const Expr& x, int r) {
  return bind(x, [&](const Expr& v) { return v * u32(1u << r) + v / u32(1u << (32 - r)); });
}

// One pass of the finalizer over x + key: two multiply-rotate rounds.
Expr scramble(Expr x) {
  x = mix(x, 16) * u32(0x85ebca6bu);
  x = rotl(x, 13);
  x = mix(x, 15) * u32(0xc2b2ae35u);
  x = mix(x, 16) * u32(0x7feb352du);
  x = rotl(x, 13);
  x = mix(x, 15) * u32(0x846ca68bu);
  return mix(x, 16);
}

// A float32 in [0, 1) from (seed, flat index); `open_low`: in (0, 1] instead.
// The finalizer runs twice (the second time keyed apart): once leaves
// correlations between neighbouring indices that tests/e2e/random_ops.py sees.
Expr uniform01(const Expr& flat, uint32_t seed, bool open_low = false) {
  Expr x = scramble(tir::cast(tir::UInt(32), flat) * u32(0x9E3779B9u) + u32(seed));
  x = scramble(x + u32(0x68E31DA4u));
  Expr top = tir::cast(tir::Float(32), x / u32(256));
  if (open_low) top = top + Expr(1.0f);
  return top * Expr(1.0f / 16777216.0f);
}

// A standard normal from (seed, flat index): Box-Muller on two streams.
Expr normal01(const Expr& flat, const graph::Node& n) {
  Expr u1 = uniform01(flat, node_seed(n, 0), true), u2 = uniform01(flat, node_seed(n, 1));
  Expr r = tir::Call::make(tir::Intrinsic::Sqrt, {Expr(-2.0f) * tir::Call::make(tir::Intrinsic::Log, {u1})});
  return r * tir::Call::make(tir::Intrinsic::Cos, {Expr(6.283185307179586f) * u2});
}

tir::Type out_type(OpContext& ctx) { return compute_type(ctx.value(ctx.output(0)).dtype); }

}  // namespace

void lower_random(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const te::Dims dims = ctx.out_dims(0);
  tir::Type t = out_type(ctx);
  switch (ctx.op()) {
    case graph::Op::RandomUniform:
    case graph::Op::RandomUniformLike: {
      user_assert(t.is_float()) << n.describe() << ": dtype must be a floating-point type";
      float lo = (float)n.attr_float("low", 0.0), hi = (float)n.attr_float("high", 1.0);
      uint32_t seed = node_seed(n, 0);
      ctx.set_output(0, te::compute("random_uniform", dims, [=](const Indices& o) {
        return tir::cast(t, Expr(lo) + Expr(hi - lo) * uniform01(te::flat_index(dims, o), seed));
      }));
      return;
    }
    case graph::Op::RandomNormal:
    case graph::Op::RandomNormalLike: {
      user_assert(t.is_float()) << n.describe() << ": dtype must be a floating-point type";
      float mean = (float)n.attr_float("mean", 0.0), scale = (float)n.attr_float("scale", 1.0);
      ctx.set_output(0, te::compute("random_normal", dims, [=, &n](const Indices& o) {
        return tir::cast(t, Expr(mean) + Expr(scale) * normal01(te::flat_index(dims, o), n));
      }));
      return;
    }
    case graph::Op::Bernoulli: {
      // y = 1 where a uniform draw is below the probability x, as ONNX's reference.
      te::Tensor p = ctx.in(0);
      uint32_t seed = node_seed(n, 0);
      ctx.set_output(0, te::compute("bernoulli", dims, [=](const Indices& o) {
        Expr u = uniform01(te::flat_index(dims, o), seed);
        Expr below = tir::LT::make(u, tir::cast(tir::Float(32), p(o)));
        return tir::select(below, tir::make_const(t, 1), tir::make_const(t, 0));
      }));
      return;
    }
    default: internal_error << n.describe() << ": not a random operator";
  }
}

// Multinomial: sample_size class indices per row of unnormalized
// log-probabilities [B, C]. A hand-written kernel, a workgroup per row: the
// row's maximum, the sum of exp(x - max), then per sample the first class
// whose running sum passes u * sum (u a uniform draw for (row, sample)). A row
// with NaNs or only -inf picks the last class.
void lower_multinomial(OpContext& ctx) {
  using namespace serial;  // NOLINT: the builders are this kernel's vocabulary
  const graph::Node& n = ctx.node();
  const graph::Shape xs = ctx.in_shape(0), ys = ctx.out_shape(0);
  user_assert(xs.size() == 2 && xs[1] >= 1) << n.describe() << ": input must be [batch, classes] with a class or more";
  const int64_t rows = xs[0], C = xs[1], S = n.attr_int("sample_size", 1);
  user_assert(ys.size() == 2 && ys[0] == rows && ys[1] == S && S >= 1)
      << n.describe() << ": output must be [batch, sample_size] with sample_size >= 1";
  tir::Type t = out_type(ctx);
  user_assert(t.is_int()) << n.describe() << ": dtype must be int32 or int64";
  const uint32_t seed = node_seed(n, 0);
  const int in = ctx.input(0), out = ctx.output(0);
  const tir::Type f32 = tir::Float(32);
  ctx.emit_tir("multinomial", [&](const OpContext::BindFn& bind) {
    tir::Buffer X = bind(in, Access::Read), Y = bind(out, Access::Write);
    Expr row = index_var("row"), c = index_var("c"), s = index_var("s");
    Local mx("mx", f32), total("total", f32), acc("acc", f32), pick("pick", tir::Index());
    auto x = [&](const Expr& col) { return tir::cast(f32, tir::Load::make(X, row * Expr(C) + col)); };
    auto e = [&](const Expr& col) { return tir::Call::make(tir::Intrinsic::Exp, {x(col) - mx.get()}); };
    Expr threshold = uniform01(row * Expr(S) + s, seed) * total.get();
    Stmt sample = block({acc.set(Expr(0.0f)), pick.set(Expr(C)),
                         loop(c, Expr(C), block({acc.set(acc.get() + e(c)),
                                                 when(tir::EQ::make(pick.get(), Expr(C)) && threshold < acc.get(),
                                                      pick.set(c))})),
                         tir::Store::make(Y, row * Expr(S) + s, tir::cast(t, tir::min(pick.get(), Expr(C - 1))))});
    Stmt body = block({mx.set(Expr(-INFINITY)), loop(c, Expr(C), mx.set(tir::max(mx.get(), x(c)))),
                       total.set(Expr(0.0f)), loop(c, Expr(C), total.set(total.get() + e(c))), loop(s, Expr(S), sample)});
    return workgroups(row, rows, allocate({mx.b, total.b, acc.b, pick.b}, body));
  });
}

// Dropout whose training_mode may be true: y = x / (1 - ratio) where a
// uniform draw is at least ratio, else 0; mask = that draw test. Ratio and
// training_mode may be run-time scalars; training_mode false gives y = x
// and an all-true mask.
void lower_dropout_training(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const te::Dims dims = ctx.out_dims(0);
  te::Tensor x = ctx.in(0);
  tir::Type t = graph::dtype_to_tir(ctx.in_dtype(0));
  user_assert(t.is_float()) << n.describe() << ": Dropout's data must be floating point";
  Expr ratio = ctx.has_input(1) ? scalar_input(ctx, 1, tir::Float(32)) : Expr(0.5f);
  Expr training = ctx.has_input(2) ? scalar_input(ctx, 2, tir::Bool()) : tir::make_const(tir::Bool(), 0);
  uint32_t seed = node_seed(n, 0);
  auto keep = [=](const Indices& o) {
    return tir::Or::make(tir::Not::make(training),
                         tir::LE::make(ratio, uniform01(te::flat_index(dims, o), seed)));
  };
  Expr scale = tir::select(training, Expr(1.0f) / (Expr(1.0f) - ratio), Expr(1.0f));
  ctx.set_output(0, te::compute("dropout", dims, [=](const Indices& o) {
    return tir::select(keep(o), x(o) * tir::cast(t, scale), tir::make_const(t, 0));
  }));
  if (n.outputs.size() > 1 && n.outputs[1] >= 0)
    ctx.set_output(1, te::compute("dropout_mask", ctx.out_dims(1), keep));
}

}  // namespace kiln::lower
