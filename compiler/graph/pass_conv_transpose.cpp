// conv-transpose: a ConvTranspose whose kernel equals its stride (the 2x2,
// stride-2 upsampling of segmentation and text-detection heads: U-Net, DB)
// becomes a 1x1 Conv to M*kh*kw channels and a pixel shuffle.
//
// With kernel == stride and no padding, every output pixel takes exactly one
// input pixel and one tap: out[n, m, h*s + th, w*s + tw] =
// sum_c x[n, c, h, w] * W[c, m, th, tw] + b[m]. That is a 1x1 convolution
// to M*kh*kw channels (W'[(m*kh + th)*kw + tw, c] = W[c, m, th, tw], bias
// b[m] repeated) followed by Reshape [N, M, kh, kw, H, W], Transpose to
// [N, M, H, kh, W, kw] and Reshape [N, M, H*kh, W*kw]: the convolution runs
// on the blocked convolution schedules and the shuffle is a copy, where the
// ConvTranspose's own kernel is a scalar reduction. Needs constant weights,
// group 1, no dilation, padding or output padding, 2-D.
#include <cstring>

#include "graph/passes.h"
#include "support/diagnostics.h"

namespace kiln::graph {

namespace {

Node make_node(const std::string& op, const std::string& name, std::vector<int> inputs, int output) {
  Node n;
  n.op = op;
  n.name = name;
  n.inputs = std::move(inputs);
  n.outputs = {output};
  return n;
}

// A value of dimensions `dims` (run-time ones when some are symbolic).
int new_value(Graph& g, const std::string& name, DType dtype, const DimExprs& dims) {
  Value v;
  v.name = g.unique_name(name);
  v.dtype = dtype;
  int id = g.add_value(std::move(v));
  g.set_dims(id, dims);
  return id;
}

// Reshape's target shape: the largest values of run-time dimensions (the
// output value's own dimensions are what lowering reads).
int shape_constant(Graph& g, const std::string& name, int like) {
  const Shape& shape = g.values[like].shape;
  std::vector<uint8_t> b(shape.size() * 8);
  memcpy(b.data(), shape.data(), b.size());
  return g.add_constant(name, DType::I64, {(int64_t)shape.size()}, std::move(b));
}

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}

// Whether ConvTranspose `n` is a 2-D upsampling with kernel == stride, constant float32 weights.
bool fits(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2 || n.inputs[0] < 0 || n.inputs[1] < 0 || n.outputs.size() != 1 || n.outputs[0] < 0) return false;
  const Value &x = g.values[n.inputs[0]], &w = g.values[n.inputs[1]], &y = g.values[n.outputs[0]];
  if (x.dtype != DType::F32 || !w.is_constant() || w.dtype != DType::F32 || x.shape.size() != 4 || w.shape.size() != 4)
    return false;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    const Value& b = g.values[n.inputs[2]];
    if (!b.is_constant() || b.elements() != w.shape[1]) return false;  // the lowering reports a bad bias
  }
  std::vector<int64_t> kernel = {w.shape[2], w.shape[3]};
  if (n.attr_int("group", 1) != 1 || w.shape[0] != x.shape[1]) return false;
  if (n.attr_ints("strides", {1, 1}) != kernel || !all_equal(n.attr_ints("dilations", {1, 1}), 1)) return false;
  if (!all_equal(n.attr_ints("pads", {0, 0, 0, 0}), 0) || !all_equal(n.attr_ints("output_padding", {0, 0}), 0))
    return false;
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") return false;
  if (n.has_attr("output_shape")) return false;
  DimExprs xd = x.dim_exprs();
  DimExprs want = {xd[0], tir::Expr(w.shape[1]), xd[2] * tir::Expr(kernel[0]), xd[3] * tir::Expr(kernel[1])};
  return g.same_dims(y.dim_exprs(), want) && y.dtype == DType::F32 && tir::as_const_int(xd[1]);
}

// The nodes replacing ConvTranspose `n` (its output value stays the last one's).
std::vector<Node> rewrite(Graph& g, const Node& n) {
  const Value x = g.values[n.inputs[0]], w = g.values[n.inputs[1]];
  DimExprs xd = x.dim_exprs();
  tir::Expr N = xd[0], H = xd[2], W = xd[3];
  int64_t C = x.shape[1];  // static (fits)
  int64_t M = w.shape[1], kh = w.shape[2], kw = w.shape[3], K = M * kh * kw;
  std::vector<double> wd = constant_as_doubles(w), bias;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) bias = constant_as_doubles(g.values[n.inputs[2]]);
  std::vector<double> w1((size_t)(K * C)), b1((size_t)K, 0.0);
  for (int64_t c = 0; c < C; c++)
    for (int64_t m = 0; m < M; m++)
      for (int64_t t = 0; t < kh * kw; t++) w1[(size_t)((m * kh * kw + t) * C + c)] = wd[(size_t)((c * M + m) * kh * kw + t)];
  for (int64_t m = 0; m < M && !bias.empty(); m++)
    for (int64_t t = 0; t < kh * kw; t++) b1[(size_t)(m * kh * kw + t)] = bias[(size_t)m];
  std::string base = n.name;
  int wv = g.add_constant(base + ".w1x1", DType::F32, {K, C, 1, 1}, doubles_to_bytes(w1, DType::F32));
  int bv = g.add_constant(base + ".b1x1", DType::F32, {K}, doubles_to_bytes(b1, DType::F32));
  using tir::Expr;
  int conv = new_value(g, base + ".taps", DType::F32, {N, Expr(K), H, W});
  int split = new_value(g, base + ".taps6", DType::F32, {N, Expr(M), Expr(kh), Expr(kw), H, W});
  int moved = new_value(g, base + ".shuffled6", DType::F32, {N, Expr(M), H, Expr(kh), W, Expr(kw)});
  std::vector<Node> out;
  Node c = make_node("Conv", base + "/conv1x1", {n.inputs[0], wv, bv}, conv);
  Attr k1;
  k1.kind = Attr::Kind::Ints;
  k1.ints = {1, 1};
  c.attrs["kernel_shape"] = k1;
  out.push_back(std::move(c));
  out.push_back(make_node("Reshape", base + "/split_taps", {conv, shape_constant(g, base + ".shape6", split)}, split));
  Node t = make_node("Transpose", base + "/shuffle", {split}, moved);
  Attr perm;
  perm.kind = Attr::Kind::Ints;
  perm.ints = {0, 1, 4, 2, 5, 3};
  t.attrs["perm"] = perm;
  out.push_back(std::move(t));
  out.push_back(make_node("Reshape", base + "/merge", {moved, shape_constant(g, base + ".shape4", n.outputs[0])},
                          n.outputs[0]));
  return out;
}

}  // namespace

bool pass_conv_transpose(Graph& g, PassContext& ctx) {
  int count = 0;
  for (const Node& n : g.nodes) count += n.is(Op::ConvTranspose) && fits(g, n);
  if (!count) return false;
  std::vector<Node> nodes;
  for (size_t i = 0; i < g.nodes.size(); i++) {
    if (!g.nodes[i].is(Op::ConvTranspose) || !fits(g, g.nodes[i])) {
      nodes.push_back(std::move(g.nodes[i]));
      continue;
    }
    Node n = g.nodes[i];
    for (Node& r : rewrite(g, n)) {
      r.guards = n.guards;  // a run-time If's branch stays predicated
      nodes.push_back(std::move(r));
    }
  }
  g.nodes = std::move(nodes);
  recompute_producers(g);
  ctx.detail = std::to_string(count) + " became a 1x1 Conv and a pixel shuffle";
  return true;
}

}  // namespace kiln::graph
