// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool (NCHW, 1-D to 3-D).
//
// Window positions outside the input (padding, or past the end with
// ceil_mode) never contribute to a max. For an average, count_include_pad=1
// counts positions inside the padded extent, otherwise only real ones.
#include <limits>

#include "lower/op_lowering.h"
#include "support/diagnostics.h"

namespace kiln::lower {
namespace {

void lower_pool(OpContext& ctx, bool is_max) {
  ctx.require_float32();
  const graph::Node& n = ctx.node();
  user_assert(n.outputs.size() < 2 || n.outputs[1] < 0)
      << n.describe() << ": the Indices output of MaxPool is not supported yet";
  const graph::Shape& xs = ctx.in_shape(0);
  const graph::Shape& os = ctx.out_shape(0);
  user_assert(xs.size() >= 3 && xs.size() <= 5) << n.describe() << ": input must be 3-D to 5-D";
  size_t k = xs.size() - 2;
  std::vector<int64_t> kernel = n.attr_ints("kernel_shape", {});
  user_assert(kernel.size() == k) << n.describe() << ": 'kernel_shape' must have " << k << " entries";
  std::vector<int64_t> strides = n.attr_ints("strides", std::vector<int64_t>(k, 1));
  std::vector<int64_t> dilations = n.attr_ints("dilations", std::vector<int64_t>(k, 1));
  user_assert(strides.size() == k && dilations.size() == k) << n.describe() << ": strides/dilations rank mismatch";
  user_assert(n.attr_int("storage_order", 0) == 0) << n.describe() << ": storage_order=1 is not supported";
  std::vector<int64_t> pads = spatial_pads(ctx, xs, os, kernel, strides, dilations);
  bool include_pad = n.attr_int("count_include_pad", 0) != 0;

  KernelDef& kd = ctx.new_kernel(is_max ? "maxpool" : "avgpool");
  tir::Buffer x = ctx.param(kd, ctx.input(0), Access::Read);
  tir::Buffer out = ctx.param(kd, ctx.output(0), Access::Write);

  kd.body = loop_nest("i", os, [&](const Indices& o) {
    Indices pos;  // window position of each spatial reduce index, as a function of r
    auto positions = [&](const Indices& r) {
      Indices p;
      for (size_t i = 0; i < k; i++) p.push_back(o[2 + i] * Expr(strides[i]) - Expr(pads[i]) + r[i] * Expr(dilations[i]));
      return p;
    };
    graph::Shape spatial(xs.begin() + 2, xs.end());
    std::vector<int64_t> zeros(k, 0);
    if (is_max) {
      float lowest = -std::numeric_limits<float>::infinity();
      return reduce(
          "acc", tir::Float(32), Expr(lowest), kernel,
          [&](const Expr& acc, const Indices& r) {
            Indices xi = {o[0], o[1]};
            Indices p = positions(r);
            xi.insert(xi.end(), p.begin(), p.end());
            return tir::max(acc, padded_load(x, xs, xi, Expr(lowest)));
          },
          [&](const Expr& acc) { return tir::Store::make(out, flat_index(os, o), acc); });
    }
    // Average: sum and count in one pass (count kept as float).
    tir::Buffer cnt = tir::make_buffer("count", tir::Float(32), 1, -1);
    Expr cnt_v = tir::Load::make(cnt, Expr(0));
    std::vector<int64_t> lo(k), hi(k);
    for (size_t i = 0; i < k; i++) {
      lo[i] = include_pad ? -pads[i] : 0;
      hi[i] = include_pad ? spatial[i] + pads[i + k] : spatial[i];
    }
    Stmt body = reduce(
        "acc", tir::Float(32), Expr(0.0f), kernel,
        [&](const Expr& acc, const Indices& r) {
          Indices xi = {o[0], o[1]};
          Indices p = positions(r);
          xi.insert(xi.end(), p.begin(), p.end());
          return acc + padded_load(x, xs, xi, Expr(0.0f));
        },
        [&](const Expr& acc) { return tir::Store::make(out, flat_index(os, o), acc / cnt_v); });
    // The count: a second small reduction before the store (cheap, exact).
    Stmt count = loop_nest(
        "c", kernel,
        [&](const Indices& r) {
          Expr inside = in_range(positions(r), lo, hi);
          return tir::Store::make(cnt, Expr(0), cnt_v + tir::select(inside, Expr(1.0f), Expr(0.0f)));
        },
        false);
    return tir::Allocate::make(cnt, tir::Block::make({tir::Store::make(cnt, Expr(0), Expr(0.0f)), count, body}));
  });
}

void lower_global_pool(OpContext& ctx, bool is_max) {
  ctx.require_float32();
  const graph::Shape& xs = ctx.in_shape(0);
  const graph::Shape& os = ctx.out_shape(0);
  user_assert(xs.size() >= 3) << ctx.node().describe() << ": input must be at least 3-D";
  graph::Shape spatial(xs.begin() + 2, xs.end());
  double count = (double)graph::num_elements(spatial);
  KernelDef& kd = ctx.new_kernel(is_max ? "globalmaxpool" : "globalavgpool");
  tir::Buffer x = ctx.param(kd, ctx.input(0), Access::Read);
  tir::Buffer out = ctx.param(kd, ctx.output(0), Access::Write);
  float lowest = -std::numeric_limits<float>::infinity();
  kd.body = loop_nest("i", os, [&](const Indices& o) {
    return reduce(
        "acc", tir::Float(32), is_max ? Expr(lowest) : Expr(0.0f), spatial,
        [&](const Expr& acc, const Indices& r) {
          Indices xi = {o[0], o[1]};
          xi.insert(xi.end(), r.begin(), r.end());
          Expr v = tir::Load::make(x, flat_index(xs, xi));
          return is_max ? tir::max(acc, v) : acc + v;
        },
        [&](const Expr& acc) {
          return tir::Store::make(out, flat_index(os, o), is_max ? acc : acc / Expr((float)count));
        });
  });
}

}  // namespace

void register_pool_ops(std::map<std::string, OpLowering>& r) {
  r["MaxPool"] = [](OpContext& c) { lower_pool(c, true); };
  r["AveragePool"] = [](OpContext& c) { lower_pool(c, false); };
  r["GlobalAveragePool"] = [](OpContext& c) { lower_global_pool(c, false); };
  r["GlobalMaxPool"] = [](OpContext& c) { lower_global_pool(c, true); };
}

}  // namespace kiln::lower
