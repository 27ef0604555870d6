// MaxPool, AveragePool, LpPool and their Global forms (NCHW, 1-D to 3-D).
// MaxPool, AveragePool and the Global forms also take the blocked layout
// (kiln_layout=NCHWc, graph/pass_layout.cpp): [N, C/c, H, W, c], the last
// dimension being channels within a block, like a second channel index.
// LpPool: y = (sum over the window of |x|^p)^(1/p), padding contributing 0.
//
// Window positions outside the input (padding, or past the end with
// ceil_mode) never contribute to a max. For an average, count_include_pad=1
// counts positions inside the padded extent, otherwise only real ones.
#include <cmath>

#include "lower/op_lowering.h"
#include "lower/schedules_cpu.h"
#include "support/diagnostics.h"

namespace kiln::lower {
namespace {

// |v|^p and s^(1/p), with p = 1 and 2 spelled out.
Expr lp_power(const Expr& v, double p) {
  Expr a = tir::Call::make(tir::Intrinsic::Abs, {v});
  if (p == 1) return a;
  if (p == 2) return v * v;
  return tir::Call::make(tir::Intrinsic::Pow, {a, tir::make_const(v.type(), p)});
}
Expr lp_root(const Expr& s, double p) {
  if (p == 1) return s;
  if (p == 2) return tir::Call::make(tir::Intrinsic::Sqrt, {s});
  return tir::Call::make(tir::Intrinsic::Pow, {s, tir::make_const(s.type(), 1.0 / p)});
}

double lp_order(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  double p = n.has_attr("p") && n.attrs.at("p").kind == graph::Attr::Kind::Float ? n.attr_float("p", 2.0) : (double)n.attr_int("p", 2);
  user_assert(p > 0) << n.describe() << ": p must be positive";
  return p;
}

}  // namespace

void lower_pool(OpContext& ctx) {
  const bool is_max = ctx.op() == graph::Op::MaxPool, is_lp = ctx.op() == graph::Op::LpPool;
  // MaxPool also on quantized tensors (the quantize pass moves it there).
  graph::DType in_type = ctx.in_dtype(0);
  if (!is_max || (in_type != graph::DType::U8 && in_type != graph::DType::I8)) ctx.require_float();
  const graph::Node& n = ctx.node();
  user_assert(n.outputs.size() < 2 || n.outputs[1] < 0)
      << n.describe() << ": the Indices output of MaxPool is not supported yet";
  te::Tensor x = ctx.in(0);
  const te::Dims xs = x.dims(), os = ctx.out_dims(0);
  user_assert(xs.size() >= 3 && xs.size() <= 5) << n.describe() << ": input must be 3-D to 5-D";
  bool blocked = n.attr_string("kiln_layout", "") == "NCHWc";
  size_t k = xs.size() - 2 - blocked;
  std::vector<int64_t> kernel = n.attr_ints("kernel_shape", {});
  user_assert(kernel.size() == k) << n.describe() << ": 'kernel_shape' must have " << k << " entries";
  std::vector<int64_t> strides = n.attr_ints("strides", std::vector<int64_t>(k, 1));
  std::vector<int64_t> dilations = n.attr_ints("dilations", std::vector<int64_t>(k, 1));
  user_assert(strides.size() == k && dilations.size() == k) << n.describe() << ": strides/dilations rank mismatch";
  user_assert(n.attr_int("storage_order", 0) == 0) << n.describe() << ": storage_order=1 is not supported";
  std::vector<Expr> pads = spatial_pads(ctx, xs, os, kernel, strides, dilations);
  bool include_pad = n.attr_int("count_include_pad", 0) != 0;
  tir::Type t = x.dtype();

  // Window position of reduce index r for output index o, spatial dims only.
  auto positions = [=](const Indices& o, const Indices& r) {
    Indices p;
    for (size_t i = 0; i < k; i++) p.push_back(o[2 + i] * Expr(strides[i]) - pads[i] + r[i] * Expr(dilations[i]));
    return p;
  };
  auto at = [=](const Indices& o, const Indices& r) {
    Indices xi = {o[0], o[1]};
    Indices p = positions(o, r);
    xi.insert(xi.end(), p.begin(), p.end());
    if (blocked) xi.push_back(o.back());
    return xi;
  };
  ScheduleFn schedule = blocked ? ScheduleFn(schedule_pool_blocked_cpu) : nullptr;
  if (is_lp) {
    double p = lp_order(ctx);
    te::Tensor sum = te::reduce("lppool_sum", os, kernel, te::ReduceKind::Sum, t, [=](const Indices& o, const Indices& r) {
      return lp_power(padded_read(x, at(o, r), tir::make_const(t, 0)), p);
    });
    ctx.set_output(0, te::compute("lppool", os, [=](const Indices& o) { return lp_root(sum(o), p); }));
    return;
  }
  if (is_max) {
    Expr lowest = tir::make_const(t, t.is_float() ? -INFINITY : t.is_uint() ? 0 : -128);
    ctx.set_output(0, te::reduce("maxpool", os, kernel, te::ReduceKind::Max, t, [=](const Indices& o, const Indices& r) {
      return padded_read(x, at(o, r), lowest);
    }), schedule);
    return;
  }
  te::Tensor sum = te::reduce("avgpool_sum", os, kernel, te::ReduceKind::Sum, t, [=](const Indices& o, const Indices& r) {
    return padded_read(x, at(o, r), tir::make_const(t, 0));
  });
  std::vector<Expr> lo(k), hi(k);
  for (size_t i = 0; i < k; i++) {
    lo[i] = include_pad ? Expr(0) - pads[i] : Expr(0);
    hi[i] = include_pad ? xs[2 + i] + pads[i + k] : xs[2 + i];
  }
  // The number of window cells inside [lo, hi) in closed form (per axis, the
  // taps r with lo <= o*s - pad + r*d < hi; integer `/` floors), so that the
  // sum is the kernel's only reduction: it gets the pool schedule, the
  // division runs at write-back.
  auto count = [=](const Indices& o) {
    Expr c;
    for (size_t i = 0; i < k; i++) {
      Expr base = o[2 + i] * Expr(strides[i]) - pads[i];
      Expr d = Expr(dilations[i]);
      Expr first = tir::max(Expr(0), (lo[i] - base + d - Expr(1)) / d);
      Expr last = tir::min(Expr(kernel[i] - 1), (hi[i] - Expr(1) - base) / d);
      Expr n = tir::max(last - first + Expr(1), Expr(0));
      c = c.defined() ? c * n : n;
    }
    return tir::cast(t, c);
  };
  if (blocked) ctx.schedule_reduction(sum, schedule);
  ctx.set_output(0, te::compute("avgpool", os, [=](const Indices& o) { return sum(o) / count(o); }));
}

void lower_global_pool(OpContext& ctx) {
  const bool is_max = ctx.op() == graph::Op::GlobalMaxPool, is_lp = ctx.op() == graph::Op::GlobalLpPool;
  ctx.require_float();
  te::Tensor x = ctx.in(0);
  const te::Dims xs = x.dims(), os = ctx.out_dims(0);
  user_assert(xs.size() >= 3) << ctx.node().describe() << ": input must be at least 3-D";
  bool blocked = ctx.node().attr_string("kiln_layout", "") == "NCHWc";
  te::Dims spatial(xs.begin() + 2, xs.end() - blocked);
  tir::Type t = x.dtype();
  auto read = [x, blocked](const Indices& o, const Indices& r) {
    Indices xi = {o[0], o[1]};
    xi.insert(xi.end(), r.begin(), r.end());
    if (blocked) xi.push_back(o.back());
    return x(xi);
  };
  ScheduleFn schedule = blocked ? ScheduleFn(schedule_pool_blocked_cpu) : nullptr;
  if (is_lp) {
    double p = lp_order(ctx);
    te::Tensor sum = te::reduce("globallppool_sum", os, spatial, te::ReduceKind::Sum, t, [=](const Indices& o, const Indices& r) {
      return lp_power(read(o, r), p);
    });
    ctx.set_output(0, te::compute("globallppool", os, [=](const Indices& o) { return lp_root(sum(o), p); }));
    return;
  }
  if (is_max) {
    ctx.set_output(0, te::reduce("globalmaxpool", os, spatial, te::ReduceKind::Max, t, read), schedule);
    return;
  }
  te::Tensor sum = te::reduce("globalavgpool_sum", os, spatial, te::ReduceKind::Sum, t, read);
  if (blocked) ctx.schedule_reduction(sum, schedule);
  Expr cells = te::num_elements(spatial);
  Expr count = tir::as_const_int(cells) ? tir::make_const(t, (double)*tir::as_const_int(cells)) : tir::cast(t, cells);
  ctx.set_output(0, te::compute("globalavgpool", os, [=](const Indices& o) { return sum(o) / count; }));
}

}  // namespace kiln::lower
