// fuse-layer-norm: the layer normalization that exporters write out as
// elementwise operators becomes one LayerNormalization node, which lowers to
// per-row statistics with vectorized reductions (lower/ops_norm.cpp) instead
// of five or more kernels that each read the whole tensor.
//
//   m = ReduceMean(x, axes = the last k)      d = Sub(x, m)
//   v = ReduceMean(Pow(d, 2), same axes)      s = Sqrt(Add(v, eps))
//   n = Div(d, s)      [y = Mul(n, gamma)]    [z = Add(y, beta)]
// becomes LayerNormalization(x, gamma or ones, beta, axis = rank - k,
// epsilon = eps). This is how torch exports a hand-written LayerNorm (and
// nn.LayerNorm before opset 17), and how TF/Keras converters write theirs.
// Conditions: float32; m, d's square, v, the Add, the Sqrt and n read only
// inside the pattern (d by exactly the Pow and the Div), none a model
// output; eps, gamma and beta constants; the exponent exactly 2; keepdims
// on; gamma and beta broadcast over the normalized axes only (their result
// has x's dimensions). Same arithmetic as the pattern up to float rounding
// (the variance is the two-pass one in both).
#include <algorithm>

#include "graph/passes.h"

namespace kiln::graph {

namespace {

// The producer of input `slot` of node n if it is an `op` node, else -1.
int producer_of(const Graph& g, const Node& n, size_t slot, Op op) {
  if (slot >= n.inputs.size() || n.inputs[slot] < 0) return -1;
  int p = g.values[n.inputs[slot]].producer;
  return p >= 0 && g.nodes[p].is(op) && g.nodes[p].outputs.size() >= 1 ? p : -1;
}

// The first axis of a ReduceMean over the last axes of its input (keepdims
// on), or -1.
int64_t reduced_tail(const Graph& g, const Node& n) {
  if (n.attr_int("keepdims", 1) != 1 || n.inputs.empty() || n.inputs[0] < 0) return -1;
  int64_t rank = (int64_t)g.values[n.inputs[0]].shape.size();
  std::vector<int64_t> axes;
  if (n.has_attr("axes")) {
    axes = n.attr_ints("axes", {});
  } else if (n.inputs.size() > 1 && n.inputs[1] >= 0) {
    const Value& a = g.values[n.inputs[1]];
    if (!a.is_constant()) return -1;
    for (int64_t i = 0; i < a.elements(); i++) axes.push_back(a.const_int_at(i));
  }
  if (axes.empty() || rank == 0) return -1;
  for (auto& a : axes) {
    if (a < -rank || a >= rank) return -1;
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  for (size_t i = 0; i < axes.size(); i++)
    if (axes[i] != rank - (int64_t)axes.size() + (int64_t)i) return -1;
  return axes.front();
}

// The other input of binary node n (one of whose inputs is v), or -1.
int other_input(const Node& n, int v) {
  if (n.inputs.size() != 2) return -1;
  return n.inputs[0] == v ? n.inputs[1] : n.inputs[1] == v ? n.inputs[0] : -1;
}

}  // namespace

bool pass_fuse_layer_norm(Graph& g, PassContext& ctx) {
  std::vector<int> uses = use_counts(g);
  NodeRemoval r(g);
  for (size_t i = 0; i < g.nodes.size(); i++) {
    // Anchor: n = Div(d, s) with s = Sqrt(Add(v, eps)).
    const Node& div = g.nodes[i];
    if (r.remove[i] || !div.is(Op::Div) || div.inputs.size() != 2 || div.outputs.size() != 1 || div.outputs[0] < 0) continue;
    int sqrt = producer_of(g, div, 1, Op::Sqrt);
    int sub = producer_of(g, div, 0, Op::Sub);
    if (sqrt < 0 || sub < 0) continue;
    int add_eps = producer_of(g, g.nodes[sqrt], 0, Op::Add);
    if (add_eps < 0) continue;
    const Node& ae = g.nodes[add_eps];
    double eps = 0;
    int var_side = scalar_input(g, ae, 1, &eps) ? 0 : scalar_input(g, ae, 0, &eps) ? 1 : -1;
    if (var_side < 0 || !(eps >= 0)) continue;
    int mean2 = producer_of(g, ae, (size_t)var_side, Op::ReduceMean);
    if (mean2 < 0) continue;
    int pow = producer_of(g, g.nodes[mean2], 0, Op::Pow);
    double exponent = 0;
    if (pow < 0 || !scalar_input(g, g.nodes[pow], 1, &exponent) || exponent != 2) continue;
    const Node& s = g.nodes[sub];
    int d = s.outputs[0];
    if (g.nodes[pow].inputs[0] != d || s.inputs.size() != 2) continue;
    int mean1 = producer_of(g, s, 1, Op::ReduceMean);
    if (mean1 < 0) continue;
    int x = s.inputs[0];
    if (x < 0 || g.nodes[mean1].inputs[0] != x) continue;
    const Value& xv = g.values[x];
    if (xv.dtype != DType::F32) continue;
    int64_t axis = reduced_tail(g, g.nodes[mean1]);
    if (axis < 0 || reduced_tail(g, g.nodes[mean2]) != axis) continue;
    // Every intermediate read only inside the pattern.
    int m = g.nodes[mean1].outputs[0], p = g.nodes[pow].outputs[0], v = g.nodes[mean2].outputs[0];
    int e = ae.outputs[0], sq = g.nodes[sqrt].outputs[0], n = div.outputs[0];
    bool inside = uses[d] == 2 && !is_model_output(g, d);
    for (int w : {m, p, v, e, sq}) inside &= only_reader(g, uses, w) >= 0;
    if (!inside || !g.same_dims(g.values[n].dim_exprs(), xv.dim_exprs())) continue;
    // Optional scale and bias: constants whose result keeps x's dimensions.
    std::vector<int> absorbed = {mean1, sub, pow, mean2, add_eps, sqrt};
    int last = (int)i, gamma = -1, beta = -1, out = n;
    auto affine = [&](Op op, int* param) {
      int reader = only_reader(g, uses, out);
      if (reader < 0 || !g.nodes[reader].is(op) || g.nodes[reader].outputs.size() != 1) return;
      int c = other_input(g.nodes[reader], out);
      int result = g.nodes[reader].outputs[0];
      if (c < 0 || !g.values[c].is_constant() || g.values[c].dtype != DType::F32 || result < 0 ||
          g.values[c].shape.size() > xv.shape.size() || !g.same_dims(g.values[result].dim_exprs(), xv.dim_exprs()))
        return;
      // The constant must not vary along the axes before `axis`.
      const Shape& cs = g.values[c].shape;
      for (size_t k = 0; k < cs.size(); k++)
        if ((int64_t)(k + xv.shape.size() - cs.size()) < axis && cs[k] != 1) return;
      absorbed.push_back(last);
      last = reader;
      *param = c;
      out = result;
    };
    affine(Op::Mul, &gamma);
    if (gamma >= 0) affine(Op::Add, &beta);
    if (gamma < 0) {  // LayerNormalization needs a scale: ones over the normalized axes
      Shape ones_shape(xv.shape.begin() + axis, xv.shape.end());
      int64_t count = num_elements(ones_shape);
      if (xv.is_dynamic()) {
        bool static_tail = true;
        for (size_t k = (size_t)axis; k < xv.dims.size(); k++) static_tail &= tir::as_const_int(xv.dims[k]) != nullptr;
        if (!static_tail) continue;
      }
      gamma = g.add_constant(g.unique_name(div.name + "_ln_scale"), DType::F32, ones_shape,
                             doubles_to_bytes(std::vector<double>((size_t)count, 1.0), DType::F32));
    }
    // The last node of the pattern becomes the LayerNormalization.
    Node& ln = g.nodes[last];
    std::string name = ln.name;
    auto guards = ln.guards;  // a run-time If's branch stays predicated
    ln = Node();
    ln.op = "LayerNormalization";
    ln.name = name;
    ln.guards = guards;
    ln.attrs["axis"].kind = Attr::Kind::Int;
    ln.attrs["axis"].i = axis;
    ln.attrs["epsilon"].kind = Attr::Kind::Float;
    ln.attrs["epsilon"].f = eps;
    ln.inputs = {x, gamma};
    if (beta >= 0) ln.inputs.push_back(beta);
    ln.outputs = {out};
    for (int k : absorbed) r.remove[k] = true;
    r.remove[last] = false;
    r.count++;
  }
  return r.finish(g, ctx, "layer norms fused");
}

}  // namespace kiln::graph
