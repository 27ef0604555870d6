// Resize (opsets 10-18) and Upsample (opsets 7-9), following ONNX's
// reference implementation (onnx/backend/test/case/node/resize.py), and
// GridSample and AffineGrid (at the end of the file).
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
// and floor for nearest. antialias (opset 18) widens the linear and cubic
// filters when downsampling (antialias_taps).
#include <cmath>
#include <functional>

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
  int64_t half = 0;  // antialias: taps base + 1 - half .. base + half
};

struct ResizeSpec {
  std::string mode = "nearest";
  std::string coord = "half_pixel";
  std::string nearest = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
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
  Expr norm;                 // antialias: the weights' sum, which the result is divided by
};

// Antialiased taps (ONNX's _linear_coeffs_antialias, _cubic_coeffs_antialias):
// the filter is widened by 1 / s' (s' = min(s, 1)): tap base + i weighs
// f(s' (i - ratio)), f the triangle (linear) or Keys' kernel (cubic) of
// support 1 or 2, the weights normalized to sum 1. The axis' `half` covers
// the widest filter its scale can give; taps beyond the filter weigh 0.
Taps antialias_taps(const ResizeSpec& sp, const ResizeAxis& a, const Expr& base, const Expr& ratio) {
  Expr s = tir::min(a.scale, f64(1));
  double A = sp.cubic_a;
  Taps t;
  for (int64_t i = 1 - a.half; i <= a.half; i++) {
    Expr x = call(Intrinsic::Abs, s * (f64((double)i) - ratio));
    Expr w;
    if (sp.mode == "linear") {
      w = tir::max(f64(1) - x, f64(0));
    } else {
      Expr near = (f64(A + 2) * x - f64(A + 3)) * x * x + f64(1);
      Expr far = ((f64(A) * x - f64(5 * A)) * x + f64(8 * A)) * x - f64(4 * A);
      w = tir::select(x <= f64(1), near, tir::select(x < f64(2), far, f64(0)));
    }
    t.index.push_back(base + Expr(i));
    t.weight.push_back(w);
  }
  for (size_t k = 0; k < t.index.size(); k++) {
    if (sp.exclude_outside) {
      Expr inside = Expr(0) <= t.index[k] && t.index[k] < a.in;
      t.weight[k] = tir::select(inside, t.weight[k], f64(0));
    }
    t.norm = t.norm.defined() ? t.norm + t.weight[k] : t.weight[k];
  }
  return t;
}

Taps make_taps(const ResizeSpec& sp, const ResizeAxis& a, const Expr& xo) {
  Expr base_f = call(Intrinsic::Ceil, xo) - f64(1);
  Expr ratio = xo - base_f;
  Expr base = tir::cast(tir::Index(), tir::clamp(base_f, f64(-4.0), f64_of(a.in) + f64(4.0)));
  if (sp.antialias) return antialias_taps(sp, a, base, ratio);
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
  if (sp.antialias)
    for (size_t k = 0; k < raxes.size(); k++) rshape[k] = 2 * sp.axes[raxes[k]].half;
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
          r[k] = Expr(rem % rshape[k]);
          rem /= rshape[k];
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
    if (sp.antialias) {
      auto [xo, taps] = all_taps(o);
      Expr norm;
      for (const Taps& tk : taps) norm = norm.defined() ? norm * tk.norm : tk.norm;
      if (norm.defined()) r = r / tir::cast(t, norm);
    }
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

// Each resized axis' antialias half-width: ceil(support / s') for a constant
// scale (as ONNX's reference computes it), else the widest that a scale
// giving the node's output extent can need (s >= out / in).
void set_antialias_taps(OpContext& ctx, ResizeSpec& sp) {
  double support = sp.mode == "linear" ? 1.0 : 2.0;
  for (ResizeAxis& a : sp.axes) {
    if (auto imm = a.scale.as<tir::FloatImm>()) {
      user_assert(imm->value > 0) << ctx.node().describe() << ": scales must be positive";
      a.half = (int64_t)-std::floor(-support / std::min(imm->value, 1.0));
      continue;
    }
    double in = (double)static_extent(a.in, "an extent resized with antialias by a scale known at run time");
    double out = (double)static_extent(a.out, "an extent resized with antialias by a scale known at run time");
    a.half = out > 0 ? (int64_t)std::floor(support * in / out) + 1 : (int64_t)support;
  }
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
  // Antialiasing widens the linear and cubic filters; nearest ignores it.
  sp.antialias = opset >= 18 && n.attr_int("antialias", 0) != 0 && sp.mode != "nearest";

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
      // One scale for every axis: the least (not_larger) or greatest
      // (not_smaller) of sizes / input extents (read at run time where
      // sizes is; the output extents are the node's).
      Expr sc;
      for (size_t k = 0; k < na; k++) {
        auto in = tir::as_const_int(is[axes[k]]);
        Expr r = sizes.constant && in ? f64(ctx.value(sizes.value).const_at((int64_t)k) / (double)*in)
                                      : sizes.at(ctx, (int64_t)k) / f64_of(is[axes[k]]);
        sc = !sc.defined() ? r : policy == "not_larger" ? tir::min(sc, r) : tir::max(sc, r);
      }
      sc = tir::simplify(sc);
      for (size_t k = 0; k < na; k++) s[axes[k]] = sc;
    }
  }
  set_scales(ctx, sp, s);
  if (sp.antialias) set_antialias_taps(ctx, sp);
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

// GridSample (opset 16's modes bilinear/nearest/bicubic and opset 20's
// linear/cubic names, any number k of spatial axes): output
// [N, C, O1, .., Ok] samples X [N, C, D1, .., Dk] at grid [N, O1, .., Ok, k]
// (coordinates in [-1, 1], the last axis' first: x, y, z) as ONNX's
// reference does: each coordinate unnormalized (align_corners: -1 and 1 are
// the corner pixels' centres, else their outer edges), then for padding
// border clamped (but for bicubic, which clamps each tap) and for reflection
// reflected into the image; nearest rounds half to even, linear weighs 2^k
// pixels, cubic 4^k (Keys, A = -0.75), axis by axis; each pixel read outside
// the image is 0 (zeros), the edge (border) or reflected.
void lower_grid_sample(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  ctx.require_float32();
  te::Tensor x = ctx.in(0), grid = ctx.in(1);
  const size_t k = x.ndim() >= 3 ? x.ndim() - 2 : 0;
  user_assert(k >= 1 && grid.ndim() == x.ndim() &&
              static_extent(ctx.in_dims(1)[k + 1], "the grid's last dimension") == (int64_t)k)
      << n.describe() << ": GridSample needs X [N, C, D1, .., Dk] and grid [N, O1, .., Ok, k]; fix the model";
  std::string mode = n.attr_string("mode", "bilinear"), padding = n.attr_string("padding_mode", "zeros");
  if (mode == "linear") mode = "bilinear";
  if (mode == "cubic") mode = "bicubic";
  user_assert(mode == "bilinear" || mode == "nearest" || mode == "bicubic") << n.describe() << ": mode '" << mode << "'";
  user_assert(padding == "zeros" || padding == "border" || padding == "reflection")
      << n.describe() << ": padding_mode '" << padding << "'";
  const bool align = n.attr_int("align_corners", 0) != 0;
  const te::Dims xd = ctx.in_dims(0);
  auto f32 = [](const Expr& i) { return tir::Cast::make(tir::Float(32), i); };
  // Per spatial axis d (X's axis 2 + d): its length and reflection borders.
  std::vector<Expr> len(k), lenf(k), lo(k), hi(k);
  for (size_t d = 0; d < k; d++) {
    len[d] = xd[2 + d];
    lenf[d] = f32(len[d]);
    lo[d] = align ? Expr(0.0f) : Expr(-0.5f);
    hi[d] = align ? lenf[d] - Expr(1.0f) : lenf[d] - Expr(0.5f);
  }
  ctx.set_output(0, te::compute("grid_sample", ctx.out_dims(0), [=](const Indices& o) {
    auto unnormalize = [&](const Expr& v, const Expr& l) {
      return align ? (v + Expr(1.0f)) * Expr(0.5f) * (l - Expr(1.0f)) : ((v + Expr(1.0f)) * l - Expr(1.0f)) * Expr(0.5f);
    };
    std::vector<Expr> p(k);  // the sampled position on each spatial axis
    for (size_t d = 0; d < k; d++) {
      Indices gi{o[0]};
      for (size_t j = 0; j < k; j++) gi.push_back(o[2 + j]);
      gi.push_back(Expr((int64_t)(k - 1 - d)));
      p[d] = unnormalize(grid(gi), lenf[d]);
      if (mode == "nearest") p[d] = round_half_even(p[d]);
      if (padding == "border" && mode != "bicubic") {  // bicubic clamps each tap instead (as ONNX Runtime, torch)
        p[d] = tir::clamp(p[d], Expr(0.0f), lenf[d] - Expr(1.0f));
      } else if (padding == "reflection") {
        p[d] = grid_reflect(p[d], lo[d], hi[d]);
      }
    }
    // The pixel at integer-valued float coordinates c.
    auto pixel = [&](std::vector<Expr> c) {
      Indices ii{o[0], o[1]};
      Expr inside;
      for (size_t d = 0; d < k; d++) {
        if (padding == "reflection") c[d] = grid_reflect(c[d], lo[d], hi[d]);
        Expr i = tir::Cast::make(tir::Index(), c[d]);
        inside = inside.defined() ? (inside && i >= Expr(0)) : i >= Expr(0);
        inside = inside && i < len[d];
        ii.push_back(tir::clamp(i, Expr(0), len[d] - Expr(1)));
      }
      Expr v = x(ii);
      return padding == "zeros" ? tir::select(inside, v, Expr(0.0f)) : v;
    };
    if (mode == "nearest") return pixel(p);
    if (mode == "bilinear") return linear_sample(p, pixel);
    std::vector<Expr> p0(k);
    for (size_t d = 0; d < k; d++) p0[d] = tir::Call::make(Intrinsic::Floor, {p[d]});
    auto cubic = [](const Expr& t) {  // Keys' weights of the taps at -1, 0, 1, 2 for fraction t
      const float A = -0.75f;
      auto near = [&](const Expr& d) { return ((Expr(A + 2) * d - Expr(A + 3)) * d * d) + Expr(1.0f); };
      auto far = [&](const Expr& d) { return ((Expr(A) * d - Expr(5 * A)) * d + Expr(8 * A)) * d - Expr(4 * A); };
      return std::vector<Expr>{far(t + Expr(1.0f)), near(t), near(Expr(1.0f) - t), far(Expr(2.0f) - t)};
    };
    // Separable: axis d interpolates between the values over axes d + 1 ..
    // at its taps (c holds the taps chosen on the axes before d).
    std::function<Expr(size_t, std::vector<Expr>&)> interp = [&](size_t d, std::vector<Expr>& c) -> Expr {
      if (d == k) return pixel(c);
      Expr t = p[d] - p0[d];
      std::vector<Expr> w = cubic(t);
      Expr sum = Expr(0.0f);
      for (int i = 0; i < 4; i++) {
        c[d] = p0[d] + Expr((float)(i - 1));
        sum = sum + w[(size_t)i] * interp(d + 1, c);
      }
      return sum;
    };
    std::vector<Expr> c(k);
    return interp(0, c);
  }));
}

// AffineGrid (opset 20): grid [N, D1, .., Dk, k] (k = 2 or 3) maps the
// normalized coordinates of an output of size [N, C, D1, .., Dk] through
// theta [N, k, k + 1]: grid[n, i1, .., ik, c] = theta[n, c, :k] . (x, y, z)
// + theta[n, c, k], where the coordinate of index i on an axis of length L
// is start + i * step as ONNX's function body computes it: start = -1 +
// step / 2, step = 2 / L, or with align_corners start = -1, step = 2 / (L - 1)
// (0 for L = 1, where the body's own steps would divide by zero). The
// output's shape (from size's values, read at run time or not) sizes it.
void lower_affine_grid(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Tensor theta = ctx.in(0);
  const tir::Type t = theta.dtype();
  user_assert(t.is_float()) << n.describe() << ": theta must be a float tensor";
  const te::Dims od = ctx.out_dims(0);
  const size_t r = od.size() >= 3 ? od.size() - 2 : 0;
  user_assert(r >= 1 && theta.ndim() == 3 &&
              static_extent(ctx.in_dims(0)[1], "theta's second dimension") == (int64_t)r &&
              static_extent(ctx.in_dims(0)[2], "theta's last dimension") == (int64_t)r + 1 &&
              static_extent(od.back(), "the grid's last dimension") == (int64_t)r)
      << n.describe() << ": theta must be [N, k, k + 1] for a size [N, C, D1, .., Dk]; fix the model";
  const bool align = n.attr_int("align_corners", 0) != 0;
  ctx.set_output(0, te::compute("affine_grid", od, [=](const Indices& o) {
    Expr one = k(t, 1);
    Expr sum;
    for (size_t j = 0; j <= r; j++) {
      Expr c = one;  // the homogeneous coordinate for j = r
      if (j < r) {   // x (j = 0) runs along the last spatial axis
        const size_t axis = r - j;
        Expr len = tir::cast(t, od[axis]), i = tir::cast(t, o[axis]);
        Expr step = align ? tir::select(tir::EQ::make(od[axis], Expr(1)), k(t, 0), k(t, 2) / (len - one)) : k(t, 2) / len;
        Expr start = align ? k(t, -1) : k(t, -1) + step / k(t, 2);
        c = start + i * step;
      }
      Expr term = theta({o[0], o[r + 1], Expr((int64_t)j)}) * c;
      sum = sum.defined() ? sum + term : term;
    }
    return sum;
  }));
}

}  // namespace kiln::lower
