#include "import/contrib_ops.h"

#include <string>
#include <vector>

#include "import/contrib_builder.h"
#include "import/subgraph.h"
#include "support/diagnostics.h"

namespace kiln {
namespace {

using contrib::Attr;
using contrib::Builder;

const char* const kDomain = "com.microsoft";

// ---------------------------------------------------------------------------
// Activations

bool expand_activation(Builder& b) {
  const std::string& op = b.op_type();
  if (op == "FastGelu" || op == "BiasGelu" || op == "Gelu") {  // (X[, bias]) erf or tanh form
    std::string x = b.need(0, "X");
    b.require_float(x, "X");
    if (op != "Gelu" && b.has(1)) x = b.op("Add", {x, b.in(1)});
    if (op == "BiasGelu") b.check(b.has(1), "BiasGelu needs its bias input B");
    if (op == "FastGelu")
      b.gelu_tanh(x, b.out(0));
    else
      b.gelu_erf(x, b.out(0));
    return true;
  }
  if (op == "QuickGelu") {  // x * sigmoid(alpha x)
    std::string x = b.need(0, "X");
    b.require_float(x, "X");
    float alpha = b.attr_f("alpha", 1.702f);
    b.op("Mul", {x, b.op("Sigmoid", {b.op("Mul", {x, b.f32(alpha)})})}, {}, b.out(0));
    return true;
  }
  if (op == "BiasAdd") {  // X + bias + skip
    std::string x = b.need(0, "X");
    b.require_float(x, "X");
    b.op("Add", {b.op("Add", {x, b.need(1, "bias")}), b.need(2, "skip")}, {}, b.out(0));
    return true;
  }
  return false;
}

// ---------------------------------------------------------------------------
// Normalizations

bool expand_norm(Builder& b) {
  const std::string& op = b.op_type();
  if (op == "SkipLayerNormalization" || op == "SkipSimplifiedLayerNormalization") {
    // (input, skip, gamma[, beta][, bias]) / (input, skip, gamma[, bias]); outputs
    // (output, mean, inv_std_var, input_skip_bias_sum).
    bool simplified = op == "SkipSimplifiedLayerNormalization";
    std::string x = b.need(0, "input");
    b.require_float(x, "input");
    std::string sum = b.op("Add", {x, b.need(1, "skip")});
    int bias = simplified ? 3 : 4;
    if (b.has(bias)) sum = b.op("Add", {sum, b.in(bias)});
    b.refuse_output(1, "mean");
    b.refuse_output(2, "inv_std_var");
    b.rename(sum, b.out(3));
    float eps = b.attr_f("epsilon", 1e-12f);
    if (simplified)
      b.rms_norm(sum, b.need(2, "gamma"), eps, -1, b.out(0));
    else
      b.layer_norm(sum, b.need(2, "gamma"), b.in(3), eps, -1, b.out(0));
    return true;
  }
  if (op == "SimplifiedLayerNormalization") {  // (X, scale): RMS over the axes from `axis` on
    std::string x = b.need(0, "X");
    b.require_float(x, "X");
    b.refuse_output(1, "inv_std_var");
    int64_t axis = b.attr_i("axis", -1);
    b.rms_norm(x, b.need(1, "scale"), b.attr_f("epsilon", 1e-5f), axis, b.out(0));
    return true;
  }
  if (op == "EmbedLayerNormalization") {
    // (input_ids, segment_ids, word_embedding, position_embedding, segment_embedding, gamma, beta[, mask]
    //  [, position_ids]) -> (output, mask_index, embedding_sum)
    std::string ids = b.need(0, "input_ids");
    std::string sum = b.gather(b.need(2, "word_embedding"), ids, 0);
    std::string pos;
    if (b.has(8)) {
      pos = b.gather(b.need(3, "position_embedding"), b.in(8), 0);
    } else {
      b.need_opset(11, "Range");
      pos = b.gather(b.need(3, "position_embedding"), b.iota(b.dim_scalar(ids, 1)), 0);
    }
    sum = b.op("Add", {sum, pos});
    if (b.has(1) != b.has(4)) b.check(false, "segment_ids and segment_embedding must be given together");
    if (b.has(1)) sum = b.op("Add", {sum, b.gather(b.in(4), b.in(1), 0)});
    b.rename(sum, b.out(2));
    b.layer_norm(sum, b.need(5, "gamma"), b.need(6, "beta"), b.attr_f("epsilon", 1e-12f), -1, b.out(0));
    if (b.wants(1)) {  // the count of mask elements equal to 1, or zeros
      if (b.has(7)) {
        std::string ones = b.cast(b.op("Equal", {b.cast(b.in(7), onnx::TensorProto::INT64), b.i64(1)}),
                                  onnx::TensorProto::INT32);
        b.rename(b.reduce("ReduceSum", ones, {1}, false), b.out(1));
      } else {
        onnx::TensorProto zero;
        zero.set_data_type(onnx::TensorProto::INT32);
        zero.add_dims(1);
        zero.add_int32_data(0);
        b.op("ConstantOfShape", {b.dim(ids, 0)}, {Attr::tensor("value", zero)}, b.out(1));
      }
    }
    return true;
  }
  return false;
}

// ---------------------------------------------------------------------------
// Matrix products and convolutions

bool expand_linear(Builder& b) {
  const std::string& op = b.op_type();
  if (op == "FusedMatMul") {  // alpha * op(A) op(B), op: transBatch then trans on the last two
    std::string m[2];
    const char* trans[2] = {"transA", "transB"};
    const char* batch[2] = {"transBatchA", "transBatchB"};
    for (int k = 0; k < 2; k++) {
      m[k] = b.need(k, k ? "B" : "A");
      b.require_float(m[k], k ? "B" : "A");
      bool t = b.attr_i(trans[k], 0) != 0, tb = b.attr_i(batch[k], 0) != 0;
      if (!t && !tb) continue;
      int r = b.rank(m[k], k ? "B" : "A");
      if (r < 2) b.refuse(std::string(trans[k]) + " / " + batch[k] + " on a 1-D operand");
      std::vector<int64_t> perm;
      if (tb) {  // [d0, d1, .., d(r-2), d(r-1)] -> [d1, .., d(r-2), d0, d(r-1)]
        for (int i = 1; i < r - 1; i++) perm.push_back(i);
        perm.push_back(0);
        perm.push_back(r - 1);
      } else {
        for (int i = 0; i < r; i++) perm.push_back(i);
      }
      if (t) std::swap(perm[r - 2], perm[r - 1]);
      m[k] = b.transpose(m[k], perm);
    }
    float alpha = b.attr_f("alpha", 1.0f);
    if (alpha == 1.0f) {
      b.op("MatMul", {m[0], m[1]}, {}, b.out(0));
    } else {
      b.op("Mul", {b.op("MatMul", {m[0], m[1]}), b.f32(alpha)}, {}, b.out(0));
    }
    return true;
  }
  if (op == "FusedConv") {  // activation(Conv(X, W, B) + Z)
    std::string x = b.need(0, "X");
    b.require_float(x, "X");
    std::vector<std::string> ins = {x, b.need(1, "W")};
    if (b.has(2)) ins.push_back(b.in(2));
    std::string act = b.attr_s("activation", "");
    std::vector<float> p = b.attr_floats("activation_params");
    std::string y = b.op("Conv", ins, b.attrs_but({"activation", "activation_params"}));
    if (b.has(3)) y = b.op("Add", {y, b.in(3)});
    auto params = [&](size_t n) {
      if (p.size() != n)
        b.check(false, "activation " + act + " takes " + std::to_string(n) + " activation_params, the node gives " +
                           std::to_string(p.size()));
    };
    if (act.empty() || act == "Identity") {
      b.rename(y, b.out(0));
    } else if (act == "Relu" || act == "Tanh" || act == "Sigmoid") {
      b.op(act, {y}, {}, b.out(0));
    } else if (act == "LeakyRelu") {
      params(1);
      b.op("LeakyRelu", {y}, {Attr::f("alpha", p[0])}, b.out(0));
    } else if (act == "HardSigmoid") {
      params(2);
      b.op("HardSigmoid", {y}, {Attr::f("alpha", p[0]), Attr::f("beta", p[1])}, b.out(0));
    } else if (act == "Clip") {
      params(2);
      b.rename(b.clip(y, p[0], p[1]), b.out(0));
    } else {
      b.refuse("activation '" + act + "'", "it takes Relu, Tanh, Sigmoid, LeakyRelu, HardSigmoid and Clip");
    }
    return true;
  }
  if (op == "NhwcConv") {  // Conv on channels-last X [N, D.., C] and W [M, k.., C/group]
    std::string x = b.need(0, "X");
    b.require_float(x, "X");
    std::string w = b.need(1, "W");
    int r = 0;
    if (const onnx::AttributeProto* ks = b.attr("kernel_shape")) r = ks->ints_size() + 2;
    if (r == 0) r = b.rank_or(w, 0);
    if (r == 0) r = b.rank(x, "X");
    b.check(r >= 3, "X must have a channel and at least one spatial dimension");
    std::vector<int64_t> to_first = {0, r - 1}, to_last = {0};
    for (int i = 1; i < r - 1; i++) to_first.push_back(i);
    for (int i = 2; i < r; i++) to_last.push_back(i);
    to_last.push_back(1);
    std::vector<std::string> ins = {b.transpose(x, to_first), b.transpose(w, to_first)};
    if (b.has(2)) ins.push_back(b.in(2));
    b.op("Transpose", {b.op("Conv", ins, b.attrs_but({}))}, {Attr::ints("perm", to_last)}, b.out(0));
    return true;
  }
  return false;
}

bool expand_node(Builder& b) {
  return expand_activation(b) || expand_norm(b) || expand_linear(b) || contrib::expand_quantized(b) ||
         contrib::expand_attention(b);
}


bool is_contrib(const onnx::NodeProto& n) {
  if (n.domain() == kDomain) return true;
  // ONNX Runtime writes SimplifiedLayerNormalization in the default domain
  // (an opset-1 function of its own).
  return (n.domain().empty() || n.domain() == "ai.onnx") && n.op_type() == "SimplifiedLayerNormalization";
}

void expand_graph(onnx::GraphProto& g, int64_t opset, contrib::TypeOracle& types) {
  std::vector<onnx::NodeProto> nodes;
  contrib::TypeOracle::Scope outer = types.attach(&nodes);
  for (int i = 0; i < g.node_size(); i++) {
    onnx::NodeProto n = g.node(i);
    for (auto& a : *n.mutable_attribute()) {
      contrib::TypeOracle::Scope here = types.attach(nullptr);
      if (a.has_g()) expand_graph(*a.mutable_g(), opset, types);
      for (auto& sub : *a.mutable_graphs()) expand_graph(sub, opset, types);
      types.restore(here);
    }
    if (is_contrib(n)) {
      if (n.name().empty()) n.set_name(n.op_type() + "_" + std::to_string(i));
      user_assert(n.output_size() >= 1 && !n.output(0).empty())
          << n.op_type() << " node '" << n.name() << "': its first output has no name; fix the model";
      Builder b(n, opset, types, nodes);
      if (expand_node(b)) continue;
    }
    nodes.push_back(std::move(n));
  }
  types.restore(outer);
  g.clear_node();
  for (auto& n : nodes) *g.add_node() = std::move(n);
}

}  // namespace

const char* supported_contrib_ops() {
  return "Attention, BiasAdd, BiasGelu, DynamicQuantizeLSTM, DynamicQuantizeMatMul, EmbedLayerNormalization, "
         "FastGelu, FusedConv, FusedMatMul, Gelu, GroupQueryAttention, MatMulIntegerToFloat, MatMulNBits, "
         "MultiHeadAttention, NhwcConv, QAttention, QGemm, QLinearAdd, QLinearAveragePool, QLinearConcat, "
         "QLinearGlobalAveragePool, QLinearLeakyRelu, QLinearMul, QLinearSigmoid, QuickGelu, RotaryEmbedding, "
         "SimplifiedLayerNormalization, SkipLayerNormalization, SkipSimplifiedLayerNormalization";
}

void expand_contrib_ops(onnx::ModelProto& model) {
  bool any = false;
  std::vector<const onnx::GraphProto*> todo = {&model.graph()};
  while (!todo.empty() && !any) {
    const onnx::GraphProto* g = todo.back();
    todo.pop_back();
    for (const auto& n : g->node()) {
      any |= is_contrib(n);
      for (const auto& a : n.attribute()) {
        if (a.has_g()) todo.push_back(&a.g());
        for (const auto& sub : a.graphs()) todo.push_back(&sub);
      }
    }
  }
  if (!any) return;
  contrib::TypeOracle types(model);
  expand_graph(*model.mutable_graph(), imported_opset(model), types);
}

}  // namespace kiln
