// fold-affine: folds a per-output-channel Mul, Add or Sub by a constant that
// follows a Conv into the Conv's weights and bias.
//
//   Conv(x, W, b) * c  = Conv(x, W * c[oc], b * c[oc])
//   Conv(x, W, b) + c  = Conv(x, W, b + c[oc])     (Sub: b - c[oc])
// for a constant c that is the same across batch and space: a scalar or a
// shape like [C,1,1] or [1,C,1,1] (right-aligned against the Conv output,
// every axis but the channel axis 1). Exact up to float rounding (the new
// weights are computed in double and rounded once), the same kind of
// rewrite as the BatchNormalization fold; models with an explicit
// normalization or scaling layer after a convolution lose that layer.
// Conditions: W (and b, if present) constants, the Conv output read only by
// the Mul/Add/Sub and not a model output, the Mul/Add/Sub's output of the
// Conv output's shape and dtype (no broadcasting up).
#include "graph/passes.h"

namespace kiln::graph {

namespace {

// Per-channel values of constant `c` against a conv output of `out` shape; empty if not per-channel.
std::vector<double> per_channel(const Value& c, const Shape& out) {
  if (!c.is_constant() || c.shape.size() > out.size() || out.size() < 2) return {};
  int64_t C = out[1];
  size_t off = out.size() - c.shape.size();
  int channel_axis_len = 1;
  for (size_t k = 0; k < c.shape.size(); k++) {
    size_t axis = k + off;
    if (axis == 1) channel_axis_len = (int)c.shape[k];
    else if (c.shape[k] != 1) return {};
  }
  if (channel_axis_len != 1 && channel_axis_len != C) return {};
  std::vector<double> v((size_t)C);
  for (int64_t i = 0; i < C; i++) v[(size_t)i] = c.const_at(channel_axis_len == 1 ? 0 : i);
  return v;
}

}  // namespace

bool pass_fold_affine(Graph& g, PassContext& ctx) {
  std::vector<int> uses = use_counts(g);
  NodeRemoval r(g);
  for (size_t i = 0; i < g.nodes.size(); i++) {
    const Node& n = g.nodes[i];
    const Op op = n.traits().op;
    if ((op != Op::Mul && op != Op::Add && op != Op::Sub) || n.inputs.size() != 2 || n.outputs.size() != 1) continue;
    if (n.inputs[0] < 0 || n.inputs[1] < 0 || n.outputs[0] < 0) continue;
    // Which side is the Conv output?
    int side = -1;
    for (int s = 0; s < 2; s++) {
      int v = n.inputs[s];
      int p = g.values[v].producer;
      if (p >= 0 && g.nodes[p].is(Op::Conv) && g.nodes[p].outputs.size() == 1 && g.values[n.inputs[1 - s]].is_constant())
        side = s;
    }
    if (side < 0 || (op == Op::Sub && side != 0)) continue;
    int x = n.inputs[side], y = n.outputs[0];
    const Value& xv = g.values[x];
    if (uses[x] != 1 || is_model_output(g, x)) continue;
    if (xv.dtype != DType::F32 && xv.dtype != DType::F64) continue;
    if (!g.same_dims(g.values[y].dim_exprs(), xv.dim_exprs()) || g.values[y].dtype != xv.dtype) continue;
    if (xv.is_dynamic() && (xv.dims.size() < 2 || !tir::as_const_int(xv.dims[1]))) continue;  // channels must be static
    const Value& cv = g.values[n.inputs[1 - side]];
    if (cv.dtype != xv.dtype) continue;
    std::vector<double> c = per_channel(cv, xv.shape);
    if (c.empty()) continue;
    int p = xv.producer;
    // Mul: out * c; Add: out + c; Sub: out - c.
    std::vector<double> scale, shift(c.size(), 0.0);
    if (op == Op::Mul) scale = c;
    else
      for (size_t oc = 0; oc < c.size(); oc++) shift[oc] = op == Op::Add ? c[oc] : -c[oc];
    const Node& conv = g.nodes[p];
    if (conv.inputs.size() < 2 || conv.inputs[1] < 0 || g.values[conv.inputs[1]].dtype != xv.dtype) continue;
    if (!fold_channel_affine_into_conv(g, g.nodes[p], scale, shift, op == Op::Mul ? "scaled" : "shifted")) continue;
    absorb_consumer(g, p, (int)i, r.remove);
    r.count++;
  }
  return r.finish(g, ctx, "folded");
}

}  // namespace kiln::graph
