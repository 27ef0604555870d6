// Reductions: Reduce{Sum,Mean,Max,Min,Prod,L1,L2,LogSum,LogSumExp,SumSquare},
// ArgMax/ArgMin and TopK.
//
// TopK (k a constant) ranks every element of a slice along the axis:
//   rank(i) = #{j : x[j] better than x[i]} + #{j < i : x[j] == x[i]}
// (better: greater for largest=1, smaller otherwise; ties keep the lower
// index first), then output position p takes the element whose rank is p:
//   index[p] = min over i of (rank(i) == p ? i : n), value[p] = x[index[p]].
// Both steps are reductions over the axis (quadratic in its length).
//
// Reduced axes come from the `axes` attribute, or (ReduceSum from opset 13,
// the others from opset 18) from a constant second input.
#include <algorithm>
#include <cmath>
#include <set>

#include "lower/expr_helpers.h"
#include "lower/op_lowering.h"
#include "lower/serial_tir.h"
#include "support/diagnostics.h"

namespace kiln::lower {
namespace {

using graph::Op;
using tir::Intrinsic;

ReduceAxes reduce_axes(OpContext& ctx, bool axes_from_input) {
  const graph::Node& n = ctx.node();
  te::Dims xd = ctx.in_dims(0);
  int64_t rank = (int64_t)xd.size();
  std::vector<int64_t> axes;
  bool have_axes = false;
  if (axes_from_input && ctx.has_input(1)) {
    const graph::Value& a = ctx.value(ctx.input(1));
    // An empty axes tensor needs no values (fed at run time or not).
    user_assert(a.is_constant() || a.elements() == 0) << n.describe() << ": the axes input must be a constant";
    for (int64_t i = 0; a.is_constant() && i < a.elements(); i++) axes.push_back(a.const_int_at(i));
    have_axes = true;
  } else if (n.has_attr("axes")) {
    axes = n.attr_ints("axes", {});
    have_axes = true;
  }
  ReduceAxes r;
  r.keepdims = n.attr_int("keepdims", 1) != 0;
  r.reduced.assign(rank, false);
  if (!have_axes || axes.empty()) {
    bool noop = n.attr_int("noop_with_empty_axes", 0) != 0;
    if (!noop) r.reduced.assign(rank, true);
  }
  for (int64_t a : axes) r.reduced[normalize_axis(ctx, a, rank)] = true;
  for (int64_t i = 0; i < rank; i++)
    if (r.reduced[i]) r.rshape.push_back(xd[i]);
  return r;
}

// The variable of the data symbol whose source is value v.
Expr symbol_of(OpContext& ctx, int v) {
  for (auto& s : ctx.graph.symbols)
    if (s.source_value == v) return s.var;
  internal_error << ctx.node().describe() << ": no symbol has source '" << ctx.value(v).name << "'";
}

// Axes read at run time (import/infer_dims.cpp, run_time_axes): one kernel
// reads them and writes the keepdims shape's dimensions (and with
// keepdims=0 the output's) and whether they are valid, as data symbols;
// the reduction then runs over the keepdims shape (ReduceAxes::run_time).
// Returns the axes; *keep_dims gets the keepdims shape.
ReduceAxes run_time_axes(OpContext& ctx, te::Dims* keep_dims) {
  const graph::Node& n = ctx.node();
  const graph::Shape xs = ctx.in_shape(0);
  const int64_t r = (int64_t)xs.size(), k = ctx.value(ctx.input(1)).elements();
  const bool keep = n.attr_int("keepdims", 1) != 0;
  const size_t first_out = 1 + (size_t)r, valid = n.outputs.size() - 1;
  internal_assert(n.outputs.size() == 1 + (size_t)r + (keep ? 0 : (size_t)(r - k)) + 1)
      << n.describe() << ": run-time axes need their hidden outputs";
  const int axes_in = ctx.input(1);
  ctx.emit_tir("reduce_axes", [&](const OpContext::BindFn& bind) {
    tir::Buffer ab = bind(axes_in, Access::Read);
    std::vector<Expr> axis;  // each axis, made non-negative
    Expr ok = tir::IntImm::make(tir::Bool(), 1);
    for (int64_t j = 0; j < k; j++) {
      Expr a = tir::cast(tir::Index(), tir::Load::make(ab, Expr(j)));
      a = tir::select(a < Expr(0), a + Expr(r), a);
      ok = ok && a >= Expr(0) && a < Expr(r);
      for (auto& b : axis) ok = ok && tir::NE::make(a, b);
      axis.push_back(a);
    }
    std::vector<tir::Stmt> body;
    std::vector<Expr> kept(r);  // 1 when dimension d is not reduced
    for (int64_t d = 0; d < r; d++) {
      Expr hit = tir::IntImm::make(tir::Bool(), 0);
      for (auto& a : axis) hit = hit || tir::EQ::make(a, Expr(d));
      kept[d] = tir::select(hit, Expr(0), Expr(1));
      body.push_back(tir::Store::make(bind(n.outputs[1 + (size_t)d], Access::Write), Expr(0),
                                      tir::select(hit, Expr(1), Expr(xs[(size_t)d]))));
    }
    for (int64_t j = 0; !keep && j < r - k; j++) {  // the j-th kept dimension's size
      Expr size = Expr(0), before = Expr(0);
      for (int64_t d = 0; d < r; d++) {
        size = size + tir::select(tir::EQ::make(kept[d], Expr(1)) && tir::EQ::make(before, Expr(j)), Expr(xs[(size_t)d]), Expr(0));
        before = before + kept[d];
      }
      body.push_back(tir::Store::make(bind(n.outputs[first_out + (size_t)j], Access::Write), Expr(0), size));
    }
    body.push_back(tir::Store::make(bind(n.outputs[valid], Access::Write), Expr(0), tir::select(ok, Expr(1), Expr(0))));
    return serial::block(body);
  });
  ReduceAxes ax;
  ax.run_time = true;
  ax.keepdims = true;
  ax.reduced.assign((size_t)r, true);
  for (int64_t d = 0; d < r; d++) {
    Expr o = symbol_of(ctx, n.outputs[1 + (size_t)d]);
    keep_dims->push_back(o);
    ax.rshape.push_back(Expr(xs[(size_t)d]) + Expr(1) - o);
  }
  return ax;
}

}  // namespace

void lower_reduce(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const Op op = ctx.op();
  bool from_input = op == Op::ReduceSum ? ctx.graph.opset >= 13 : ctx.graph.opset >= 18;
  bool run_time = from_input && ctx.has_input(1) && !ctx.value(ctx.input(1)).is_constant() &&
                  ctx.value(ctx.input(1)).elements() > 0;
  te::Dims os = ctx.out_dims(0), keep_dims;
  ReduceAxes ax = run_time ? run_time_axes(ctx, &keep_dims) : reduce_axes(ctx, from_input);
  if (run_time) os = keep_dims;  // the keepdims result; keepdims=0 reads it flat (below)
  te::Tensor x = ctx.in(0);
  tir::Type t = x.dtype();
  user_assert(t.is_float() || op == Op::ReduceSum || op == Op::ReduceMax || op == Op::ReduceMin || op == Op::ReduceProd)
      << n.describe() << ": " << n.op << " needs a float input";
  Expr count = te::num_elements(ax.rshape);
  Expr count_t = tir::as_const_int(count) ? k(t, (double)*tir::as_const_int(count)) : tir::cast(t, count);
  auto body = [=](const std::function<Expr(Expr)>& f) {
    return [=](const Indices& o, const Indices& r) { return f(x(input_index(ax, o, r))); };
  };
  auto id = [](Expr v) { return v; };
  // With run-time axes and keepdims=0 the output holds the keepdims result's
  // elements in the same order, under the kept dimensions' sizes.
  auto finish = [&](const te::Tensor& result) {
    if (!run_time || n.attr_int("keepdims", 1) != 0) return ctx.set_output(0, result);
    te::Tensor kept = ctx.materialize(result);
    const te::Dims od = ctx.out_dims(0);
    ctx.set_output(0, te::compute(n.op, od, [=](const Indices& o) {
      Expr flat = te::flat_index(od, o);
      Indices i(os.size());
      for (size_t d = os.size(); d-- > 0;) {
        i[d] = flat % os[d];
        flat = flat / os[d];
      }
      return kept(i);
    }));
  };
  te::ReduceKind rk = op == Op::ReduceMax ? te::ReduceKind::Max
                      : op == Op::ReduceMin ? te::ReduceKind::Min
                      : op == Op::ReduceProd ? te::ReduceKind::Prod
                                       : te::ReduceKind::Sum;
  te::Tensor red;
  if (op == Op::ReduceL1) red = te::reduce(n.op, os, ax.rshape, rk, t, body([](Expr v) { return call(Intrinsic::Abs, v); }));
  else if (op == Op::ReduceL2 || op == Op::ReduceSumSquare) red = te::reduce(n.op, os, ax.rshape, rk, t, body([](Expr v) { return v * v; }));
  else if (op == Op::ReduceLogSumExp) {
    te::Tensor m = ctx.materialize(te::reduce("max", os, ax.rshape, te::ReduceKind::Max, t, body(id)));
    te::Tensor s = te::reduce(n.op, os, ax.rshape, te::ReduceKind::Sum, t, [=](const Indices& o, const Indices& r) {
      return call(Intrinsic::Exp, x(input_index(ax, o, r)) - m(o));
    });
    finish(te::compute(n.op, os, [=](const Indices& o) {
      // An all -inf (or empty) slice keeps the max itself.
      return tir::select(tir::EQ::make(m(o), k(t, -INFINITY)), m(o), m(o) + call(Intrinsic::Log, s(o)));
    }));
    return;
  } else red = te::reduce(n.op, os, ax.rshape, rk, t, body(id));
  te::Tensor out = red;
  if (op == Op::ReduceMean) out = te::compute(n.op, os, [=](const Indices& o) { return red(o) / count_t; });
  if (op == Op::ReduceL2) out = te::compute(n.op, os, [=](const Indices& o) { return call(Intrinsic::Sqrt, red(o)); });
  if (op == Op::ReduceLogSum) out = te::compute(n.op, os, [=](const Indices& o) { return call(Intrinsic::Log, red(o)); });
  finish(out);
}

void lower_arg(OpContext& ctx) {
  const bool is_max = ctx.op() == Op::ArgMax;
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0);
  int64_t rank = (int64_t)x.ndim();
  int64_t axis = normalize_axis(ctx, n.attr_int("axis", 0), rank);
  bool last = n.attr_int("select_last_index", 0) != 0;
  ReduceAxes ax;
  ax.keepdims = n.attr_int("keepdims", 1) != 0;
  ax.reduced.assign(rank, false);
  ax.reduced[axis] = true;
  ax.rshape = {x.dims()[axis]};
  const te::Dims os = ctx.out_dims(0);
  tir::Type t = x.dtype();
  te::Tensor best = ctx.materialize(te::reduce("best", os, ax.rshape, is_max ? te::ReduceKind::Max : te::ReduceKind::Min, t,
                                               [=](const Indices& o, const Indices& r) { return x(input_index(ax, o, r)); }));
  // The first (or last) index holding the best value.
  Expr none = last ? Expr(-1) : x.dims()[axis];
  ctx.set_output(0, te::reduce(n.op, os, ax.rshape, last ? te::ReduceKind::Max : te::ReduceKind::Min, tir::Int(64),
                               [=](const Indices& o, const Indices& r) {
                                 Expr hit = tir::EQ::make(x(input_index(ax, o, r)), best(o));
                                 return tir::select(hit, r[0], none);
                               },
                               none));
}

void lower_topk(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0);
  const te::Dims xd = ctx.in_dims(0);
  int64_t rank = (int64_t)x.ndim();
  int64_t axis = normalize_axis(ctx, n.attr_int("axis", -1), rank);
  Expr len = xd[(size_t)axis];
  if (ctx.graph.opset >= 10) {
    const graph::Value& kv = ctx.value(ctx.input(1));
    user_assert(kv.elements() == 1) << n.describe() << ": k must hold one value";
    if (kv.is_constant()) {
      int64_t k = kv.const_int_at(0), most = ctx.value(ctx.input(0)).shape[(size_t)axis];
      user_assert(k >= 0 && k <= most) << n.describe() << ": k = " << k << " is out of range for an axis of " << most;
    } else if (kv.sym.empty()) {
      // k known only at run time: the data symbol import/infer_dims.cpp made
      // (the node's last output is its source). This kernel copies k there;
      // the runtime checks it against [0, the axis' size] before the others run.
      const int kin = ctx.input(1), count = n.outputs.back();
      ctx.emit_tir("topk_k", [&](const OpContext::BindFn& bind) {
        tir::Buffer kb = bind(kin, Access::Read), cb = bind(count, Access::Write);
        return tir::Store::make(cb, Expr(0), tir::Cast::make(tir::Index(), tir::Load::make(kb, Expr(0))));
      });
    }
  }
  bool largest = n.attr_int("largest", 1) != 0;
  const te::Dims os = ctx.out_dims(0);  // the input's, k along the axis
  auto along = [axis](const Indices& o, Expr i) {
    Indices r = o;
    r[axis] = i;
    return r;
  };
  te::Tensor rk = ctx.materialize(te::reduce("rank", xd, {len}, te::ReduceKind::Sum, tir::Int(64),
                                             [=](const Indices& o, const Indices& r) {
                                               Expr xi = x(o), xj = x(along(o, r[0]));
                                               Expr better = largest ? xj > xi : xj < xi;
                                               Expr before = tir::EQ::make(xj, xi) && r[0] < o[axis];
                                               return tir::select(better || before, Expr(1), Expr(0));
                                             }));
  te::Tensor idx = ctx.materialize(te::reduce("index", os, {len}, te::ReduceKind::Min, tir::Int(64),
                                              [=](const Indices& o, const Indices& r) {
                                                return tir::select(tir::EQ::make(rk(along(o, r[0])), o[axis]), r[0], len);
                                              },
                                              len));
  auto safe = [=](const Indices& o) { return tir::clamp(idx(o), Expr(0), len - Expr(1)); };
  ctx.set_output(0, te::compute("values", os, [=](const Indices& o) { return x(along(o, safe(o))); }));
  if (n.outputs.size() > 1 && n.outputs[1] >= 0)
    ctx.set_output(1, te::compute("indices", os, [=](const Indices& o) { return safe(o); }));
}

Indices input_index(const ReduceAxes& ax, const Indices& o, const Indices& r) {
  Indices idx;
  if (ax.run_time) {
    for (size_t d = 0; d < ax.reduced.size(); d++) idx.push_back(o[d] + r[d]);
    return idx;
  }
  size_t oi = 0, ri = 0;
  for (size_t d = 0; d < ax.reduced.size(); d++) {
    if (ax.reduced[d]) {
      idx.push_back(r[ri++]);
      if (ax.keepdims) oi++;
    } else {
      idx.push_back(o[oi++]);
    }
  }
  return idx;
}

}  // namespace kiln::lower
