// bfloat16 (and float16): every operator computes bfloat16 and float16 values in float32.
//
// A bfloat16 tensor is stored as its bits (the upper half of a float32;
// graph::DType::BF16, tir::UInt(16)), and only three kinds of operator
// handle those bits directly: Cast and CastLike (which convert, rounding to
// nearest even), and the operators that only reinterpret or forward their
// input (roles Reshape and Passthrough). Every other node with a bfloat16
// input or output is rewritten here to compute in float32: a Cast to
// float32 before each bfloat16 input, and the node writes a float32 value
// that a Cast back to bfloat16 turns into the original output. So each
// operator rounds once, at its end, as ONNX Runtime and PyTorch compute
// bfloat16 on CPUs. Constant folding then folds the Casts of constant
// weights. (The Casts run as kernels of their own: bfloat16 models are
// supported for coverage, not yet tuned for speed.)
//
// The narrow floats of decision 62 (float8, float4e2m1, float8e8m0: a code
// in a byte) go the same way, with Casts back of saturate = 0 (an infinity
// stays one); QuantizeLinear and DequantizeLinear convert them themselves.
//
// It runs first: no later pass or lowering sees a computing operator with a
// bfloat16 operand (lowering refuses one: lower/lower_graph.cpp).
#include <set>

#include "graph/passes.h"

namespace kiln::graph {

namespace {

// Whether node `n` handles bfloat16 bits itself (flag kStoredBits: Cast,
// CastLike, BitCast; QuantizeLinear and DequantizeLinear convert their
// operands themselves, lower/ops_quant.cpp, the narrow floats of decision
// 62 included).
bool handles_bits(const Node& n) {
  return n.traits().stored_bits() || n.traits().shape_only() || n.traits().role == OpRole::Import;
}

// The element types that operators compute in float32: bfloat16, and
// float16 (kilnc has no float16 arithmetic yet; the result is what ONNX
// Runtime's CPU kernels give, each operator rounding once, at its end).
// The narrow floats (float8s, float4e2m1, float8e8m0: their codes in a
// byte, decision 62) too; the narrow integers are stored as their values.
bool computed_in_f32(DType t) { return t == DType::BF16 || t == DType::F16 || is_narrow_float(t); }

bool touches_bf16(const Graph& g, const Node& n) {
  for (int v : n.inputs)
    if (v >= 0 && computed_in_f32(g.values[v].dtype)) return true;
  for (int v : n.outputs)
    if (v >= 0 && computed_in_f32(g.values[v].dtype)) return true;
  return false;
}

// A Cast node from `from` to a new value of `to`'s element type and `like`'s shape.
class CastMaker {
 public:
  explicit CastMaker(Graph& g) : g_(g) {
    for (const Value& v : g.values) names_.insert(v.name);
  }
  // A new value shaped like `like`, of `dtype`, named after it.
  int new_value(int like, DType dtype) {
    Value v = g_.values[like];
    v.dtype = dtype;
    v.data.reset();
    v.sym.clear();
    v.producer = -1;
    v.name = fresh(v.name + (dtype == DType::F32 ? "_f32" : dtype == DType::F16 ? "_f16" : dtype == DType::BF16 ? "_bf16"
                                                                                            : "_" + std::string(dtype_name(dtype))));
    return g_.add_value(std::move(v));
  }
  Node cast(const std::string& node_name, int from, int to) {
    Node c;
    c.op = "Cast";
    c.name = fresh(node_name);
    c.inputs = {from};
    c.outputs = {to};
    Attr a;
    a.kind = Attr::Kind::Int;
    const DType t = g_.values[to].dtype;
    // ONNX's FLOAT, FLOAT16, BFLOAT16; a narrow type's ONNX code is kiln's + 3 (FLOAT8E4M3FN: 17, kiln's 14).
    static_assert((int)DType::F8E4M3FN + 3 == 17 && (int)DType::I2 + 3 == 26, "narrow dtypes in ONNX's order");
    a.i = t == DType::F32 ? 1 : t == DType::F16 ? 10 : t == DType::BF16 ? 16 : (int64_t)t + 3;
    c.attrs["to"] = a;
    if (is_narrow_float(t)) {  // back to a narrow float: infinity stays infinity (E5M2), NaN NaN
      Attr keep;
      keep.kind = Attr::Kind::Int;
      keep.i = 0;
      c.attrs["saturate"] = keep;
    }
    return c;
  }

 private:
  std::string fresh(const std::string& base) {
    std::string n = base;
    for (int i = 1; names_.count(n); i++) n = base + "_" + std::to_string(i);
    names_.insert(n);
    return n;
  }
  Graph& g_;
  std::set<std::string> names_;  // names taken: the graph's values' and the new nodes' and values' (one namespace, simpler)
};

}  // namespace

bool pass_bfloat16(Graph& g, PassContext& ctx) {
  bool any = false;
  for (const Node& n : g.nodes) any |= !handles_bits(n) && touches_bf16(g, n);
  if (!any) return false;
  CastMaker make(g);
  std::vector<Node> nodes;
  int rewritten = 0;
  for (Node& n : g.nodes) {
    if (handles_bits(n) || !touches_bf16(g, n)) {
      nodes.push_back(std::move(n));
      continue;
    }
    rewritten++;
    for (int& v : n.inputs) {
      if (v < 0 || !computed_in_f32(g.values[v].dtype)) continue;
      int wide = make.new_value(v, DType::F32);
      nodes.push_back(make.cast(n.name + "/to_f32", v, wide));
      nodes.back().guards = n.guards;  // a branch's cast runs when the branch does
      v = wide;
    }
    std::vector<Node> after;
    for (int& v : n.outputs) {
      if (v < 0 || !computed_in_f32(g.values[v].dtype)) continue;
      int wide = make.new_value(v, DType::F32);
      const DType t = g.values[v].dtype;
      after.push_back(make.cast(n.name + (t == DType::F16 ? "/to_f16" : t == DType::BF16 ? "/to_bf16" : "/to_" + std::string(dtype_name(t))), wide, v));
      after.back().guards = n.guards;
      v = wide;
    }
    nodes.push_back(std::move(n));
    for (Node& c : after) nodes.push_back(std::move(c));
  }
  g.nodes = std::move(nodes);
  recompute_producers(g);
  ctx.detail = std::to_string(rewritten) + " node(s) computed in float32";
  return true;
}

}  // namespace kiln::graph
