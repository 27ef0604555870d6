#include "import/contrib_ops.h"

#include <string>
#include <vector>

#include "support/diagnostics.h"

namespace kiln {
namespace {

const char* const kDomain = "com.microsoft";

std::string describe(const onnx::NodeProto& n) { return n.op_type() + " node '" + n.name() + "'"; }

// The nodes that replace contrib node n, appended to `out`.
class Expander {
 public:
  Expander(const onnx::NodeProto& n, std::vector<onnx::NodeProto>& out) : n_(n), out_(out) {}

  // Input i's name ("" when absent).
  std::string in(int i) const { return i < n_.input_size() ? n_.input(i) : std::string(); }
  // At least `count` inputs, those in `required` present (zero points may be absent).
  void require_inputs(int count, std::vector<int> required) const {
    user_assert(n_.input_size() >= count && n_.output_size() >= 1 && !n_.output(0).empty())
        << describe(n_) << ": needs " << count << " inputs and an output; fix the model";
    for (int i : required) user_assert(!in(i).empty()) << describe(n_) << ": input " << i << " is missing; fix the model";
  }

  // A new value name unique to this node.
  std::string temp(const std::string& what) const { return n_.output(0) + "/" + n_.op_type() + "." + what; }

  onnx::NodeProto& node(const std::string& op, std::vector<std::string> inputs, const std::string& output) {
    onnx::NodeProto m;
    m.set_op_type(op);
    m.set_name(n_.name() + "/" + op + "." + std::to_string(out_.size()));
    for (auto& i : inputs) m.add_input(i);
    m.add_output(output);
    out_.push_back(m);
    return out_.back();
  }
  std::string dequantize(int x, int scale, int zp, const std::string& what) {
    std::vector<std::string> ins = {in(x), in(scale)};
    if (!in(zp).empty()) ins.push_back(in(zp));
    std::string v = temp(what);
    node("DequantizeLinear", ins, v);
    return v;
  }
  void quantize(const std::string& x, int scale, int zp) {
    std::vector<std::string> ins = {x, in(scale)};
    if (!in(zp).empty()) ins.push_back(in(zp));
    onnx::NodeProto& q = node("QuantizeLinear", ins, n_.output(0));
    q.set_name(n_.name());
  }
  static onnx::AttributeProto int_attr(const char* name, int64_t v) {
    onnx::AttributeProto a;
    a.set_name(name);
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(v);
    return a;
  }
  // The float operator `op` on the given inputs, n's attributes but `skip`.
  std::string apply(const std::string& op, std::vector<std::string> ins, std::vector<std::string> skip = {}) {
    std::string v = temp(op);
    onnx::NodeProto& f = node(op, std::move(ins), v);
    for (const auto& a : n_.attribute()) {
      bool drop = false;
      for (auto& s : skip) drop |= a.name() == s;
      if (!drop) *f.add_attribute() = a;
    }
    return v;
  }

  bool expand() {
    const std::string& op = n_.op_type();
    if (op == "QLinearAdd" || op == "QLinearMul") {
      require_inputs(7, {0, 1, 3, 4, 6});
      std::string a = dequantize(0, 1, 2, "a"), b = dequantize(3, 4, 5, "b");
      quantize(apply(op == "QLinearAdd" ? "Add" : "Mul", {a, b}), 6, 7);
      return true;
    }
    if (op == "QLinearGlobalAveragePool" || op == "QLinearAveragePool" || op == "QLinearSigmoid" ||
        op == "QLinearLeakyRelu") {
      require_inputs(4, {0, 1, 3});
      for (const auto& a : n_.attribute())
        user_assert(a.name() != "channels_last" || a.i() == 0)
            << describe(n_) << ": channels_last=1 is not supported; export the model in NCHW";
      std::string x = dequantize(0, 1, 2, "x");
      quantize(apply(op.substr(7), {x}, {"channels_last"}), 3, 4);
      return true;
    }
    if (op == "QGemm") {  // (A, a_scale, a_zp, B, b_scale, b_zp[, C, y_scale, y_zp]): int32 C, float y without y_scale
      require_inputs(6, {0, 1, 3, 4});
      bool trans_b = false;
      for (const auto& a : n_.attribute()) trans_b |= a.name() == "transB" && a.i() != 0;
      std::string a = dequantize(0, 1, 2, "a");
      std::string b = dequantize(3, 4, 5, "b");
      out_.back().add_attribute()->CopyFrom(int_attr("axis", trans_b ? 0 : 1));  // per-channel: along N
      std::vector<std::string> ins = {a, b};
      if (!in(6).empty()) {  // C: int32 with scale a_scale * b_scale
        std::string scale = temp("c_scale");
        node("Mul", {in(1), in(4)}, scale);
        std::string c = temp("c");
        node("DequantizeLinear", {in(6), scale}, c).add_attribute()->CopyFrom(int_attr("axis", 0));
        ins.push_back(c);
      }
      if (in(7).empty()) {  // a float output
        onnx::NodeProto& f = node("Gemm", ins, n_.output(0));
        f.set_name(n_.name());
        for (const auto& at : n_.attribute()) *f.add_attribute() = at;
        return true;
      }
      quantize(apply("Gemm", ins), 7, 8);
      return true;
    }
    if (op == "QLinearConcat") {
      user_assert(n_.input_size() >= 5 && (n_.input_size() - 2) % 3 == 0 && n_.output_size() >= 1)
          << describe(n_) << ": needs Y_scale, Y_zero_point and (X, X_scale, X_zero_point) per input; fix the model";
      std::vector<std::string> parts;
      for (int i = 2; i < n_.input_size(); i += 3) {
        user_assert(!in(i).empty() && !in(i + 1).empty()) << describe(n_) << ": input " << i << " or its scale is missing";
        parts.push_back(dequantize(i, i + 1, i + 2, "x" + std::to_string(parts.size())));
      }
      user_assert(!in(0).empty()) << describe(n_) << ": Y_scale is missing; fix the model";
      quantize(apply("Concat", parts), 0, 1);
      return true;
    }
    return false;
  }

 private:
  const onnx::NodeProto& n_;
  std::vector<onnx::NodeProto>& out_;
};

void expand_graph(onnx::GraphProto& g) {
  std::vector<onnx::NodeProto> nodes;
  for (int i = 0; i < g.node_size(); i++) {
    onnx::NodeProto n = g.node(i);
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) expand_graph(*a.mutable_g());
      for (auto& sub : *a.mutable_graphs()) expand_graph(sub);
    }
    if (n.domain() == kDomain) {
      if (n.name().empty()) n.set_name(n.op_type() + "_" + std::to_string(i));
      if (Expander(n, nodes).expand()) continue;
    }
    nodes.push_back(std::move(n));
  }
  g.clear_node();
  for (auto& n : nodes) *g.add_node() = std::move(n);
}

}  // namespace

const char* supported_contrib_ops() {
  return "QGemm, QLinearAdd, QLinearMul, QLinearGlobalAveragePool, QLinearAveragePool, QLinearConcat, QLinearSigmoid, "
         "QLinearLeakyRelu";
}

void expand_contrib_ops(onnx::ModelProto& model) {
  expand_graph(*model.mutable_graph());
}

}  // namespace kiln
