// The tools contrib_ops.cpp and its companions (contrib_attention.cpp,
// contrib_quant.cpp) use to rewrite one ONNX Runtime contrib node into
// standard ONNX nodes (contrib_ops.h lists the operators):
//
//   TypeOracle  what is known of a value's type before ONNX's shape
//               inference ran on the model: graph inputs, value_info,
//               initializers, and ONNX's inference over the nodes written so
//               far (run only when a question is not answered yet, over the
//               nodes added since the last run, constants' data included).
//   Builder     writes the replacement nodes of one contrib node, in the
//               model's default opset (the opset-dependent forms of
//               Unsqueeze, Reduce*, Split, Slice, Clip and
//               LayerNormalization are chosen here), and refuses what it
//               cannot express with a UserError naming the node.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln::contrib {

class TypeOracle {
 public:
  explicit TypeOracle(const onnx::ModelProto& model);

  // The node list being written (main graph or a subgraph): values its nodes
  // produce are inferred from there. Returns the previous list, to restore.
  struct Scope {
    const std::vector<onnx::NodeProto>* nodes = nullptr;
    size_t inferred = 0;
  };
  Scope attach(const std::vector<onnx::NodeProto>* nodes);
  void restore(Scope s) { scope_ = s; }

  // Rank of tensor `v`, -1 when unknown (also after inference).
  int rank(const std::string& v);
  // Dimension `axis` (negative from the back), -1 when unknown or symbolic.
  int64_t dim(const std::string& v, int axis);
  // Element type (onnx::TensorProto::DataType), 0 when unknown.
  int elem_type(const std::string& v);
 private:
  const onnx::TypeProto* type(const std::string& v);
  void infer();
  void note_constant(const onnx::NodeProto& n);

  std::unordered_map<std::string, onnx::TypeProto> types_;
  std::unordered_map<std::string, onnx::TensorProto> constants_;
  std::vector<onnx::OperatorSetIdProto> opsets_;
  Scope scope_;
};

// An attribute of a node to write.
struct Attr {
  onnx::AttributeProto a;
  static Attr i(const char* name, int64_t v);
  static Attr f(const char* name, float v);
  static Attr s(const char* name, const std::string& v);
  static Attr ints(const char* name, const std::vector<int64_t>& v);
  static Attr tensor(const char* name, const onnx::TensorProto& t);
};

// The lowest float32, which ONNX Runtime's kernels add to the scores a
// causal mask hides.
constexpr float kLowest = -3.4028234663852886e38f;

class Builder {
 public:
  Builder(const onnx::NodeProto& n, int64_t opset, TypeOracle& types, std::vector<onnx::NodeProto>& out)
      : n_(n), opset_(opset), types_(types), out_(out) {}

  const onnx::NodeProto& node() const { return n_; }
  const std::string& op_type() const { return n_.op_type(); }
  std::string describe() const;

  // Input i's name ("" when absent); whether it is given; the name or a
  // UserError naming it (`what`).
  std::string in(int i) const { return i < n_.input_size() ? n_.input(i) : std::string(); }
  bool has(int i) const { return !in(i).empty(); }
  std::string need(int i, const char* what) const;
  // Output i's name ("" when the model does not ask for it).
  std::string out(int i) const { return i < n_.output_size() ? n_.output(i) : std::string(); }
  bool wants(int i) const { return !out(i).empty(); }

  const onnx::AttributeProto* attr(const char* name) const;
  int64_t attr_i(const char* name, int64_t def) const;
  float attr_f(const char* name, float def) const;
  std::string attr_s(const char* name, const std::string& def) const;
  std::vector<int64_t> attr_ints(const char* name) const;
  std::vector<float> attr_floats(const char* name) const;
  // The node's attributes but those named in `skip`, for a standard operator
  // that takes the rest as they are.
  std::vector<Attr> attrs_but(const std::vector<std::string>& skip) const;

  // UserError: "<op> node 'name': <what> is not supported by kilnc's
  // expansion ... (<note>)".
  [[noreturn]] void refuse(const std::string& what, const std::string& note = "") const;
  // UserError "<op> node 'name': <msg>; fix the model" unless ok.
  void check(bool ok, const std::string& msg) const;
  void need_opset(int64_t least, const char* why) const;
  // Refuses output `i` when the model asks for it.
  void refuse_output(int i, const char* what) const;
  // Refuses input `i` when it is given.
  void refuse_input(int i, const char* what) const;

  // Rank of `v` (UserError naming `what` when unknown); -1 allowed with rank_or.
  int rank(const std::string& v, const char* what);
  int rank_or(const std::string& v, int def);
  int64_t static_dim(const std::string& v, int axis) { return types_.dim(v, axis); }
  // UserError unless `v` is float32 (or of unknown type).
  void require_float(const std::string& v, const char* what);
  int elem_type(const std::string& v) { return types_.elem_type(v); }

  // A new value name unique to this node.
  std::string temp(const std::string& what);
  onnx::NodeProto& emit(const std::string& op, const std::vector<std::string>& ins,
                        const std::vector<std::string>& outs, const std::vector<Attr>& attrs = {});
  // One-output node; `out` names its output (a temp when empty).
  std::string op(const std::string& op, const std::vector<std::string>& ins, const std::vector<Attr>& attrs = {},
                 const std::string& out = "");
  // `value` under the name `name` (an Identity).
  void rename(const std::string& value, const std::string& name);

  // Constants.
  std::string f32(float v);                                                      // scalar
  std::string f32s(const std::vector<float>& v, const std::vector<int64_t>& dims);
  std::string i64(int64_t v);                                                    // scalar
  std::string i64s(const std::vector<int64_t>& v);                               // 1-D
  std::string u8(uint8_t v);                                                     // scalar

  // Standard operators in the forms of the model's opset.
  std::string unsqueeze(const std::string& x, const std::vector<int64_t>& axes);
  std::string reduce(const std::string& op, const std::string& x, const std::vector<int64_t>& axes, bool keepdims);
  std::vector<std::string> split(const std::string& x, int64_t axis, const std::vector<int64_t>& sizes);
  // Slice with tensor bounds (1-D int64 names; axes/steps may be "").
  std::string slice(const std::string& x, const std::string& starts, const std::string& ends, const std::string& axes,
                    const std::string& steps = "");
  std::string slice_c(const std::string& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                      const std::vector<int64_t>& axes, const std::vector<int64_t>& steps = {});
  std::string clip(const std::string& x, float lo, float hi);
  std::string transpose(const std::string& x, const std::vector<int64_t>& perm);
  std::string reshape(const std::string& x, const std::string& shape);
  std::string reshape(const std::string& x, const std::vector<int64_t>& shape);
  std::string concat(const std::vector<std::string>& xs, int64_t axis);
  std::string cast(const std::string& x, int to);
  std::string gather(const std::string& x, const std::string& indices, int64_t axis);
  // Dimension `axis` of `x` at run time: 1-D [1] int64, or a scalar.
  std::string dim(const std::string& x, int64_t axis);
  std::string dim_scalar(const std::string& x, int64_t axis);
  // Range(0, n) for a scalar int64 n.
  std::string iota(const std::string& n);

  // Composite forms.
  // LayerNormalization over the axes from `axis` on (opset 17), or its
  // decomposition; beta may be "".
  std::string layer_norm(const std::string& x, const std::string& gamma, const std::string& beta, float eps,
                         int64_t axis, const std::string& out = "");
  // x / sqrt(mean(x^2 over the axes from `axis` on) + eps) * gamma.
  std::string rms_norm(const std::string& x, const std::string& gamma, float eps, int64_t axis,
                       const std::string& out = "");
  std::string gelu_erf(const std::string& x, const std::string& out = "");
  // ONNX Runtime's FastGelu: 0.5 x (1 + tanh(x (a + b x^2))).
  std::string gelu_tanh(const std::string& x, const std::string& out = "");
  // Float (A - a_zp)(B - b_zp) * scale (+ bias): MatMulInteger, Cast, Mul.
  std::string integer_matmul(const std::string& a, const std::string& b, const std::string& a_zp,
                             const std::string& b_zp, const std::string& scale, const std::string& bias,
                             const std::string& out = "");

 private:
  const onnx::NodeProto& n_;
  int64_t opset_;
  TypeOracle& types_;
  std::vector<onnx::NodeProto>& out_;
  int count_ = 0;
};

// Each returns false for an operator it does not handle.
bool expand_quantized(Builder& b);   // contrib_quant.cpp
bool expand_attention(Builder& b);   // contrib_attention.cpp

}  // namespace kiln::contrib
