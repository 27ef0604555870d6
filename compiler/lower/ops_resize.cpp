// Resize (opsets 10-18) and Upsample (opsets 7-9), following ONNX's
// reference implementation (onnx/backend/test/case/node/resize.py), and
// GridSample (4-D, at the end of the file).
//
// Every axis d maps an output coordinate x to an input coordinate x_o
// (computed in float64; s = the axis' scale, in/out = the axis' lengths,
// ow = s * in, the "output width" as a real number, r0/r1 = the roi):
//
//   half_pixel            x_o = (x + 0.5) / s - 0.5
//   half_pixel_symmetric  x_o = c (1 - out / ow) + (x + 0.5) / s - 0.5,  c = in / 2
//   pytorch_half_pixel    x_o = ow == 1 ? -0.5 : (x + 0.5) / s - 0.5
//   align_corners         x_o = ow == 1 ? 0 : x (in - 1) / (ow - 1)
//   asymmetric            x_o = x / s
//   tf_crop_and_resize    x_o = (ow == 1 ? (r1 - r0)(in - 1) / 2 : x (r1 - r0)(in - 1) / (ow - 1)) + r0 (in - 1)
//                         and the output is extrapolation_value where x_o is outside [0, in - 1]
//
// With base = ceil(x_o) - 1 and ratio = x_o - base (in (0, 1]):
//
//   nearest  one tap: round_prefer_floor ceil(x_o - 0.5), round_prefer_ceil
//            floor(x_o + 0.5), floor floor(x_o), ceil ceil(x_o)
//   linear   taps base, base + 1 with weights 1 - ratio, ratio
//   cubic    taps base - 1 .. base + 2 with Keys' weights (a = cubic_coeff_a)
//            at distances 1 + ratio, ratio, 1 - ratio, 2 - ratio;
//            exclude_outside zeroes the weights of taps outside the input and
//            renormalizes them to sum 1
//
// Taps outside the input read the nearest edge element (reads are clamped).
// N-d interpolation is separable: the output is the sum over the taps of all
// resized axes of (product of the per-axis weights) * X[taps], written out as
// an explicit sum (up to 16 tap combinations) or as a reduction over the tap
// grid (more). The scale is s = scales[d] when given, else out / in (sizes);
// scales and roi may be run-time tensors (they are read in the formula); the
// output shape is static. Resize-10 and Upsample use asymmetric coordinates
// and floor for nearest.
#include <cmath>

#include "lower/expr_helpers.h"
#include "lower/op_lowering.h"
#include "support/diagnostics.h"
#include "tir/inplace.h"
#include "tir/simplify.h"

namespace kiln::lower {
namespace {

using tir::Intrinsic;

const tir::Type F64 = tir::Float(64);

Expr f64(double v) { return tir::make_const(F64, v); }

// Element i of a 1-D input as float64: folded when constant, read otherwise.
struct VectorInput {
  int value = -1;
  te::Tensor t;
  int64_t size = 0;
  bool constant = false;
  Expr at(OpContext& ctx, int64_t i) const {
    if (constant) return f64(ctx.value(value).const_at(i));
    return tir::cast(F64, t(Indices(t.ndim() == 0 ? 0 : 1, Expr(i))));
  }
};

VectorInput vector_input(OpContext& ctx, size_t i) {
  VectorInput v;
  if (!ctx.has_input(i)) return v;
  v.value = ctx.input(i);
  const graph::Value& val = ctx.value(v.value);
  user_assert(val.shape.size() <= 1) << ctx.node().describe() << ": input " << i << " must be 1-D";
  v.size = val.elements();
  v.constant = val.is_constant();
  if (!v.constant && v.size > 0) v.t = ctx.in(i);
  return v;
}

struct ResizeAxis {
  Expr in = Expr(1), out = Expr(1);  // extents (run-time ones too)
  Expr scale;        // float64
  Expr r0, r1;       // roi, float64 (tf_crop_and_resize only)
  bool resized = false;
};

struct ResizeSpec {
  std::string mode = "nearest";
  std::string coord = "half_pixel";
  std::string nearest = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
  std::vector<ResizeAxis> axes;
};

// A spec with one axis per dimension, from the node's input and output shapes.
ResizeSpec spec_for_shapes(const OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Dims is = ctx.in_dims(0), os = ctx.out_dims(0);
  user_assert(os.size() == is.size()) << n.describe() << ": output rank differs from the input's";
  ResizeSpec sp;
  sp.axes.resize(is.size());
  for (size_t d = 0; d < is.size(); d++) {
    sp.axes[d].in = is[d];
    sp.axes[d].out = os[d];
    auto in = tir::as_const_int(is[d]), out = tir::as_const_int(os[d]);
    user_assert(!in || !out || *in > 0 || *out == 0) << n.describe() << ": cannot resize an empty dimension";
  }
  return sp;
}

// An extent as float64.
Expr f64_of(const Expr& e) {
  if (auto c = tir::as_const_int(e)) return f64((double)*c);
  return tir::cast(F64, e);
}

// x_o for output coordinate x (an index) on axis `a`.
Expr original_coordinate(const ResizeSpec& sp, const ResizeAxis& a, const Expr& x_index) {
  Expr x = tir::cast(F64, x_index);
  Expr s = a.scale;
  Expr in = f64_of(a.in), last = f64_of(a.in - Expr(1));
  Expr ow = s * in;
  Expr one = f64(1);
  const std::string& m = sp.coord;
  if (m == "half_pixel") return (x + f64(0.5)) / s - f64(0.5);
  if (m == "half_pixel_symmetric") {
    Expr adj = f64_of(a.out) / ow;
    Expr offset = in / f64(2) * (one - adj);
    return offset + (x + f64(0.5)) / s - f64(0.5);
  }
  if (m == "pytorch_half_pixel") return tir::select(tir::EQ::make(ow, one), f64(-0.5), (x + f64(0.5)) / s - f64(0.5));
  if (m == "align_corners") return tir::select(tir::EQ::make(ow, one), f64(0), x * last / (ow - one));
  if (m == "asymmetric") return x / s;
  internal_assert(m == "tf_crop_and_resize") << "coordinate mode " << m;
  Expr span = (a.r1 - a.r0) * last;
  return tir::select(tir::EQ::make(ow, one), span / f64(2), x * span / (ow - one)) + a.r0 * last;
}

// A float64 coordinate as a (clamped) index into [0, in).
Expr to_index(const Expr& v, const Expr& in) {
  // Clamp first so that the conversion never sees a huge value.
  Expr c = tir::clamp(v, f64(-4.0), f64_of(in) + f64(4.0));
  return tir::clamp(tir::cast(tir::Index(), c), Expr(0), in - Expr(1));
}

// The per-axis taps of linear / cubic interpolation at x_o.
struct Taps {
  std::vector<Expr> index;   // unclamped tap positions (Index)
  std::vector<Expr> weight;  // float64
};

Taps make_taps(const ResizeSpec& sp, const ResizeAxis& a, const Expr& xo) {
  Expr base_f = call(Intrinsic::Ceil, xo) - f64(1);
  Expr ratio = xo - base_f;
  Expr base = tir::cast(tir::Index(), tir::clamp(base_f, f64(-4.0), f64_of(a.in) + f64(4.0)));
  Taps t;
  Expr one = f64(1);
  if (sp.mode == "linear") {
    t.index = {base, base + Expr(1)};
    t.weight = {one - ratio, ratio};
    return t;
  }
  double A = sp.cubic_a;
  auto far = [&](Expr d) {  // |d| in [1, 2): A d^3 - 5A d^2 + 8A d - 4A
    return ((f64(A) * d - f64(5 * A)) * d + f64(8 * A)) * d - f64(4 * A);
  };
  auto near = [&](Expr d) {  // |d| in [0, 1]: (A + 2) d^3 - (A + 3) d^2 + 1
    return (f64(A + 2) * d - f64(A + 3)) * d * d + one;
  };
  t.index = {base - Expr(1), base, base + Expr(1), base + Expr(2)};
  t.weight = {far(ratio + one), near(ratio), near(one - ratio), far((one - ratio) + one)};
  if (sp.exclude_outside) {
    for (size_t k = 0; k < 4; k++) {
      Expr inside = Expr(0) <= t.index[k] && t.index[k] < a.in;
      t.weight[k] = tir::select(inside, t.weight[k], f64(0));
    }
    Expr sum = t.weight[0] + t.weight[1] + t.weight[2] + t.weight[3];
    for (size_t k = 0; k < 4; k++) t.weight[k] = t.weight[k] / sum;
  }
  return t;
}

// Picks element k of `v` where k is a constant, or by a select chain.
Expr pick(const std::vector<Expr>& v, const Expr& k) {
  if (const int64_t* c = tir::as_const_int(k)) return v.at(*c);
  Expr r = v.back();
  for (size_t i = v.size() - 1; i-- > 0;) r = tir::select(tir::EQ::make(k, Expr((int64_t)i)), v[i], r);
  return r;
}

void lower_resize_spec(OpContext& ctx, const ResizeSpec& sp) {
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0);
  tir::Type t = x.dtype();
  const te::Dims os = ctx.out_dims(0);
  size_t rank = x.ndim();
  user_assert(os.size() == rank) << n.describe() << ": output rank differs from the input's";
  bool nearest = sp.mode == "nearest";
  user_assert(nearest || t.is_float()) << n.describe() << ": " << sp.mode << " interpolation needs a float input";
  bool crop = sp.coord == "tf_crop_and_resize";
  std::vector<size_t> raxes;
  for (size_t d = 0; d < rank; d++)
    if (sp.axes[d].resized) raxes.push_back(d);
  // Per output index: the original coordinate of each resized axis.
  auto coords = [=](const Indices& o) {
    std::vector<Expr> xo;
    for (size_t d : raxes) xo.push_back(original_coordinate(sp, sp.axes[d], o[d]));
    return xo;
  };
  auto outside = [=](const std::vector<Expr>& xo) {
    Expr out;
    for (size_t k = 0; k < raxes.size(); k++) {
      Expr c = xo[k] < f64(0) || xo[k] > f64_of(sp.axes[raxes[k]].in - Expr(1));
      out = out.defined() ? (out || c) : c;
    }
    return out;
  };
  Expr extrap = tir::make_const(t, sp.extrapolation);

  if (nearest) {
    ctx.set_output(0, te::compute("resize", os, [=](const Indices& o) {
      std::vector<Expr> xo = coords(o);
      Indices ii = o;
      for (size_t k = 0; k < raxes.size(); k++) {
        Expr v = xo[k];
        if (sp.nearest == "round_prefer_floor") v = call(Intrinsic::Ceil, v - f64(0.5));
        else if (sp.nearest == "round_prefer_ceil") v = call(Intrinsic::Floor, v + f64(0.5));
        else if (sp.nearest == "floor") v = call(Intrinsic::Floor, v);
        else v = call(Intrinsic::Ceil, v);
        ii[raxes[k]] = to_index(v, sp.axes[raxes[k]].in);
      }
      Expr r = x(ii);
      if (crop && !raxes.empty()) r = tir::select(outside(xo), extrap, r);
      return r;
    }));
    return;
  }

  int64_t ntaps = sp.mode == "linear" ? 2 : 4;
  graph::Shape rshape(raxes.size(), ntaps);
  int64_t combos = graph::num_elements(rshape);
  // One term of the sum: the product of the axis weights times the clamped read.
  auto term = [=](const Indices& o, const std::vector<Taps>& taps, const Indices& r) {
    Indices ii = o;
    Expr w;
    for (size_t k = 0; k < raxes.size(); k++) {
      Expr in = sp.axes[raxes[k]].in;
      ii[raxes[k]] = tir::clamp(pick(taps[k].index, r[k]), Expr(0), in - Expr(1));
      Expr wk = pick(taps[k].weight, r[k]);
      w = w.defined() ? w * wk : wk;
    }
    Expr v = x(ii);
    return w.defined() ? tir::cast(t, w) * v : v;
  };
  auto all_taps = [=](const Indices& o) {
    std::vector<Expr> xo = coords(o);
    std::vector<Taps> taps;
    for (size_t k = 0; k < raxes.size(); k++) taps.push_back(make_taps(sp, sp.axes[raxes[k]], xo[k]));
    return std::make_pair(xo, taps);
  };
  te::Tensor sum;
  if (combos <= 16) {
    sum = te::compute("resize_sum", os, [=](const Indices& o) {
      auto [xo, taps] = all_taps(o);
      Expr s;
      for (int64_t c = 0; c < combos; c++) {
        Indices r(raxes.size());
        int64_t rem = c;
        for (size_t k = raxes.size(); k-- > 0;) {
          r[k] = Expr(rem % ntaps);
          rem /= ntaps;
        }
        Expr v = term(o, taps, r);
        s = s.defined() ? s + v : v;
      }
      return s;
    });
  } else {
    sum = te::reduce("resize_sum", os, rshape, te::ReduceKind::Sum, t, [=](const Indices& o, const Indices& r) {
      auto [xo, taps] = all_taps(o);
      return term(o, taps, r);
    });
  }
  ctx.set_output(0, te::compute("resize", os, [=](const Indices& o) {
    Expr r = sum(o);
    if (crop && !raxes.empty()) r = tir::select(outside(coords(o)), extrap, r);
    return r;
  }));
}

// Scales for every axis from a vector input (or attribute values) of `rank`
// entries; an axis is resized unless its scale is the constant 1 and its
// length is unchanged.
void set_scales(OpContext& ctx, ResizeSpec& sp, const std::vector<Expr>& scales) {
  for (size_t d = 0; d < sp.axes.size(); d++) {
    ResizeAxis& a = sp.axes[d];
    a.scale = scales[d];
    auto imm = a.scale.as<tir::FloatImm>();
    auto in = tir::as_const_int(a.in), out = tir::as_const_int(a.out);
    bool same = (in && out && *in == *out) || tir::equal(tir::simplify(a.in), tir::simplify(a.out));
    a.resized = !(imm && imm->value == 1.0 && same);
  }
  (void)ctx;
}

}  // namespace

void lower_resize(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  int64_t opset = ctx.graph.opset;
  ResizeSpec sp = spec_for_shapes(ctx);
  te::Dims is = ctx.in_dims(0), os = ctx.out_dims(0);
  size_t rank = is.size();
  sp.mode = n.attr_string("mode", "nearest");
  user_assert(sp.mode == "nearest" || sp.mode == "linear" || (sp.mode == "cubic" && opset >= 11))
      << n.describe() << ": unknown mode '" << sp.mode << "'";
  VectorInput scales, sizes, roi;
  if (opset < 11) {
    sp.coord = "asymmetric";
    sp.nearest = "floor";
    scales = vector_input(ctx, 1);
  } else {
    sp.coord = n.attr_string("coordinate_transformation_mode", "half_pixel");
    sp.nearest = n.attr_string("nearest_mode", "round_prefer_floor");
    sp.cubic_a = n.attr_float("cubic_coeff_a", -0.75);
    sp.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
    sp.extrapolation = n.attr_float("extrapolation_value", 0.0);
    roi = vector_input(ctx, 1);
    scales = vector_input(ctx, 2);
    sizes = vector_input(ctx, 3);
  }
  user_assert(sp.coord == "half_pixel" || sp.coord == "pytorch_half_pixel" || sp.coord == "align_corners" ||
              sp.coord == "asymmetric" || sp.coord == "tf_crop_and_resize" ||
              (sp.coord == "half_pixel_symmetric" && opset >= 18))
      << n.describe() << ": unknown coordinate_transformation_mode '" << sp.coord << "'";
  user_assert(sp.nearest == "round_prefer_floor" || sp.nearest == "round_prefer_ceil" || sp.nearest == "floor" ||
              sp.nearest == "ceil")
      << n.describe() << ": unknown nearest_mode '" << sp.nearest << "'";
  user_assert(n.attr_int("antialias", 0) == 0) << n.describe() << ": antialias is not supported by kilnc yet";

  // Opset 18: `axes` selects the axes that scales, sizes and roi describe.
  std::vector<int64_t> axes;
  if (opset >= 18 && n.has_attr("axes")) {
    for (int64_t a : n.attr_ints("axes", {})) axes.push_back(normalize_axis(ctx, a, (int64_t)rank));
  } else {
    for (size_t d = 0; d < rank; d++) axes.push_back((int64_t)d);
  }
  size_t na = axes.size();
  std::vector<Expr> s(rank, f64(1));
  if (scales.size > 0) {
    user_assert(sizes.size == 0) << n.describe() << ": give scales or sizes, not both";
    user_assert((size_t)scales.size == na) << n.describe() << ": scales must have " << na << " entries";
    for (size_t k = 0; k < na; k++) s[axes[k]] = scales.at(ctx, (int64_t)k);
  } else {
    user_assert(opset >= 11 && sizes.size > 0) << n.describe() << ": needs scales or sizes";
    user_assert((size_t)sizes.size == na) << n.describe() << ": sizes must have " << na << " entries";
    std::string policy = opset >= 18 ? n.attr_string("keep_aspect_ratio_policy", "stretch") : "stretch";
    if (policy == "stretch") {
      for (size_t k = 0; k < na; k++) {
        auto o = tir::as_const_int(os[axes[k]]), i = tir::as_const_int(is[axes[k]]);
        s[axes[k]] = o && i ? f64((double)*o / (double)*i) : f64_of(os[axes[k]]) / f64_of(is[axes[k]]);
      }
    } else {
      user_assert(policy == "not_larger" || policy == "not_smaller")
          << n.describe() << ": unknown keep_aspect_ratio_policy '" << policy << "'";
      user_assert(sizes.constant) << n.describe() << ": sizes must be a compile-time constant with keep_aspect_ratio_policy";
      double sc = policy == "not_larger" ? INFINITY : -INFINITY;
      for (size_t k = 0; k < na; k++) {
        double r = ctx.value(sizes.value).const_at((int64_t)k) / (double)static_extent(is[axes[k]], "a resized extent");
        sc = policy == "not_larger" ? std::min(sc, r) : std::max(sc, r);
      }
      for (size_t k = 0; k < na; k++) s[axes[k]] = f64(sc);
    }
  }
  set_scales(ctx, sp, s);
  if (sp.coord == "tf_crop_and_resize") {
    user_assert((size_t)roi.size == 2 * na) << n.describe() << ": roi must have " << 2 * na << " entries";
    for (size_t d = 0; d < rank; d++) {
      sp.axes[d].r0 = f64(0);
      sp.axes[d].r1 = f64(1);
    }
    for (size_t k = 0; k < na; k++) {
      ResizeAxis& a = sp.axes[axes[k]];
      a.r0 = roi.at(ctx, (int64_t)k);
      a.r1 = roi.at(ctx, (int64_t)(k + na));
      a.resized = true;
    }
  }
  lower_resize_spec(ctx, sp);
}

// Upsample: scales as an attribute (opset 7) or an input (opset 9);
// asymmetric coordinates, nearest = floor.
void lower_upsample(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  ResizeSpec sp = spec_for_shapes(ctx);
  size_t rank = sp.axes.size();
  sp.mode = n.attr_string("mode", "nearest");
  if (sp.mode == "bilinear") sp.mode = "linear";
  user_assert(sp.mode == "nearest" || sp.mode == "linear") << n.describe() << ": unknown mode '" << sp.mode << "'";
  sp.coord = "asymmetric";
  sp.nearest = "floor";
  std::vector<Expr> s;
  if (n.has_attr("scales")) {
    for (double v : n.attrs.at("scales").floats) s.push_back(f64((double)(float)v));
  } else {
    VectorInput sc = vector_input(ctx, 1);
    for (int64_t i = 0; i < sc.size; i++) s.push_back(sc.at(ctx, i));
  }
  user_assert(s.size() == rank) << n.describe() << ": scales must have " << rank << " entries";
  set_scales(ctx, sp, s);
  lower_resize_spec(ctx, sp);
}

namespace {

// v reflected into [lo, hi] as often as needed (ONNX's _gs_reflect), float32.
Expr grid_reflect(const Expr& v, const Expr& lo, const Expr& hi) {
  Expr range = hi - lo;
  auto fold = [&](const Expr& dx, const Expr& near, const Expr& far, float sign) {
    Expr n = tir::Call::make(Intrinsic::Floor, {dx / range});
    Expr r = dx - n * range;
    Expr even = tir::EQ::make(n - Expr(2.0f) * tir::Call::make(Intrinsic::Floor, {n * Expr(0.5f)}), Expr(0.0f));
    return tir::select(even, near + Expr(sign) * r, far - Expr(sign) * r);
  };
  Expr below = fold(lo - v, lo, hi, 1.0f), above = fold(v - hi, hi, lo, -1.0f);
  Expr out = tir::select(v < lo, below, tir::select(v > hi, above, v));
  return tir::select(range > Expr(0.0f), out, lo);
}

}  // namespace

// GridSample (4-D; opset 16's modes bilinear/nearest/bicubic and opset 20's
// linear/cubic names): output [N, C, Ho, Wo] samples X [N, C, H, W] at
// grid [N, Ho, Wo, 2] (x, y in [-1, 1]) as ONNX's reference does: the
// coordinate unnormalized (align_corners: -1 and 1 are the corner pixels'
// centres, else their outer edges), then for padding border clamped (but
// for bicubic, which clamps each tap) and for reflection reflected into the
// image; nearest rounds half to even,
// bilinear weighs 4 pixels, bicubic 16 (Keys, A = -0.75); each pixel read
// outside the image is 0 (zeros), the edge (border) or reflected.
void lower_grid_sample(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  ctx.require_float32();
  te::Tensor x = ctx.in(0), grid = ctx.in(1);
  user_assert(x.ndim() == 4 && grid.ndim() == 4 && static_extent(ctx.in_dims(1)[3], "the grid's last dimension") == 2)
      << n.describe() << ": kilnc supports 4-D GridSample (X [N, C, H, W], grid [N, Ho, Wo, 2]) so far";
  std::string mode = n.attr_string("mode", "bilinear"), padding = n.attr_string("padding_mode", "zeros");
  if (mode == "linear") mode = "bilinear";
  if (mode == "cubic") mode = "bicubic";
  user_assert(mode == "bilinear" || mode == "nearest" || mode == "bicubic") << n.describe() << ": mode '" << mode << "'";
  user_assert(padding == "zeros" || padding == "border" || padding == "reflection")
      << n.describe() << ": padding_mode '" << padding << "'";
  const bool align = n.attr_int("align_corners", 0) != 0;
  const te::Dims xd = ctx.in_dims(0);
  const Expr H = xd[2], W = xd[3];
  auto f32 = [](const Expr& i) { return tir::Cast::make(tir::Float(32), i); };
  const Expr Wf = f32(W), Hf = f32(H);
  // The reflection borders: [x_min, y_min, x_max, y_max].
  const Expr x_min = align ? Expr(0.0f) : Expr(-0.5f), y_min = x_min;
  const Expr x_max = align ? Wf - Expr(1.0f) : Wf - Expr(0.5f), y_max = align ? Hf - Expr(1.0f) : Hf - Expr(0.5f);
  ctx.set_output(0, te::compute("grid_sample", ctx.out_dims(0), [=](const Indices& o) {
    Expr gx = grid({o[0], o[2], o[3], Expr(0)}), gy = grid({o[0], o[2], o[3], Expr(1)});
    auto unnormalize = [&](const Expr& v, const Expr& len) {
      return align ? (v + Expr(1.0f)) * Expr(0.5f) * (len - Expr(1.0f)) : ((v + Expr(1.0f)) * len - Expr(1.0f)) * Expr(0.5f);
    };
    Expr px = unnormalize(gx, Wf), py = unnormalize(gy, Hf);
    if (mode == "nearest") px = round_half_even(px), py = round_half_even(py);
    if (padding == "border" && mode != "bicubic") {  // bicubic clamps each tap instead (as ONNX Runtime, torch)
      px = tir::clamp(px, Expr(0.0f), Wf - Expr(1.0f));
      py = tir::clamp(py, Expr(0.0f), Hf - Expr(1.0f));
    } else if (padding == "reflection") {
      px = grid_reflect(px, x_min, x_max);
      py = grid_reflect(py, y_min, y_max);
    }
    // The pixel at integer-valued float coordinates (r, c).
    auto pixel = [&](Expr r, Expr c) {
      if (padding == "reflection") r = grid_reflect(r, y_min, y_max), c = grid_reflect(c, x_min, x_max);
      Expr ri = tir::Cast::make(tir::Index(), r), ci = tir::Cast::make(tir::Index(), c);
      Expr inside = ri >= Expr(0) && ri < H && ci >= Expr(0) && ci < W;
      Expr v = x({o[0], o[1], tir::clamp(ri, Expr(0), H - Expr(1)), tir::clamp(ci, Expr(0), W - Expr(1))});
      return padding == "zeros" ? tir::select(inside, v, Expr(0.0f)) : v;
    };
    if (mode == "nearest") return pixel(py, px);
    Expr x0 = tir::Call::make(Intrinsic::Floor, {px}), y0 = tir::Call::make(Intrinsic::Floor, {py});
    if (mode == "bilinear") {
      Expr dx = px - x0, dy = py - y0, one = Expr(1.0f);
      return (one - dy) * ((one - dx) * pixel(y0, x0) + dx * pixel(y0, x0 + one)) +
             dy * ((one - dx) * pixel(y0 + one, x0) + dx * pixel(y0 + one, x0 + one));
    }
    auto cubic = [](const Expr& t) {  // Keys' weights of the taps at -1, 0, 1, 2 for fraction t
      const float A = -0.75f;
      auto near = [&](const Expr& d) { return ((Expr(A + 2) * d - Expr(A + 3)) * d * d) + Expr(1.0f); };
      auto far = [&](const Expr& d) { return ((Expr(A) * d - Expr(5 * A)) * d + Expr(8 * A)) * d - Expr(4 * A); };
      return std::vector<Expr>{far(t + Expr(1.0f)), near(t), near(Expr(1.0f) - t), far(Expr(2.0f) - t)};
    };
    std::vector<Expr> wx = cubic(px - x0), wy = cubic(py - y0);
    Expr sum = Expr(0.0f);
    for (int i = 0; i < 4; i++) {
      Expr row = Expr(0.0f);
      for (int j = 0; j < 4; j++) row = row + wx[(size_t)j] * pixel(y0 + Expr((float)(i - 1)), x0 + Expr((float)(j - 1)));
      sum = sum + wy[(size_t)i] * row;
    }
    return sum;
  }));
}

}  // namespace kiln::lower
