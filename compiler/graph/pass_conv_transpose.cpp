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

int new_value(Graph& g, const std::string& name, DType dtype, Shape shape) {
  Value v;
  v.name = g.unique_name(name);
  v.dtype = dtype;
  v.shape = std::move(shape);
  return g.add_value(std::move(v));
}

int shape_constant(Graph& g, const std::string& name, const Shape& shape) {
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
  Shape want = {x.shape[0], w.shape[1], x.shape[2] * kernel[0], x.shape[3] * kernel[1]};
  return y.shape == want && y.dtype == DType::F32;
}

// The nodes replacing ConvTranspose `n` (its output value stays the last one's).
std::vector<Node> rewrite(Graph& g, const Node& n) {
  const Value x = g.values[n.inputs[0]], w = g.values[n.inputs[1]];
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
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
  int conv = new_value(g, base + ".taps", DType::F32, {N, K, H, W});
  int split = new_value(g, base + ".taps6", DType::F32, {N, M, kh, kw, H, W});
  int moved = new_value(g, base + ".shuffled6", DType::F32, {N, M, H, kh, W, kw});
  std::vector<Node> out;
  Node c = make_node("Conv", base + "/conv1x1", {n.inputs[0], wv, bv}, conv);
  Attr k1;
  k1.kind = Attr::Kind::Ints;
  k1.ints = {1, 1};
  c.attrs["kernel_shape"] = k1;
  out.push_back(std::move(c));
  out.push_back(make_node("Reshape", base + "/split_taps", {conv, shape_constant(g, base + ".shape6", {N, M, kh, kw, H, W})}, split));
  Node t = make_node("Transpose", base + "/shuffle", {split}, moved);
  Attr perm;
  perm.kind = Attr::Kind::Ints;
  perm.ints = {0, 1, 4, 2, 5, 3};
  t.attrs["perm"] = perm;
  out.push_back(std::move(t));
  out.push_back(make_node("Reshape", base + "/merge", {moved, shape_constant(g, base + ".shape4", {N, M, H * kh, W * kw})},
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
    for (Node& r : rewrite(g, n)) nodes.push_back(std::move(r));
  }
  g.nodes = std::move(nodes);
  recompute_producers(g);
  ctx.detail = std::to_string(count) + " became a 1x1 Conv and a pixel shuffle";
  return true;
}

}  // namespace kiln::graph
