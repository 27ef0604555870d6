// Data-movement operators whose output positions map to input positions:
// Gather, GatherElements, GatherND, Scatter(Elements), ScatterND,
// TensorScatter, OneHot, Slice, Expand, Tile, Pad, Split, DepthToSpace,
// SpaceToDepth, Trilu, EyeLike, ConstantOfShape, Range.
//
// Operands that only decide a shape (Expand's shape, Tile's repeats,
// Split's sizes) are never read: the output's dimensions (static, or
// expressions of run-time ones, import/infer_dims.h) say it all. Operands
// that decide positions (Slice's starts and steps, Pad's pads) must be
// constants, or shapes computed from run-time dimensions (symbolic values),
// or are read by a first kernel of the node (Slice's, or Pad's axes, read
// at run time: lower_slice_run_time, pad_begins_run_time).
// Indices read at run time (Gather) are wrapped for negatives and clamped
// into range, so a bad index never reads outside the tensor.
//
// Scatters are written as formulas over the output: element i takes the
// last update whose (wrapped, clamped) index lands on i, else the data
// value; this is a reduction over the updates, correct and race-free
// (quadratic, which is fine for the sizes these operators see).
#include <algorithm>
#include <cstring>
#include <functional>

#include "lower/op_lowering.h"
#include "support/diagnostics.h"
#include "tir/simplify.h"

namespace kiln::lower {

void lower_gather(OpContext& ctx) {
  te::Tensor data = ctx.in(0), ind = ctx.in(1);
  int64_t axis = normalize_axis(ctx, ctx.node().attr_int("axis", 0), (int64_t)data.ndim());
  int64_t q = (int64_t)ind.ndim();
  ctx.set_output(0, te::compute("gather", ctx.out_dims(0), [=](const Indices& o) {
    Indices ii(o.begin() + axis, o.begin() + axis + q);
    Indices di(o.begin(), o.begin() + axis);
    di.push_back(wrap_index(ind(ii), data.dims()[axis]));
    di.insert(di.end(), o.begin() + axis + q, o.end());
    return data(di);
  }));
}

void lower_gather_elements(OpContext& ctx) {
  te::Tensor data = ctx.in(0), ind = ctx.in(1);
  int64_t axis = normalize_axis(ctx, ctx.node().attr_int("axis", 0), (int64_t)data.ndim());
  ctx.set_output(0, te::compute("gather_elements", ctx.out_dims(0), [=](const Indices& o) {
    Indices di = o;
    di[axis] = wrap_index(ind(o), data.dims()[axis]);
    return data(di);
  }));
}

namespace {

// Element k of a small integer buffer, as an index (a kernel reading
// run-time parameters: Slice's bounds, Pad's pads and axes).
Expr load_index(const tir::Buffer& b, const Expr& k) { return tir::Cast::make(tir::Index(), tir::Load::make(b, k)); }

// An axis read at run time: negative counts from the last, then clamped
// into [0, rank) so that no index ever leaves the tensor.
Expr run_time_axis(const Expr& a, int64_t rank) {
  return tir::clamp(tir::select(a < Expr(0), a + Expr(rank), a), Expr(0), Expr(rank - 1));
}

// Dimension `a` (an expression in [0, rank)) of `x`.
Expr extent_at(const te::Dims& x, const Expr& a) {
  Expr extent = Expr(0);
  for (size_t d = x.size(); d-- > 0;) extent = tir::select(tir::EQ::make(a, Expr((int64_t)d)), x[d], extent);
  return extent;
}

// Slice with starts, ends, axes or steps read at run time (import/infer_dims.cpp):
// the node's outputs are [y, one count per dimension (data symbols), params
// int64 [2 * rank]]. A first kernel applies ONNX's rules to the values (a
// negative start or end counts from the end, both clamped into the axis, a
// negative axis from the last; an axis out of range or a step of 0 is taken
// as the nearest valid one, so no index ever leaves the tensor) and writes
// every dimension's length, start and step; the slice reads the latter.
void lower_slice_run_time(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const te::Dims x = ctx.in_dims(0);
  const int64_t rank = (int64_t)x.size();
  const int params = n.outputs.back();
  ctx.emit_tir("slice_params", [&](const OpContext::BindFn& bind) {
    auto read = [&](size_t i) -> std::function<Expr(const Expr&)> {
      if (!ctx.has_input(i)) return nullptr;
      tir::Buffer b = bind(ctx.input(i), Access::Read);
      return [b](const Expr& k) { return load_index(b, k); };
    };
    auto starts = read(1), ends = read(2), axes = read(3), steps = read(4);
    tir::Buffer pb = bind(params, Access::Write);
    std::vector<tir::Buffer> counts;
    for (int64_t d = 0; d < rank; d++) counts.push_back(bind(n.outputs[(size_t)(1 + d)], Access::Write));
    tir::Buffer len = tir::make_buffer("slice_len", tir::Index(), rank, -1);
    std::vector<tir::Stmt> body;
    for (int64_t d = 0; d < rank; d++) {  // untouched dimensions: all of it
      body.push_back(tir::Store::make(pb, Expr(2 * d), Expr(0)));
      body.push_back(tir::Store::make(pb, Expr(2 * d + 1), Expr(1)));
      body.push_back(tir::Store::make(len, Expr(d), x[(size_t)d]));
    }
    Expr k = tir::Var::make(tir::Index(), "slice_k");
    Expr a = run_time_axis(axes ? axes(k) : k, rank);
    Expr extent = extent_at(x, a);  // the axis' size: x's dimension a
    Expr step = steps ? steps(k) : Expr(1);
    step = tir::select(tir::EQ::make(step, Expr(0)), Expr(1), step);
    // A step longer than the axis takes at most one element: clamped to
    // +-(size + 1), so the length arithmetic below cannot overflow.
    step = tir::clamp(step, Expr(0) - extent - Expr(1), extent + Expr(1));
    Expr av = tir::Var::make(tir::Index(), "slice_a"), dv = tir::Var::make(tir::Index(), "slice_d"),
         sv = tir::Var::make(tir::Index(), "slice_step");
    auto from_end = [&](const Expr& v) { return tir::select(v < Expr(0), v + dv, v); };
    // Forward: start and end in [0, d]; backward: in [-1, d - 1].
    Expr fs = tir::clamp(from_end(starts(k)), Expr(0), dv), fe = tir::clamp(from_end(ends(k)), Expr(0), dv);
    Expr bs = tir::clamp(from_end(starts(k)), Expr(-1), dv - Expr(1)),
         be = tir::clamp(from_end(ends(k)), Expr(-1), dv - Expr(1));
    Expr forward = sv > Expr(0);
    Expr length = tir::select(forward, tir::max((fe - fs + sv - Expr(1)) / sv, Expr(0)),
                              tir::max((bs - be - sv - Expr(1)) / (Expr(0) - sv), Expr(0)));
    tir::Stmt one = tir::Block::make({tir::Store::make(pb, Expr(2) * av, tir::select(forward, fs, tir::max(bs, Expr(0)))),
                                      tir::Store::make(pb, Expr(2) * av + Expr(1), sv),
                                      tir::Store::make(len, av, length)});
    one = tir::LetStmt::make(av, a, tir::LetStmt::make(dv, extent, tir::LetStmt::make(sv, step, one)));
    body.push_back(tir::For::make(k, Expr(0), ctx.in_dims(1).at(0), tir::ForKind::Serial, one));  // starts' run-time length
    for (int64_t d = 0; d < rank; d++) body.push_back(tir::Store::make(counts[(size_t)d], Expr(0), tir::Load::make(len, Expr(d))));
    return tir::Allocate::make(len, tir::Block::make(body));
  });
  te::Tensor xt = ctx.in(0), p = ctx.tensor_of(params);
  ctx.set_output(0, te::compute("slice", ctx.out_dims(0), [=](const Indices& o) {
    Indices ii;
    for (int64_t d = 0; d < rank; d++)
      ii.push_back(tir::clamp(p({Expr(2 * d)}) + o[d] * p({Expr(2 * d + 1)}), Expr(0), x[(size_t)d] - Expr(1)));
    return xt(ii);
  }));
}

}  // namespace

void lower_slice(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0);
  int64_t rank = (int64_t)x.ndim();
  if (n.outputs.size() == (size_t)(2 + rank)) return lower_slice_run_time(ctx);
  std::vector<Expr> starts;
  std::vector<int64_t> axes, steps;
  if (ctx.graph.opset < 10) {
    for (int64_t s : n.attr_ints("starts", {})) starts.push_back(Expr(s));
    axes = n.attr_ints("axes", {});
  } else {
    starts = int_exprs(ctx, 1, "Slice starts");
    if (ctx.has_input(3)) axes = const_ints(ctx, 3, "Slice axes");
    if (ctx.has_input(4)) steps = const_ints(ctx, 4, "Slice steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); i++) axes.push_back((int64_t)i);
  if (steps.empty()) steps.assign(starts.size(), 1);
  user_assert(axes.size() == starts.size() && steps.size() == starts.size())
      << n.describe() << ": starts, ends, axes and steps differ in length";
  std::vector<Expr> begin(rank, Expr(0));
  std::vector<int64_t> step(rank, 1);
  for (size_t i = 0; i < axes.size(); i++) {
    int64_t a = normalize_axis(ctx, axes[i], rank);
    Expr d = x.dims()[a];
    user_assert(steps[i] != 0) << n.describe() << ": a step is zero";
    // A negative start counts from the end (a symbolic start is a shape: never negative).
    auto c = tir::as_const_int(starts[i]);
    Expr s = c && *c < 0 ? d + starts[i] : starts[i];
    s = steps[i] > 0 ? tir::clamp(s, Expr(0), d) : tir::clamp(s, Expr(0), d - Expr(1));
    begin[a] = tir::simplify(s);
    step[a] = steps[i];
  }
  ctx.set_output(0, te::compute("slice", ctx.out_dims(0), [=](const Indices& o) {
    Indices ii;
    for (int64_t d = 0; d < rank; d++) ii.push_back(begin[d] + o[d] * Expr(step[d]));
    return x(ii);
  }));
}

void lower_expand(OpContext& ctx) {
  te::Tensor x = ctx.in(0);
  ctx.set_output(0, te::compute("expand", ctx.out_dims(0), [=](const Indices& o) { return x(broadcast_index(x.dims(), o)); }));
}

void lower_tile(OpContext& ctx) {
  te::Tensor x = ctx.in(0);
  ctx.set_output(0, te::compute("tile", ctx.out_dims(0), [=](const Indices& o) {
    Indices ii;
    for (size_t d = 0; d < o.size(); d++) ii.push_back(o[d] % x.dims()[d]);
    return x(ii);
  }));
}

namespace {

// Pad with axes read at run time (import/infer_dims.cpp): the node's
// outputs are [y, one length per dimension (data symbols), begins int64
// [rank]]. A first kernel reads the pads and axes (a negative axis counts
// from the last; one out of range is taken as the nearest valid one) and
// writes every dimension's length (at least 0) and begin pad; the result
// is each dimension's begin pad, read from the latter.
std::vector<Expr> pad_begins_run_time(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const te::Dims x = ctx.in_dims(0);
  const int64_t rank = (int64_t)x.size();
  const int params = n.outputs.back();
  ctx.emit_tir("pad_params", [&](const OpContext::BindFn& bind) {
    tir::Buffer pads = bind(ctx.input(1), Access::Read), axes = bind(ctx.input(3), Access::Read);
    tir::Buffer pb = bind(params, Access::Write);
    tir::Buffer len = tir::make_buffer("pad_len", tir::Index(), rank, -1);
    std::vector<tir::Stmt> body;
    for (int64_t d = 0; d < rank; d++) {  // dimensions no axis names: unpadded
      body.push_back(tir::Store::make(pb, Expr(d), Expr(0)));
      body.push_back(tir::Store::make(len, Expr(d), x[(size_t)d]));
    }
    Expr k = tir::Var::make(tir::Index(), "pad_k"), av = tir::Var::make(tir::Index(), "pad_a");
    Expr count = ctx.in_dims(3).at(0);  // the axes' run-time length; pads has twice as many
    Expr begin = load_index(pads, k), end = load_index(pads, k + count);
    tir::Stmt one = tir::Block::make({tir::Store::make(pb, av, begin),
                                      tir::Store::make(len, av, tir::max(extent_at(x, av) + begin + end, Expr(0)))});
    one = tir::LetStmt::make(av, run_time_axis(load_index(axes, k), rank), one);
    body.push_back(tir::For::make(k, Expr(0), count, tir::ForKind::Serial, one));
    for (int64_t d = 0; d < rank; d++)
      body.push_back(tir::Store::make(bind(n.outputs[(size_t)(1 + d)], Access::Write), Expr(0), tir::Load::make(len, Expr(d))));
    return tir::Allocate::make(len, tir::Block::make(body));
  });
  te::Tensor p = ctx.tensor_of(params);
  std::vector<Expr> begins;
  for (int64_t d = 0; d < rank; d++) begins.push_back(p({Expr(d)}));
  return begins;
}

}  // namespace

void lower_pad(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0);
  int64_t rank = (int64_t)x.ndim();
  std::string mode = n.attr_string("mode", "constant");
  std::vector<Expr> pads;
  const bool run_time_axes = ctx.graph.opset >= 18 && ctx.has_input(3) && n.outputs.size() == (size_t)(2 + rank);
  if (ctx.graph.opset < 11)
    for (int64_t p : n.attr_ints("pads", {})) pads.push_back(Expr(p));
  else if (!run_time_axes)
    pads = int_exprs(ctx, 1, "Pad pads");
  std::vector<Expr> begin(rank, Expr(0));
  if (run_time_axes) {
    begin = pad_begins_run_time(ctx);
  } else if (ctx.graph.opset >= 18 && ctx.has_input(3)) {  // axes
    std::vector<int64_t> axes = const_ints(ctx, 3, "Pad axes");
    user_assert(pads.size() == 2 * axes.size()) << n.describe() << ": pads must have 2 entries per axis";
    for (size_t i = 0; i < axes.size(); i++) begin[normalize_axis(ctx, axes[i], rank)] = pads[i];
  } else {
    user_assert((int64_t)pads.size() == 2 * rank) << n.describe() << ": pads must have 2 entries per dimension";
    for (int64_t d = 0; d < rank; d++) begin[d] = pads[d];
  }
  Expr value = tir::make_const(x.dtype(), 0);
  if (ctx.graph.opset < 11) value = tir::make_const(x.dtype(), n.attr_float("value", 0.0));
  else if (ctx.has_input(2)) {
    const graph::Value& v = ctx.value(ctx.input(2));
    if (v.is_constant()) value = tir::make_const(x.dtype(), v.const_at(0));
    else {
      te::Tensor vt = ctx.in(2);
      value = vt(Indices(vt.ndim(), Expr(0)));
    }
  }
  ctx.set_output(0, te::compute("pad", ctx.out_dims(0), [=](const Indices& o) {
    Indices ii;
    for (int64_t d = 0; d < rank; d++) {
      Expr i = o[d] - begin[d];
      Expr e = x.dims()[d];
      auto ce = tir::as_const_int(e);
      if (mode == "edge") i = tir::clamp(i, Expr(0), e - Expr(1));
      else if (mode == "reflect" && (!ce || *ce > 1)) {
        // Reflect without repeating the edge: period 2(e-1) (a run-time extent of 1: no reflection).
        Expr period = tir::max(Expr(2) * (e - Expr(1)), Expr(1));
        Expr p = i % period;
        i = tir::select(p < e, p, period - p);
      } else if (mode == "wrap") i = i % e;
      ii.push_back(i);
    }
    if (mode == "constant") return padded_read(x, ii, value);
    user_assert(mode == "edge" || mode == "reflect" || mode == "wrap") << n.describe() << ": unknown mode '" << mode << "'";
    Indices safe;
    for (int64_t d = 0; d < rank; d++) safe.push_back(tir::clamp(ii[d], Expr(0), x.dims()[d] - Expr(1)));
    return x(safe);
  }));
}

void lower_split(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0);
  int64_t axis = normalize_axis(ctx, n.attr_int("axis", 0), (int64_t)x.ndim());
  Expr offset = Expr(0);
  for (size_t i = 0; i < n.outputs.size(); i++) {
    if (n.outputs[i] < 0) continue;
    const te::Dims os = ctx.out_dims(i);
    Expr off = offset;
    ctx.set_output(i, te::compute("split", os, [=](const Indices& o) {
      Indices ii = o;
      ii[axis] = o[axis] + off;
      return x(ii);
    }));
    offset = tir::simplify(offset + os[axis]);
  }
  auto total = tir::as_const_int(offset), have = tir::as_const_int(x.dims()[axis]);
  user_assert(!total || !have || *total <= *have) << n.describe() << ": outputs are larger than the input";
}

// DepthToSpace (DCR or CRD) and SpaceToDepth on NCHW.
void lower_depth_space(OpContext& ctx) {
  const bool to_space = ctx.op() == graph::Op::DepthToSpace;
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0);
  user_assert(x.ndim() == 4) << n.describe() << ": input must be 4-D";
  int64_t b = n.attr_int("blocksize", 0);
  user_assert(b >= 1) << n.describe() << ": blocksize must be positive";
  bool crd = n.attr_string("mode", "DCR") == "CRD";
  const te::Dims os = ctx.out_dims(0);
  int64_t oc = to_space ? static_extent(os[1], "the output channel count") : 0;
  int64_t C = to_space ? 0 : static_extent(x.dims()[1], "the channel count");
  ctx.set_output(0, te::compute(n.op, os, [=](const Indices& o) {
    if (to_space) {  // out[n, c, h, w] = x[n, channel(c, h % b, w % b), h / b, w / b]
      Expr bh = o[2] % Expr(b), bw = o[3] % Expr(b);
      Expr c = crd ? (o[1] * Expr(b) + bh) * Expr(b) + bw : (bh * Expr(b) + bw) * Expr(oc) + o[1];
      return x({o[0], c, o[2] / Expr(b), o[3] / Expr(b)});
    }
    // SpaceToDepth: out[n, (bh * b + bw) * C + c, h, w] = x[n, c, h * b + bh, w * b + bw]; with
    // mode CRD (opset 25) out[n, c * b * b + bh * b + bw, h, w].
    Expr c = crd ? o[1] / Expr(b * b) : o[1] % Expr(C), blk = crd ? o[1] % Expr(b * b) : o[1] / Expr(C);
    return x({o[0], c, o[2] * Expr(b) + blk / Expr(b), o[3] * Expr(b) + blk % Expr(b)});
  }));
}

void lower_trilu(OpContext& ctx) {
  te::Tensor x = ctx.in(0);
  // k: a constant, or read by the kernel at run time (it moves the diagonal,
  // not the shape).
  Expr kdiag = Expr(0);
  if (ctx.has_input(1)) {
    const graph::Value& kv = ctx.value(ctx.input(1));
    user_assert(kv.elements() == 1) << ctx.node().describe() << ": k must hold one value";
    if (kv.is_constant()) {
      kdiag = Expr(kv.const_int_at(0));
    } else {
      te::Tensor k = ctx.in(1);
      kdiag = tir::Cast::make(tir::Index(), k(Indices(k.ndim(), Expr(0))));
    }
  }
  bool upper = ctx.node().attr_int("upper", 1) != 0;
  size_t r = x.ndim();
  ctx.set_output(0, te::compute("trilu", x.dims(), [=](const Indices& o) {
    Expr d = o[r - 1] - o[r - 2];  // column - row
    Expr keep = upper ? (d >= kdiag) : (d <= kdiag);
    return tir::select(keep, x(o), tir::make_const(x.dtype(), 0));
  }));
}

// ReverseSequence: along time_axis, the first sequence_lens[b] elements of
// each batch entry b (along batch_axis) reversed, the rest kept; a length
// read at run time is clamped into [0, the time axis] (no read leaves x).
void lower_reverse_sequence(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0), lens = ctx.in(1);
  const te::Dims xd = ctx.in_dims(0);
  int64_t batch = normalize_axis(ctx, n.attr_int("batch_axis", 1), (int64_t)xd.size());
  int64_t time = normalize_axis(ctx, n.attr_int("time_axis", 0), (int64_t)xd.size());
  user_assert(batch != time && xd.size() >= 2) << n.describe() << ": batch_axis and time_axis must differ";
  ctx.set_output(0, te::compute("reverse_sequence", xd, [=](const Indices& o) {
    Expr len = tir::clamp(tir::Cast::make(tir::Index(), lens({o[(size_t)batch]})), Expr(0), xd[(size_t)time]);
    Indices i = o;
    i[(size_t)time] = tir::select(o[(size_t)time] < len, len - Expr(1) - o[(size_t)time], o[(size_t)time]);
    return x(i);
  }));
}

void lower_eye_like(OpContext& ctx) {
  int64_t kdiag = ctx.node().attr_int("k", 0);
  graph::DType dt = ctx.value(ctx.output(0)).dtype;
  tir::Type t = compute_type(dt);
  ctx.set_output(0, te::compute("eyelike", ctx.out_dims(0), [=](const Indices& o) {
    return tir::select(tir::EQ::make(o[1] - o[0], Expr(kdiag)), tir::make_const(t, 1), tir::make_const(t, 0));
  }));
}

void lower_constant_of_shape(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  graph::DType dt = ctx.value(ctx.output(0)).dtype;
  double v = 0;
  if (n.has_attr("value")) {
    const graph::Value& c = ctx.value(n.attrs.at("value").tensor);
    user_assert(c.elements() == 1) << n.describe() << ": value must hold one element";
    v = c.const_at(0);
  }
  tir::Type t = compute_type(dt);
  ctx.set_output(0, te::compute("constant_of_shape", ctx.out_dims(0), [=](const Indices&) { return tir::make_const(t, v); }));
}

void lower_range(OpContext& ctx) {
  graph::DType dt = ctx.value(ctx.output(0)).dtype;
  tir::Type t = graph::dtype_to_tir(dt);
  Expr start = scalar_input(ctx, 0, t), delta = scalar_input(ctx, 2, t);
  ctx.set_output(0, te::compute("range", ctx.out_dims(0), [=](const Indices& o) {
    return start + tir::cast(t, o[0]) * delta;
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
  const te::Dims dd = ctx.in_dims(0);
  int64_t b = n.attr_int("batch_dims", 0);
  int64_t q = (int64_t)ind.ndim(), m = static_extent(ctx.in_dims(1).back(), "the index length (last dimension of the indices)");
  ctx.set_output(0, te::compute("gather_nd", ctx.out_dims(0), [=](const Indices& o) {
    // o = batch (b) + index-prefix (q - 1 - b) + slice of data after b + m dims
    Indices di(o.begin(), o.begin() + b);
    Indices prefix(o.begin(), o.begin() + (q - 1));
    for (int64_t k = 0; k < m; k++) {
      Indices ii = prefix;
      ii.push_back(Expr(k));
      di.push_back(wrap_index(ind(ii), dd[(size_t)(b + k)]));
    }
    di.insert(di.end(), o.begin() + (q - 1), o.end());
    return data(di);
  }));
}

namespace {

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
  if (mode == "max" || mode == "min") {  // the data's value: neutral where an update does not land
    const bool is_max = mode == "max";
    te::Tensor acc = te::reduce("acc", os, ushape, is_max ? te::ReduceKind::Max : te::ReduceKind::Min, t,
                                [=](const Indices& oo, const Indices& u) {
                                  return tir::select(hit(oo, u), value(oo, u), data(oo));
                                });
    return is_max ? tir::max(data(o), acc(o)) : tir::min(data(o), acc(o));
  }
  bool add = mode == "add";
  te::Tensor acc = te::reduce("acc", os, ushape, add ? te::ReduceKind::Sum : te::ReduceKind::Prod, t,
                              [=](const Indices& oo, const Indices& u) {
                                return tir::select(hit(oo, u), value(oo, u), tir::make_const(t, add ? 0 : 1));
                              });
  return add ? data(o) + acc(o) : data(o) * acc(o);
}

// ONNX's scatter reductions (ScatterElements, ScatterND).
void check_scatter_reduction(const graph::Node& n, const std::string& mode) {
  user_assert(mode == "none" || mode == "add" || mode == "mul" || mode == "max" || mode == "min")
      << n.describe() << ": reduction '" << mode << "' is not one of none, add, mul, max, min";
}

}  // namespace

void lower_scatter_elements(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Tensor data = ctx.in(0), ind = ctx.in(1), upd = ctx.in(2);
  int64_t axis = normalize_axis(ctx, n.attr_int("axis", 0), (int64_t)data.ndim());
  std::string mode = n.attr_string("reduction", "none");
  check_scatter_reduction(n, mode);
  graph::Shape us = upd.shape();
  ctx.set_output(0, te::compute("scatter_elements", data.dims(), [=](const Indices& o) {
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
  check_scatter_reduction(n, mode);
  int64_t k = ind.shape().back();
  graph::Shape prefix(ind.shape().begin(), ind.shape().end() - 1);
  ctx.set_output(0, te::compute("scatter_nd", data.dims(), [=](const Indices& o) {
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

// TensorScatter (opset 24, a KV-cache update): batch b's update rows
// 0..S-1 along `axis` go to cache rows write_indices[b] + j (mode linear;
// rows past the cache are dropped), or those rows modulo the cache's length
// (circular). Each output row asks which update row lands on it, if any.
void lower_tensor_scatter(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Tensor past = ctx.in(0), upd = ctx.in(1);
  const int64_t rank = (int64_t)past.ndim();
  const int64_t axis = normalize_axis(ctx, n.attr_int("axis", -2), rank);
  user_assert(axis > 0) << n.describe() << ": axis must not be the batch dimension (0)";
  const std::string mode = n.attr_string("mode", "linear");
  user_assert(mode == "linear" || mode == "circular") << n.describe() << ": mode '" << mode
                                                      << "' is not one of linear, circular";
  const bool has_idx = ctx.has_input(2);
  te::Tensor idx = has_idx ? ctx.in(2) : past;
  const Expr len = past.dims()[(size_t)axis], seq = upd.dims()[(size_t)axis];
  ctx.set_output(0, te::compute("tensor_scatter", past.dims(), [=](const Indices& o) {
    Expr w = has_idx ? tir::Cast::make(tir::Index(), idx({o[0]})) : Expr(0);
    Expr j = o[(size_t)axis] - w;
    if (mode == "circular") j = j % len;  // floor modulo: in [0, len)
    Expr hit = Expr(0) <= j && j < seq;
    Indices ui = o;
    ui[(size_t)axis] = tir::clamp(j, Expr(0), seq - Expr(1));
    return tir::select(hit, upd(ui), past(o));
  }));
}

}  // namespace kiln::lower
