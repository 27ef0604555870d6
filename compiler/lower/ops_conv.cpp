// Conv (1-D to 3-D, pads, strides, dilations, groups, auto_pad), NCHW layout;
// ConvTranspose, Col2Im (blocks summed back into images) and DeformConv
// (the taps moved by learned offsets, sampled bilinearly).
//
//   out[n, m, o...] = bias[m] + sum_{c, k...} x[n, g*Cg + c, o*s - pad + k*d] * w[m, c, k...]
//   with g = m / (M / group) and Cg = C / group.
//
// 2-D Conv in the blocked layout (kiln_layout=NCHWc, from graph/pass_layout.cpp):
//   x [N, C/c, H, W, c], w [M/m, C/c, KH, KW, c, m], out [N, M/m, OH, OW, m]
//   out[n, mo, oh, ow, mi] = bias[mo*m + mi]
//       + sum_{co, kh, kw, ci} x[n, co, oh*s - pad + kh*d, ow*s - pad + kw*d, ci] * w[mo, co, kh, kw, ci, mi]
//   and depthwise (w [M/m, 1, KH, KW, 1, m]): x read at channel block mo, lane mi.
#include "graph/passes.h"
#include "lower/expr_helpers.h"
#include "lower/op_lowering.h"
#include "lower/ops_winograd.h"
#include "lower/schedules_cpu.h"
#include "lower/schedules_gpu.h"
#include "support/diagnostics.h"
#include "tir/simplify.h"

namespace kiln::lower {
namespace {

// Run-time spatial extents: the output positions whose taps all lie inside
// the input ([lo, hi) per output axis, for te::with_interior), where the
// convolution reads the input without bounds checks. Undefined (no
// interior) for static extents, which loop partitioning handles.
std::vector<std::pair<Expr, Expr>> conv_interior(const te::Dims& xs, const te::Dims& os, size_t first_spatial,
                                                 const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                                                 const std::vector<int64_t>& dilations, const std::vector<Expr>& pads) {
  size_t k = kernel.size();
  bool dynamic = false;
  for (size_t i = 0; i < k; i++) dynamic |= !tir::as_const_int(xs[first_spatial + i]) || !tir::as_const_int(os[first_spatial + i]);
  if (!dynamic) return {};
  std::vector<std::pair<Expr, Expr>> bounds(os.size());
  for (size_t i = 0; i < k; i++) {
    Expr s = Expr(strides[i]);
    // o*s - pad >= 0, and o*s - pad + (kernel - 1)*dilation <= in - 1.
    Expr lo = (pads[i] + s - Expr(1)) / s;
    Expr hi = tir::min((xs[first_spatial + i] - Expr(1) + pads[i] - Expr((kernel[i] - 1) * dilations[i])) / s + Expr(1),
                       os[first_spatial + i]);
    bounds[first_spatial + i] = {tir::simplify(lo), tir::simplify(hi)};
  }
  return bounds;
}

void lower_conv_blocked(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  if (n.attr_int("kiln_winograd", 0)) return lower_conv_winograd(ctx);
  te::Tensor x = ctx.in(0), w = ctx.in(1);
  te::Dims xs = x.dims(), os = ctx.out_dims(0);
  graph::Shape ws = w.shape();  // constant weights
  internal_assert(xs.size() == 5 && ws.size() == 6 && os.size() == 5) << n.describe() << ": bad blocked shapes";
  bool depthwise = n.attr_int("group", 1) > 1;
  std::vector<int64_t> kernel = {ws[2], ws[3]};
  std::vector<int64_t> strides = n.attr_ints("strides", {1, 1}), dilations = n.attr_ints("dilations", {1, 1});
  std::vector<Expr> pads = spatial_pads(ctx, xs, os, kernel, strides, dilations);
  int64_t m = static_extent(os[4], "the channel block");
  tir::Type t = x.dtype();
  auto taps = [=](const Indices& o, const Indices& r) {
    Expr ih = o[2] * Expr(strides[0]) - pads[0] + r[1] * Expr(dilations[0]);
    Expr iw = o[3] * Expr(strides[1]) - pads[1] + r[2] * Expr(dilations[1]);
    return depthwise ? Indices{o[0], o[1], ih, iw, o[4]} : Indices{o[0], r[0], ih, iw, r[3]};
  };
  te::Tensor conv = te::reduce("conv_nchwc", os, graph::Shape{ws[1], ws[2], ws[3], ws[4]}, te::ReduceKind::Sum, t,
                               [=](const Indices& o, const Indices& r) {
    return padded_read(x, taps(o, r), tir::make_const(t, 0)) * w({o[1], r[0], r[1], r[2], r[3], o[4]});
  });
  auto interior = conv_interior(xs, os, 2, kernel, strides, dilations, pads);
  if (!interior.empty())
    conv = te::with_interior(conv, [=](const Indices& o, const Indices& r) {
      return x(taps(o, r)) * w({o[1], r[0], r[1], r[2], r[3], o[4]});
    }, interior);
  int registers = ctx.vector().registers;
  tune::Tuning* tuning = ctx.tuning();
  std::string variant = tune::conv_variant(strides, dilations) + (depthwise ? " dw" : "");
  bool winograd_knob = graph::winograd_candidate(ctx.graph, n);
  ctx.schedule_reduction(conv, [registers, w, depthwise, tuning, variant, winograd_knob](te::Stage& s) {
    schedule_conv2d_blocked_cpu(s, w, registers, depthwise, tuning, variant, winograd_knob);
  });
  if (ctx.has_input(2)) {
    te::Tensor b = ctx.in(2), acc = conv;
    conv = te::compute("conv_bias", os, [acc, b, m](const Indices& o) { return acc(o) + b({o[1] * Expr(m) + o[4]}); });
  }
  ctx.set_output(0, conv);
}

}  // namespace

void lower_conv(OpContext& ctx) {
  // int32 too: ConvInteger's exact fallback (graph/pass_quantize.cpp).
  if (ctx.in_dtype(0) != graph::DType::I32) ctx.require_float();
  const graph::Node& n = ctx.node();
  if (n.attr_string("kiln_layout", "") == "NCHWc") return lower_conv_blocked(ctx);
  te::Tensor x = ctx.in(0), w = ctx.in(1);
  const te::Dims xs = x.dims(), os = ctx.out_dims(0);
  const graph::Shape& ws = w.shape();
  user_assert(xs.size() >= 3 && xs.size() <= 5 && ws.size() == xs.size())
      << n.describe() << ": input and weight must be 3-D to 5-D with the same rank";
  size_t k = xs.size() - 2;
  int64_t group = n.attr_int("group", 1);
  int64_t C = static_extent(xs[1], "the input channel count"), M = ws[0], Cg = ws[1];
  user_assert(group >= 1 && C % group == 0 && M % group == 0 && Cg * group == C)
      << n.describe() << ": group " << group << " does not divide channels " << C << " and filters " << M;
  std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  std::vector<int64_t> strides = n.attr_ints("strides", std::vector<int64_t>(k, 1));
  std::vector<int64_t> dilations = n.attr_ints("dilations", std::vector<int64_t>(k, 1));
  user_assert(strides.size() == k && dilations.size() == k) << n.describe() << ": strides/dilations rank mismatch";
  std::vector<Expr> pads = spatial_pads(ctx, xs, os, kernel, strides, dilations);
  int64_t Mg = M / group;
  tir::Type t = x.dtype();

  // The zero-padded input as a tensor of its own (inlined: the same reads
  // as padding each one), so that the conv's reads of it are affine: what a
  // GPU shared-memory tile needs to bound them.
  te::Dims ps = {xs[0], xs[1]};
  for (size_t i = 0; i < k; i++)
    ps.push_back(tir::simplify(tir::max(xs[2 + i] + pads[i] + pads[k + i],
                                        (os[2 + i] - Expr(1)) * Expr(strides[i]) + Expr((kernel[i] - 1) * dilations[i] + 1))));
  bool unpadded = true;  // (then every read lies inside the input: no bounds checks)
  for (auto& p : pads) unpadded = unpadded && tir::as_const_int(p) && *tir::as_const_int(p) == 0;
  te::Tensor xpad = te::compute("xpad", ps, [=](const Indices& p) {
    Indices xi = {p[0], p[1]};
    for (size_t i = 0; i < k; i++) xi.push_back(p[2 + i] - pads[i]);
    return unpadded ? x(xi) : padded_read(x, xi, tir::make_const(t, 0));
  });
  graph::Shape rshape = {Cg};
  rshape.insert(rshape.end(), kernel.begin(), kernel.end());
  te::Tensor conv = te::reduce("conv", os, rshape, te::ReduceKind::Sum, t, [=](const Indices& o, const Indices& r) {
    Indices xi = {o[0], (o[1] / Expr(Mg)) * Expr(Cg) + r[0]};
    Indices wi = {o[1], r[0]};
    for (size_t i = 0; i < k; i++) {
      xi.push_back(o[2 + i] * Expr(strides[i]) + r[1 + i] * Expr(dilations[i]));
      wi.push_back(r[1 + i]);
    }
    return xpad(xi) * w(wi);
  });
  bool no_pads = true;
  for (auto& p : pads) no_pads = no_pads && tir::as_const_int(p) && *tir::as_const_int(p) == 0;
  bool pointwise = k == 2 && kernel[0] == 1 && kernel[1] == 1 && strides == std::vector<int64_t>{1, 1} && no_pads;
  if (k == 2) ctx.schedule_reduction(conv, pointwise ? schedule_conv1x1_cpu : schedule_conv2d_cpu);
  bool shared = ctx.gpu_shared_memory() && group == 1;
  bool depthwise = group == C && group == M;
  tune::Tuning* tuning = ctx.tuning();
  std::string variant = tune::conv_variant(strides, dilations) +
                        (depthwise ? " dw" : group > 1 ? " g" + std::to_string(group) : std::string());
  if (k == 2) ctx.schedule_reduction_gpu(conv, [=](te::Stage& s) { schedule_conv2d_gpu(s, xpad, w, shared, depthwise, tuning, variant); });
  if (ctx.has_input(2)) {
    te::Tensor b = ctx.in(2), acc = conv;
    conv = te::compute("conv_bias", os, [acc, b](const Indices& o) { return acc(o) + b({o[1]}); });
  }
  ctx.set_output(0, conv);
}

// ConvTranspose: out[n, m, o...] = bias[m] + sum over c, k of
//   x[n, g*Cg + c, i...] * w[g*Cg + c, m % Mg, k...]  where o = i*s - pad + k*d,
// i.e. only the (c, k) for which (o + pad - k*d) is a multiple of s inside x.
void lower_conv_transpose(OpContext& ctx) {
  ctx.require_float();
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0), w = ctx.in(1);
  graph::Shape xs = x.shape(), ws = w.shape(), os = ctx.out_shape(0);
  user_assert(xs.size() >= 3 && xs.size() <= 5 && ws.size() == xs.size())
      << n.describe() << ": input and weight must be 3-D to 5-D with the same rank";
  size_t k = xs.size() - 2;
  int64_t group = n.attr_int("group", 1);
  int64_t C = xs[1], Mg = ws[1];
  user_assert(group >= 1 && C % group == 0 && ws[0] == C) << n.describe() << ": weight does not match input channels and group";
  int64_t Cg = C / group;
  std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  std::vector<int64_t> strides = n.attr_ints("strides", std::vector<int64_t>(k, 1));
  std::vector<int64_t> dilations = n.attr_ints("dilations", std::vector<int64_t>(k, 1));
  std::vector<int64_t> out_pad = n.attr_ints("output_padding", std::vector<int64_t>(k, 0));
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> pad_begin(k, 0);
  if (n.has_attr("pads") && auto_pad == "NOTSET") {
    std::vector<int64_t> pads = n.attr_ints("pads", {});
    user_assert(pads.size() == 2 * k) << n.describe() << ": 'pads' must have " << 2 * k << " entries";
    for (size_t i = 0; i < k; i++) pad_begin[i] = pads[i];
  } else if (auto_pad != "VALID") {
    for (size_t i = 0; i < k; i++) {
      int64_t total = strides[i] * (xs[2 + i] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1 - os[2 + i];
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor(total / 2), as ONNX's reference
      pad_begin[i] = auto_pad == "SAME_UPPER" ? half : total - half;
    }
  }
  tir::Type t = x.dtype();
  // Output o takes input (o + pad - r*d) / s through tap r only where s
  // divides o + pad - r*d. Undilated, those taps are r = phase + j*s with
  // phase = (o + pad) mod s, reading input (o + pad) div s - j: reducing over
  // j (ceil(k / s) values) instead of all k taps skips the (s - 1) / s of
  // them that never match (3/4 for a 2x2 stride-2 upsampling) and the
  // per-tap divisibility test. Dilated: every tap, tested.
  bool undilated = true;
  for (size_t i = 0; i < k; i++) undilated &= dilations[i] == 1;
  graph::Shape rshape = {Cg};
  for (size_t i = 0; i < k; i++) rshape.push_back(undilated ? (kernel[i] + strides[i] - 1) / strides[i] : kernel[i]);
  te::Tensor conv = te::reduce("convtranspose", os, rshape, te::ReduceKind::Sum, t, [=](const Indices& o, const Indices& r) {
    Expr g = o[1] / Expr(Mg);
    Expr c = g * Expr(Cg) + r[0];
    Indices xi = {o[0], c}, wi = {c, o[1] % Expr(Mg)};
    Expr ok = tir::IntImm::make(tir::Bool(), 1);
    for (size_t i = 0; i < k; i++) {
      Expr s = Expr(strides[i]), shifted = o[2 + i] + Expr(pad_begin[i]);
      if (undilated) {
        Expr tap = shifted % s + r[1 + i] * s;
        if (kernel[i] % strides[i] != 0) {  // taps past the kernel (k not a multiple of s) add nothing
          ok = ok && tap < Expr(kernel[i]);
          tap = min(tap, Expr(kernel[i] - 1));  // in bounds, even where the select discards it
        }
        xi.push_back(shifted / s - r[1 + i]);
        wi.push_back(tap);
      } else {
        Expr num = shifted - r[1 + i] * Expr(dilations[i]);
        ok = ok && tir::EQ::make(num % s, Expr(0));
        xi.push_back(num / s);
        wi.push_back(r[1 + i]);
      }
    }
    return tir::select(ok, padded_read(x, xi, tir::make_const(t, 0)) * w(wi), tir::make_const(t, 0));
  });
  if (ctx.has_input(2)) {
    te::Tensor b = ctx.in(2), acc = conv;
    user_assert(b.shape() == graph::Shape{os[1]}) << n.describe() << ": bias B must be 1-D with " << os[1]
                                                  << " entries (the output channels)";
    conv = te::compute("convtranspose_bias", os, [acc, b](const Indices& o) { return acc(o) + b({o[1]}); });
  }
  ctx.set_output(0, conv);
}

// Col2Im: the blocks (columns) of x [N, C * prod(block), L] summed back into
// images [N, C, image...]. Image position o takes block tap r from column
// (o + pad - r*d) / s wherever s divides it and the column lies in the
// grid of blocks; image_shape and block_shape are constants or symbols
// (--input-value, or read at run time: import/infer_dims.cpp).
void lower_col2im(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0);
  const te::Dims os = ctx.out_dims(0);
  std::vector<Expr> image = int_exprs(ctx, 1, "Col2Im image_shape"), block = int_exprs(ctx, 2, "Col2Im block_shape");
  const size_t k = image.size();
  std::vector<int64_t> dil = n.attr_ints("dilations", std::vector<int64_t>(k, 1));
  std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(2 * k, 0));
  std::vector<int64_t> strides = n.attr_ints("strides", std::vector<int64_t>(k, 1));
  user_assert(os.size() == 2 + k && block.size() == k && dil.size() == k && pads.size() == 2 * k && strides.size() == k)
      << n.describe() << ": image_shape, block_shape, dilations, strides and pads must have one entry per image axis (pads two)";
  te::Dims rdims, grid;  // the block's taps; the blocks along each image axis
  for (size_t a = 0; a < k; a++) {
    Expr b = tir::simplify(tir::max(block[a], Expr(1)));
    rdims.push_back(b);
    grid.push_back(tir::simplify((image[a] + Expr(pads[a] + pads[a + k]) - Expr(dil[a]) * (b - Expr(1)) - Expr(1)) /
                                     Expr(strides[a]) + Expr(1)));
  }
  tir::Type t = x.dtype();
  ctx.set_output(0, te::reduce("col2im", os, rdims, te::ReduceKind::Sum, t, [=](const Indices& o, const Indices& r) {
    Expr ok = tir::IntImm::make(tir::Bool(), 1);
    Indices col;
    for (size_t a = 0; a < k; a++) {
      Expr num = o[2 + a] + Expr(pads[a]) - r[a] * Expr(dil[a]), s = Expr(strides[a]);
      ok = ok && tir::EQ::make(num % s, Expr(0)) && Expr(0) <= num && num / s < grid[a];
      col.push_back(num / s);
    }
    Indices xi = {o[0], o[1] * te::num_elements(rdims) + te::flat_index(rdims, r), te::flat_index(grid, col)};
    return tir::select(ok, padded_read(x, xi, tir::make_const(t, 0)), tir::make_const(t, 0));
  }));
}

// DeformConv (opsets 19, 22; any number k of spatial axes): a convolution
// whose taps move. X [N, C, D...], W [M, C/group, K...], offset
// [N, G*prod(K)*k, O...] (G = offset_group), B [M], mask [N, G*prod(K), O...]:
//   out[n, m, o...] = B[m] + sum_{c, r...} W[m, c, r...] * mask[n, g*P + t, o...]
//                     * X~[n, ch, o*s - pad + r*d + offset[n, (g*P + t)*k + a, o...] (per axis a)]
// with ch = (m / (M/group)) * C/group + c, g = ch / (C/G) its offset group,
// P = prod(K), t the tap r's flat index, and X~ X sampled multilinearly at
// the real position (corners outside X read 0), as ONNX's reference does
// (GridSample, align_corners, zeros padding). Without mask every tap weighs 1.
void lower_deform_conv(OpContext& ctx) {
  ctx.require_float();
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0), w = ctx.in(1), off = ctx.in(2);
  const te::Dims xs = x.dims(), os = ctx.out_dims(0), offs = ctx.in_dims(2);
  const graph::Shape ws = w.shape();
  user_assert(xs.size() >= 3 && ws.size() == xs.size() && offs.size() == xs.size() && os.size() == xs.size())
      << n.describe() << ": X, W, offset and the output must have the same rank (3 or more); fix the model";
  const size_t k = xs.size() - 2;
  const int64_t group = n.attr_int("group", 1), og = n.attr_int("offset_group", 1);
  const int64_t C = static_extent(xs[1], "the input channel count"), M = ws[0], Cg = ws[1];
  user_assert(group >= 1 && M % group == 0 && Cg * group == C)
      << n.describe() << ": group " << group << " does not match channels " << C << ", filters " << M
      << " and W's " << Cg << " channels per group";
  user_assert(og >= 1 && C % og == 0) << n.describe() << ": offset_group " << og << " does not divide the " << C
                                      << " input channels";
  std::vector<int64_t> kernel = n.attr_ints("kernel_shape", std::vector<int64_t>(ws.begin() + 2, ws.end()));
  std::vector<int64_t> strides = n.attr_ints("strides", std::vector<int64_t>(k, 1));
  std::vector<int64_t> dilations = n.attr_ints("dilations", std::vector<int64_t>(k, 1));
  std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(2 * k, 0));
  user_assert(kernel == std::vector<int64_t>(ws.begin() + 2, ws.end()) && strides.size() == k && dilations.size() == k &&
              pads.size() == 2 * k)
      << n.describe() << ": kernel_shape must match W's spatial shape, strides and dilations need " << k
      << " entries and pads " << 2 * k;
  int64_t taps = 1;
  for (int64_t e : kernel) taps *= e;
  user_assert(static_extent(offs[1], "offset's channel count") == og * taps * (int64_t)k)
      << n.describe() << ": offset needs offset_group * prod(kernel_shape) * " << k << " = " << og * taps * (int64_t)k
      << " channels";
  const bool has_mask = ctx.has_input(4);
  te::Tensor mask = has_mask ? ctx.in(4) : te::Tensor();
  if (has_mask)
    user_assert(mask.ndim() == xs.size() && static_extent(ctx.in_dims(4)[1], "mask's channel count") == og * taps)
        << n.describe() << ": mask needs offset_group * prod(kernel_shape) = " << og * taps << " channels";
  const int64_t Mg = M / group, Cog = C / og;
  const tir::Type t = x.dtype();
  te::Dims kd;
  for (int64_t e : kernel) kd.push_back(Expr(e));
  graph::Shape rshape = {Cg};
  rshape.insert(rshape.end(), kernel.begin(), kernel.end());
  te::Tensor conv = te::reduce("deform_conv", os, rshape, te::ReduceKind::Sum, t, [=](const Indices& o, const Indices& r) {
    Expr ch = (o[1] / Expr(Mg)) * Expr(Cg) + r[0];
    Expr tap = (ch / Expr(Cog)) * Expr(taps) + te::flat_index(kd, Indices(r.begin() + 1, r.end()));
    auto at = [&](const Expr& channel) {  // [n, channel, o...]
      Indices i = {o[0], channel};
      i.insert(i.end(), o.begin() + 2, o.end());
      return i;
    };
    std::vector<Expr> p(k);
    Indices wi = {o[1], r[0]};
    for (size_t a = 0; a < k; a++) {
      Expr base = o[2 + a] * Expr(strides[a]) - Expr(pads[a]) + r[1 + a] * Expr(dilations[a]);
      p[a] = tir::cast(t, base) + off(at(tap * Expr((int64_t)k) + Expr((int64_t)a)));
      wi.push_back(r[1 + a]);
    }
    Expr v = linear_sample(p, [&](const std::vector<Expr>& c) {
      Indices xi = {o[0], ch};
      for (const Expr& e : c) xi.push_back(tir::cast(tir::Index(), e));
      return padded_read(x, xi, tir::make_const(t, 0));
    });
    Expr term = w(wi) * v;
    return has_mask ? term * mask(at(tap)) : term;
  });
  if (ctx.has_input(3)) {
    te::Tensor b = ctx.in(3), acc = conv;
    user_assert(b.shape() == graph::Shape{M}) << n.describe() << ": bias B must be 1-D with " << M << " entries";
    conv = te::compute("deform_conv_bias", os, [acc, b](const Indices& o) { return acc(o) + b({o[1]}); });
  }
  ctx.set_output(0, conv);
}

}  // namespace kiln::lower
