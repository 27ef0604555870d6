// Operators whose output element gathers from a data-dependent set of input
// positions: CumSum, OneHot, GatherND, ScatterElements, ScatterND, plus
// Round and CastLike.
//
// Scatters are written as formulas over the output: element i takes the
// last update whose (wrapped, clamped) index lands on i, else the data
// value; this is a reduction over the updates, correct and race-free
// (quadratic, which is fine for the sizes these operators see).
#include <functional>

#include "lower/op_lowering.h"
#include "support/diagnostics.h"

namespace kiln::lower {
namespace {


void lower_cumsum(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0);
  const graph::Value& av = ctx.value(ctx.input(1));
  user_assert(av.is_constant()) << n.describe() << ": axis must be a constant";
  int64_t axis = normalize_axis(ctx, av.const_int_at(0), (int64_t)x.ndim());
  bool exclusive = n.attr_int("exclusive", 0) != 0, reverse = n.attr_int("reverse", 0) != 0;
  int64_t len = x.shape()[axis];
  ctx.set_output(0, te::reduce("cumsum", x.shape(), {len}, te::ReduceKind::Sum, x.dtype(), [=](const Indices& o, const Indices& r) {
    Expr j = r[0], i = o[axis];
    Expr take = reverse ? (exclusive ? j > i : j >= i) : (exclusive ? j < i : j <= i);
    Indices xi = o;
    xi[axis] = j;
    return tir::select(take, x(xi), tir::make_const(x.dtype(), 0));
  }));
}

void lower_onehot(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Tensor ind = ctx.in(0), values = ctx.in(2);
  const graph::Shape os = ctx.out_shape(0);
  int64_t axis = normalize_axis(ctx, n.attr_int("axis", -1), (int64_t)os.size());
  int64_t depth = os[axis];
  ctx.set_output(0, te::compute("onehot", os, [=](const Indices& o) {
    Indices ii(o.begin(), o.begin() + axis);
    ii.insert(ii.end(), o.begin() + axis + 1, o.end());
    Expr i = tir::cast(tir::Index(), ind(ii));
    i = tir::select(i < Expr(0), i + Expr(depth), i);
    return tir::select(tir::EQ::make(i, o[axis]), values({Expr(1)}), values({Expr(0)}));
  }));
}

void lower_gather_nd(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Tensor data = ctx.in(0), ind = ctx.in(1);
  int64_t b = n.attr_int("batch_dims", 0);
  int64_t q = (int64_t)ind.ndim(), m = ind.shape().back();
  ctx.set_output(0, te::compute("gather_nd", ctx.out_shape(0), [=](const Indices& o) {
    // o = batch (b) + index-prefix (q - 1 - b) + slice of data after b + m dims
    Indices di(o.begin(), o.begin() + b);
    Indices prefix(o.begin(), o.begin() + (q - 1));
    for (int64_t k = 0; k < m; k++) {
      Indices ii = prefix;
      ii.push_back(Expr(k));
      di.push_back(wrap_index(ind(ii), data.shape()[b + k]));
    }
    di.insert(di.end(), o.begin() + (q - 1), o.end());
    return data(di);
  }));
}

Indices unflatten(Expr flat, const graph::Shape& shape) {
  Indices idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % Expr(shape[d]);
    flat = flat / Expr(shape[d]);
  }
  return idx;
}

// The scatter result at o, given which update positions (over `ushape`)
// land on o (`hit`) and the update value at each (`value`).
Expr scatter_value(const std::string& mode, const te::Tensor& data, const Indices& o, const graph::Shape& ushape,
                   const std::function<Expr(const Indices&, const Indices&)>& hit,
                   const std::function<Expr(const Indices&, const Indices&)>& value) {
  tir::Type t = data.dtype();
  graph::Shape os = data.shape();
  if (mode == "none") {  // the last update that lands here wins
    te::Tensor last = te::reduce("last", os, ushape, te::ReduceKind::Max, tir::Int(64), [=](const Indices& oo, const Indices& u) {
      return tir::select(hit(oo, u), te::flat_index(ushape, u), Expr(-1));
    }, Expr(-1));
    Expr l = last(o);
    return tir::select(Expr(0) <= l, value(o, unflatten(tir::max(l, Expr(0)), ushape)), data(o));
  }
  bool add = mode == "add";
  te::Tensor acc = te::reduce("acc", os, ushape, add ? te::ReduceKind::Sum : te::ReduceKind::Prod, t,
                              [=](const Indices& oo, const Indices& u) {
                                return tir::select(hit(oo, u), value(oo, u), tir::make_const(t, add ? 0 : 1));
                              });
  return add ? data(o) + acc(o) : data(o) * acc(o);
}

void lower_scatter_elements(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Tensor data = ctx.in(0), ind = ctx.in(1), upd = ctx.in(2);
  int64_t axis = normalize_axis(ctx, n.attr_int("axis", 0), (int64_t)data.ndim());
  std::string mode = n.attr_string("reduction", "none");
  user_assert(mode == "none" || mode == "add" || mode == "mul") << n.describe() << ": reduction '" << mode << "' is not supported";
  graph::Shape us = upd.shape();
  ctx.set_output(0, te::compute("scatter_elements", data.shape(), [=](const Indices& o) {
    auto hit = [=](const Indices& oo, const Indices& u) {
      Expr same = tir::EQ::make(wrap_index(ind(u), data.shape()[axis]), oo[axis]);
      for (size_t d = 0; d < u.size(); d++)
        if ((int64_t)d != axis) same = same && tir::EQ::make(u[d], oo[d]);
      return same;
    };
    auto value = [=](const Indices&, const Indices& u) { return upd(u); };
    return scatter_value(mode, data, o, us, hit, value);
  }));
}

void lower_scatter_nd(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Tensor data = ctx.in(0), ind = ctx.in(1), upd = ctx.in(2);
  std::string mode = n.attr_string("reduction", "none");
  user_assert(mode == "none" || mode == "add" || mode == "mul") << n.describe() << ": reduction '" << mode << "' is not supported";
  int64_t k = ind.shape().back();
  graph::Shape prefix(ind.shape().begin(), ind.shape().end() - 1);
  ctx.set_output(0, te::compute("scatter_nd", data.shape(), [=](const Indices& o) {
    auto hit = [=](const Indices& oo, const Indices& u) {
      Expr same = tir::IntImm::make(tir::Bool(), 1);
      for (int64_t j = 0; j < k; j++) {
        Indices ii = u;
        ii.push_back(Expr(j));
        same = same && tir::EQ::make(wrap_index(ind(ii), data.shape()[j]), oo[j]);
      }
      return same;
    };
    auto value = [=](const Indices& oo, const Indices& u) {
      Indices ui = u;
      ui.insert(ui.end(), oo.begin() + k, oo.end());
      return upd(ui);
    };
    return scatter_value(mode, data, o, prefix, hit, value);
  }));
}

}  // namespace

void register_scan_ops(std::map<std::string, OpLowering>& r) {
  r["CumSum"] = lower_cumsum;
  r["OneHot"] = lower_onehot;
  r["GatherND"] = lower_gather_nd;
  r["ScatterElements"] = lower_scatter_elements;
  r["Scatter"] = lower_scatter_elements;
  r["ScatterND"] = lower_scatter_nd;
  r["Round"] = [](OpContext& c) {
    c.require_float();
    te::Tensor x = c.in(0);
    c.set_output(0, te::compute("round", x.shape(), [x](const Indices& i) { return round_half_even(x(i)); }));
  };
  r["CastLike"] = [](OpContext& c) {
    graph::DType to = c.value(c.output(0)).dtype;
    tir::Type t = to == graph::DType::Bool ? tir::Bool() : graph::dtype_to_tir(to);
    te::Tensor x = c.in(0);
    bool from_bool = c.in_dtype(0) == graph::DType::Bool;
    c.set_output(0, te::compute("castlike", x.shape(), [=](const Indices& i) {
      Expr v = x(i);
      if (from_bool && !t.is_bool()) return tir::cast(t, tir::cast(tir::Bool(), v));
      return tir::cast(t, v);
    }));
  };
}

}  // namespace kiln::lower
