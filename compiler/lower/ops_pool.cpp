// MaxPool, AveragePool, LpPool and their Global forms (NCHW, 1-D to 3-D).
// MaxPool, AveragePool and the Global forms also take the blocked layout
// (kiln_layout=NCHWc, graph/pass_layout.cpp): [N, C/c, H, W, c], the last
// dimension being channels within a block, like a second channel index.
// LpPool: y = (sum over the window of |x|^p)^(1/p), padding contributing 0.
//
// Window positions outside the input (padding, or past the end with
// ceil_mode) never contribute to a max. For an average, count_include_pad=1
// counts positions inside the padded extent, otherwise only real ones.
//
// MaxPool's Indices: the flat index of each max (a second, Min reduction of
// the indices where the input equals it). MaxUnpool scatters values back
// to such indices.
//
// RoiAlign: per region of interest and channel, each output bin averages
// (or takes the max of) bilinear samples on a grid, as ONNX Runtime does;
// a hand-written kernel, since the grid's size may depend on the region.
#include <cmath>
#include <limits>

#include "lower/op_lowering.h"
#include "lower/serial_tir.h"
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
  const bool with_indices = is_max && n.outputs.size() > 1 && n.outputs[1] >= 0;
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
  const bool column_major = n.attr_int("storage_order", 0) != 0;  // (only how Indices number the elements)
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
    if (!with_indices) return;
    // Indices: the flat index in x of the first (row-major window order)
    // element equal to the max, numbered over the whole tensor, the spatial
    // dimensions row-major or, with storage_order = 1, column-major (ONNX
    // Runtime's numbering). (The layout pass never blocks a node with two outputs.)
    user_assert(!blocked && ctx.value(ctx.output(1)).dtype == graph::DType::I64)
        << n.describe() << ": Indices must be int64";
    te::Tensor y = ctx.tensor_of(ctx.output(0));
    const tir::Type i64 = tir::Int(64);
    // The first maximum in window order is the least row-major index; a
    // column-major Indices renumbers that element afterwards (the least
    // column-major index may be another, tied, element).
    Expr spatial_size = Expr(1);
    for (size_t i = 0; i < k; i++) spatial_size = spatial_size * xs[2 + i];
    te::Tensor first = te::reduce("maxpool_index", ctx.out_dims(1), kernel, te::ReduceKind::Min, i64,
                                  [=](const Indices& o, const Indices& r) {
      Indices p = positions(o, r);
      Expr inside, spatial = Expr(0), step = Expr(1);
      for (size_t i = 0; i < k; i++) {
        Expr in = p[i] >= Expr(0) && p[i] < xs[2 + i];
        inside = inside.defined() ? (inside && in) : in;
      }
      for (size_t i = k; i-- > 0;) spatial = spatial + p[i] * step, step = step * xs[2 + i];
      Expr flat = (o[0] * xs[1] + o[1]) * spatial_size + spatial;
      Expr hit = inside && tir::EQ::make(padded_read(x, at(o, r), lowest), y(o));
      return select(hit, tir::cast(i64, flat), Expr(std::numeric_limits<int64_t>::max()));
    });
    if (!column_major) {
      ctx.set_output(1, first);
      return;
    }
    ctx.set_output(1, te::compute("maxpool_index_cm", ctx.out_dims(1), [=](const Indices& o) {
      Expr f = first(o), plane = f / spatial_size, rest = f % spatial_size, cm = Expr(0), step = Expr(1);
      std::vector<Expr> c(k);
      for (size_t i = k; i-- > 0;) c[i] = rest % xs[2 + i], rest = rest / xs[2 + i];
      for (size_t i = 0; i < k; i++) cm = cm + c[i] * step, step = step * xs[2 + i];
      return plane * spatial_size + cm;
    }));
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

// RoiAlign (opsets 10, 16): X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2),
// batch_indices [R] -> [R, C, output_height, output_width]. One workgroup per
// region and channel. A bin of h x w (the region over the output size)
// samples a grid of sampling_ratio^2 points, or ceil(h / output_height) x
// ceil(w / output_width) when sampling_ratio is 0 (capped at kMaxGrid per
// side, so a huge or NaN region cannot make a run take forever). A sample
// outside [-1, H] x [-1, W] (or NaN) contributes 0; one inside is clamped
// to the map and interpolated bilinearly. avg: the sum over the count of
// samples; max: the largest weighted corner of any sample (ONNX Runtime's
// definition). A batch index outside [0, N), or an empty map, gives zeros.
void lower_roi_align(OpContext& ctx) {
  using namespace serial;  // NOLINT: the builders are this kernel's vocabulary
  constexpr int64_t kMaxGrid = 1024;
  const graph::Node& n = ctx.node();
  user_assert(ctx.in_dtype(0) == graph::DType::F32 && ctx.in_dtype(1) == graph::DType::F32)
      << n.describe() << ": kilnc supports RoiAlign on float32 X and rois only so far";
  user_assert(ctx.in_dtype(2) == graph::DType::I64) << n.describe() << ": batch_indices must be int64";
  const graph::Shape x = ctx.in_shape(0), rois = ctx.in_shape(1), bi = ctx.in_shape(2), y = ctx.out_shape(0);
  user_assert(x.size() == 4 && rois.size() == 2 && rois[1] == 4 && bi.size() == 1 && bi[0] == rois[0])
      << n.describe() << ": expects X [N, C, H, W], rois [R, 4] and batch_indices [R]";
  const int64_t N = x[0], C = x[1], H = x[2], W = x[3], R = rois[0];
  const int64_t OH = n.attr_int("output_height", 1), OW = n.attr_int("output_width", 1);
  const int64_t ratio = n.attr_int("sampling_ratio", 0);
  const double scale = n.attr_float("spatial_scale", 1.0);
  const std::string mode = n.attr_string("mode", "avg");
  const std::string ctm = n.attr_string("coordinate_transformation_mode", ctx.graph.opset >= 16 ? "half_pixel" : "output_half_pixel");
  user_assert(mode == "avg" || mode == "max") << n.describe() << ": mode must be avg or max, not '" << mode << "'";
  user_assert(ctm == "half_pixel" || ctm == "output_half_pixel")
      << n.describe() << ": coordinate_transformation_mode must be half_pixel or output_half_pixel, not '" << ctm << "'";
  user_assert(OH >= 1 && OW >= 1 && ratio >= 0 && ratio <= kMaxGrid)
      << n.describe() << ": output sizes must be positive and sampling_ratio within [0, " << kMaxGrid << "]";
  user_assert(y == graph::Shape({R, C, OH, OW})) << n.describe() << ": unexpected output shape";
  const bool half_pixel = ctm == "half_pixel", avg = mode == "avg";
  const int in = ctx.input(0), rin = ctx.input(1), bin = ctx.input(2), out = ctx.output(0);
  ctx.emit_tir("roi_align", [&](const OpContext::BindFn& bind) {
    tir::Buffer X = bind(in, Access::Read), Ro = bind(rin, Access::Read), B = bind(bin, Access::Read);
    tir::Buffer Y = bind(out, Access::Write);
    const tir::Type F = tir::Float(32);
    auto f = [&](double v) { return tir::make_const(F, v); };
    auto floor = [&](const Expr& v) { return tir::Call::make(tir::Intrinsic::Floor, {v}); };
    Expr wg = index_var("wg");
    Expr r = wg / Expr(C), c = wg % Expr(C);
    Expr b = index_var("b"), x0 = tir::Var::make(F, "x0"), y0 = tir::Var::make(F, "y0");
    Expr bw = tir::Var::make(F, "bin_w"), bh = tir::Var::make(F, "bin_h");
    Expr gh = index_var("grid_h"), gw = index_var("grid_w");
    Local acc("roi_acc", F), first("roi_first", tir::Index());
    // The grid's size along one side: sampling_ratio, or ceil(extent / bins) in [0, kMaxGrid].
    auto grid = [&](const Expr& extent, int64_t bins) {
      if (ratio > 0) return Expr(ratio);
      Expr g = tir::Call::make(tir::Intrinsic::Ceil, {extent / f((double)bins)});
      return as_index(select(g > f(0), min(g, f((double)kMaxGrid)), f(0)));
    };
    auto coord = [&](int k) {
      Expr v = tir::Load::make(Ro, r * Expr(4) + Expr(k)) * f(scale);
      return half_pixel ? v - f(0.5) : v;
    };
    // One sample at (sy, sx): its value (0 outside the map).
    auto sample = [&](const Expr& sy, const Expr& sx, const std::function<tir::Stmt(const Expr&)>& use) {
      Expr inside = sy >= f(-1) && sy <= f((double)H) && sx >= f(-1) && sx <= f((double)W);
      Expr yc = max(sy, f(0)), xc = max(sx, f(0));
      Expr yl = index_var("yl"), xl = index_var("xl");
      Expr ylo = min(yl, Expr(H - 1)), xlo = min(xl, Expr(W - 1));
      Expr yhi = min(yl + Expr(1), Expr(H - 1)), xhi = min(xl + Expr(1), Expr(W - 1));
      // At the last row (column) the sample sits on it: weight 1 there.
      Expr ly = select(yl >= Expr(H - 1), f(0), yc - tir::cast(F, yl));
      Expr lx = select(xl >= Expr(W - 1), f(0), xc - tir::cast(F, xl));
      Expr base = (b * Expr(C) + c) * Expr(H * W);
      auto at = [&](const Expr& yy, const Expr& xx) { return tir::Load::make(X, base + yy * Expr(W) + xx); };
      Expr w1 = (f(1) - ly) * (f(1) - lx), w2 = (f(1) - ly) * lx, w3 = ly * (f(1) - lx), w4 = ly * lx;
      Expr v1 = w1 * at(ylo, xlo), v2 = w2 * at(ylo, xhi), v3 = w3 * at(yhi, xlo), v4 = w4 * at(yhi, xhi);
      Expr v = avg ? v1 + v2 + v3 + v4 : max(max(v1, v2), max(v3, v4));
      tir::Stmt in_map = tir::LetStmt::make(yl, as_index(floor(yc)), tir::LetStmt::make(xl, as_index(floor(xc)), use(v)));
      return tir::IfThenElse::make(inside, in_map, use(f(0)));
    };
    auto accumulate = [&](const Expr& v) {
      if (avg) return acc.set(acc.get() + v);
      return block({acc.set(select(tir::EQ::make(first.get(), Expr(1)), v, max(acc.get(), v))), first.set(Expr(0))});
    };
    Expr ph = index_var("ph"), pw = index_var("pw"), iy = index_var("iy"), ix = index_var("ix");
    Expr sy = y0 + tir::cast(F, ph) * bh + (tir::cast(F, iy) + f(0.5)) * bh / tir::cast(F, gh);
    Expr sx = x0 + tir::cast(F, pw) * bw + (tir::cast(F, ix) + f(0.5)) * bw / tir::cast(F, gw);
    Expr count = tir::cast(F, max(gh * gw, Expr(1)));
    Expr result = avg ? acc.get() / count : acc.get();
    tir::Stmt per_bin = block({acc.set(f(0)), first.set(Expr(1)), loop(iy, gh, loop(ix, gw, sample(sy, sx, accumulate))),
                               tir::Store::make(Y, ((r * Expr(C) + c) * Expr(OH) + ph) * Expr(OW) + pw, result)});
    tir::Stmt zeros = loop(ph, Expr(OH), loop(pw, Expr(OW), tir::Store::make(Y, ((r * Expr(C) + c) * Expr(OH) + ph) * Expr(OW) + pw, f(0))));
    Expr rw = coord(2) - x0, rh = coord(3) - y0;
    if (!half_pixel) {  // the legacy mode makes regions at least 1 x 1
      rw = max(rw, f(1));
      rh = max(rh, f(1));
    }
    tir::Stmt bins = loop(ph, Expr(OH), loop(pw, Expr(OW), per_bin));
    bins = tir::LetStmt::make(gh, grid(rh, OH), tir::LetStmt::make(gw, grid(rw, OW), bins));
    bins = tir::LetStmt::make(bh, rh / f((double)OH), tir::LetStmt::make(bw, rw / f((double)OW), bins));
    bins = tir::LetStmt::make(y0, coord(1), tir::LetStmt::make(x0, coord(0), bins));
    // (An empty map has nothing to sample: zeros.)
    tir::Stmt body = H && W ? tir::IfThenElse::make(b >= Expr(0) && b < Expr(N), bins, zeros) : zeros;
    body = tir::LetStmt::make(b, tir::Load::make(B, r), body);
    return workgroups(wg, R * C, allocate({acc.b, first.b}, body));
  });
}

// MaxUnpool: y (zeros, of output_shape or the default (in - 1) * stride +
// kernel - pads) gets x[i] at position indices[i] (MaxPool's Indices
// numbering, over the default shape); an index outside y is skipped, a
// repeated one keeps the last. One serial kernel: zero, then scatter.
void lower_max_unpool(OpContext& ctx) {
  using namespace serial;  // NOLINT: the builders are this kernel's vocabulary
  const graph::Node& n = ctx.node();
  user_assert(ctx.in_dtype(0) == graph::DType::F32 || ctx.in_dtype(0) == graph::DType::F64)
      << n.describe() << ": kilnc supports MaxUnpool on float32 and float64 X only so far";
  user_assert(ctx.in_dtype(1) == graph::DType::I64) << n.describe() << ": indices must be int64";
  const graph::Shape x = ctx.in_shape(0), idx = ctx.in_shape(1);
  user_assert(x == idx && x.size() >= 3) << n.describe() << ": X and I must have the same shape, 3-D or more";
  // The output's dimensions: static, or (output_shape read at run time with
  // kilnc --input-value) data symbols, import/infer_dims.cpp's MaxUnpool rule.
  const te::Dims y = ctx.out_dims(0);
  if (ctx.has_input(2) && ctx.value(ctx.input(2)).sym.empty()) {  // a constant output_shape: the output's
    const graph::Shape want = const_ints(ctx, 2, "output_shape");
    user_assert(want == ctx.out_shape(0)) << n.describe() << ": output_shape " << graph::shape_str(want)
                                          << " differs from the output's " << graph::shape_str(ctx.out_shape(0));
  }
  // The indices number the default output, (in - 1) * stride + kernel - pads
  // per spatial axis; with another output_shape each lands at the same
  // coordinates there (ONNX Runtime's reading).
  const size_t k = x.size() - 2;
  std::vector<int64_t> kernel = n.attr_ints("kernel_shape", {});
  std::vector<int64_t> strides = n.attr_ints("strides", std::vector<int64_t>(k, 1));
  std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(2 * k, 0));
  user_assert(kernel.size() == k && strides.size() == k && pads.size() == 2 * k && y.size() == x.size())
      << n.describe() << ": kernel_shape, strides and pads must match the input's rank";
  std::vector<int64_t> frame(k);
  int64_t frame_size = 1;
  Expr plane = Expr(1);
  const int64_t planes = x[0] * x[1];  // (a tensor's dimensions: their product is planned memory, no overflow)
  for (size_t a = 0; a < k; a++) {
    // In 128-bit arithmetic: hostile strides or kernels must not wrap.
    __int128 f = (__int128)(x[2 + a] - 1) * strides[a] + kernel[a] - pads[a] - pads[a + k];
    __int128 total = (__int128)frame_size * f * std::max<int64_t>(planes, 1);
    user_assert(kernel[a] >= 1 && strides[a] >= 1 && f >= 1 && total <= ((__int128)1 << 62))
        << n.describe() << ": kernel_shape, strides and pads give an empty or oversized default output";
    frame[a] = (int64_t)f;
    frame_size *= frame[a];
    plane = plane * y[2 + a];
  }
  const int64_t nx = graph::num_elements(x);
  const Expr ny = te::num_elements(y);
  const tir::Type t = graph::dtype_to_tir(ctx.in_dtype(0));
  const int in = ctx.input(0), ii = ctx.input(1), out = ctx.output(0);
  ctx.emit_tir("max_unpool", [&](const OpContext::BindFn& bind) {
    tir::Buffer X = bind(in, Access::Read), I = bind(ii, Access::Read), Y = bind(out, Access::Write);
    Expr i = index_var("i"), j = index_var("j"), at = index_var("at");
    // The coordinates of `at` in the default frame, then its index in y.
    Expr rest = at % Expr(frame_size), dst = Expr(0), step = Expr(1), inside = at >= Expr(0) && at < Expr(planes * frame_size);
    for (size_t a = k; a-- > 0;) {
      Expr c = rest % Expr(frame[a]);
      rest = rest / Expr(frame[a]);
      inside = inside && c < y[2 + a];
      dst = dst + c * step;
      step = step * y[2 + a];
    }
    dst = dst + (at / Expr(frame_size)) * plane;
    tir::Stmt scatter = tir::LetStmt::make(at, tir::Load::make(I, j), when(inside, tir::Store::make(Y, dst, tir::Load::make(X, j))));
    return block({loop(i, ny, tir::Store::make(Y, i, tir::make_const(t, 0))), loop(j, Expr(nx), scatter)});
  });
}

}  // namespace kiln::lower
