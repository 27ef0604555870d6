#include "import/contrib_builder.h"

#include <onnx/defs/attr_proto_util.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <cmath>
#include <cstdint>
#include <unordered_set>

#include "support/diagnostics.h"

namespace kiln::contrib {

// ---------------------------------------------------------------------------
// TypeOracle

namespace {

// The element count, or INT64_MAX where a dimension is negative or the
// product overflows (the model is untrusted: such a tensor is never small).
int64_t elements(const onnx::TensorProto& t) {
  int64_t n = 1;
  for (int64_t d : t.dims())
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return INT64_MAX;
  return n;
}

bool in_memory(const onnx::TensorProto& t) {
  return t.data_location() != onnx::TensorProto::EXTERNAL;
}

onnx::TypeProto tensor_type(const onnx::TensorProto& t) {
  onnx::TypeProto type;
  auto* tt = type.mutable_tensor_type();
  tt->set_elem_type(t.data_type());
  auto* shape = tt->mutable_shape();
  for (int64_t d : t.dims()) shape->add_dim()->set_dim_value(d);
  return type;
}

}  // namespace

TypeOracle::TypeOracle(const onnx::ModelProto& model) {
  const auto& g = model.graph();
  for (const auto& o : model.opset_import()) opsets_.push_back(o);
  auto note = [&](const onnx::ValueInfoProto& vi) {
    if (vi.has_type() && vi.type().has_tensor_type()) types_[vi.name()] = vi.type();
  };
  for (const auto& vi : g.input()) note(vi);
  for (const auto& vi : g.value_info()) note(vi);
  for (const auto& vi : g.output()) note(vi);
  for (const auto& t : g.initializer()) {
    types_[t.name()] = tensor_type(t);
    if (elements(t) <= 64 && in_memory(t)) constants_[t.name()] = t;
  }
}

TypeOracle::Scope TypeOracle::attach(const std::vector<onnx::NodeProto>* nodes) {
  Scope old = scope_;
  scope_ = Scope{nodes, 0};
  return old;
}

void TypeOracle::note_constant(const onnx::NodeProto& n) {
  if (n.op_type() != "Constant" || !(n.domain().empty() || n.domain() == "ai.onnx") || n.output_size() < 1) return;
  for (const auto& a : n.attribute()) {
    if (a.name() == "value" && a.has_t() && elements(a.t()) <= 64 && in_memory(a.t())) {
      onnx::TensorProto t = a.t();
      t.set_name(n.output(0));
      constants_[n.output(0)] = t;
      types_[n.output(0)] = tensor_type(t);
    }
  }
}

void TypeOracle::infer() {
  if (!scope_.nodes || scope_.inferred >= scope_.nodes->size()) return;
  onnx::ModelProto m;
  m.set_ir_version(8);
  for (const auto& o : opsets_) *m.add_opset_import() = o;
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("kiln_contrib_types");
  std::unordered_set<std::string> known;
  for (size_t i = scope_.inferred; i < scope_.nodes->size(); i++) {
    const onnx::NodeProto& n = (*scope_.nodes)[i];
    note_constant(n);
    if (n.op_type() == "Constant" && n.output_size() == 1 && n.attribute_size() == 1 &&
        n.attribute(0).name() == "value" && n.attribute(0).has_t() && !constants_.count(n.output(0))) {
      types_[n.output(0)] = tensor_type(n.attribute(0).t());  // a large constant: its type, not its data
      continue;
    }
    bool subgraph = false;
    for (const auto& a : n.attribute()) subgraph |= a.has_g() || a.graphs_size() > 0;
    if (subgraph) continue;  // its outer-scope reads are not declared here
    for (const auto& x : n.input()) {
      if (x.empty() || !known.insert(x).second) continue;
      auto c = constants_.find(x);
      if (c != constants_.end()) {
        *g->add_initializer() = c->second;
        continue;
      }
      auto t = types_.find(x);
      if (t == types_.end()) continue;
      auto* vi = g->add_input();
      vi->set_name(x);
      *vi->mutable_type() = t->second;
    }
    for (const auto& y : n.output()) known.insert(y);
    *g->add_node() = n;
  }
  scope_.inferred = scope_.nodes->size();
  try {
    onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
  } catch (const std::exception&) {
    // What it inferred before it stopped is kept below; the rest stays unknown.
  }
  for (const auto& vi : g->value_info())
    if (vi.has_type() && vi.type().has_tensor_type()) types_[vi.name()] = vi.type();
}

const onnx::TypeProto* TypeOracle::type(const std::string& v) {
  auto it = types_.find(v);
  if (it == types_.end()) {
    infer();
    it = types_.find(v);
  }
  return it == types_.end() ? nullptr : &it->second;
}

int TypeOracle::rank(const std::string& v) {
  const onnx::TypeProto* t = type(v);
  if (!t || !t->tensor_type().has_shape()) return -1;
  return t->tensor_type().shape().dim_size();
}

int64_t TypeOracle::dim(const std::string& v, int axis) {
  const onnx::TypeProto* t = type(v);
  if (!t || !t->tensor_type().has_shape()) return -1;
  const auto& s = t->tensor_type().shape();
  if (axis < 0) axis += s.dim_size();
  if (axis < 0 || axis >= s.dim_size() || !s.dim(axis).has_dim_value()) return -1;
  return s.dim(axis).dim_value();
}

int TypeOracle::elem_type(const std::string& v) {
  const onnx::TypeProto* t = type(v);
  return t ? t->tensor_type().elem_type() : 0;
}

// ---------------------------------------------------------------------------
// Attr

// (ONNX's MakeAttribute sets the name, the type and the value.)
Attr Attr::i(const char* name, int64_t v) { return {onnx::MakeAttribute(name, v)}; }
Attr Attr::f(const char* name, float v) { return {onnx::MakeAttribute(name, v)}; }
Attr Attr::s(const char* name, const std::string& v) { return {onnx::MakeAttribute(name, v)}; }
Attr Attr::ints(const char* name, const std::vector<int64_t>& v) { return {onnx::MakeAttribute(name, v)}; }
Attr Attr::tensor(const char* name, const onnx::TensorProto& t) { return {onnx::MakeAttribute(name, t)}; }

// ---------------------------------------------------------------------------
// Builder: the node, its attributes, checks

std::string Builder::describe() const { return n_.op_type() + " node '" + n_.name() + "'"; }

std::string Builder::need(int i, const char* what) const {
  user_assert(has(i)) << describe() << ": input " << i << " (" << what << ") is missing; fix the model";
  return in(i);
}

const onnx::AttributeProto* Builder::attr(const char* name) const {
  for (const auto& a : n_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t Builder::attr_i(const char* name, int64_t def) const {
  const onnx::AttributeProto* a = attr(name);
  if (!a) return def;
  user_assert(a->type() == onnx::AttributeProto::INT || a->type() == onnx::AttributeProto::UNDEFINED)
      << describe() << ": attribute '" << name << "' must be an integer; fix the model";
  return a->i();
}

float Builder::attr_f(const char* name, float def) const {
  const onnx::AttributeProto* a = attr(name);
  if (!a) return def;
  user_assert(a->type() == onnx::AttributeProto::FLOAT || a->type() == onnx::AttributeProto::UNDEFINED)
      << describe() << ": attribute '" << name << "' must be a float; fix the model";
  return a->f();
}

std::string Builder::attr_s(const char* name, const std::string& def) const {
  const onnx::AttributeProto* a = attr(name);
  if (!a) return def;
  user_assert(a->type() == onnx::AttributeProto::STRING || a->type() == onnx::AttributeProto::UNDEFINED)
      << describe() << ": attribute '" << name << "' must be a string; fix the model";
  return a->s();
}

std::vector<int64_t> Builder::attr_ints(const char* name) const {
  const onnx::AttributeProto* a = attr(name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>();
}

std::vector<float> Builder::attr_floats(const char* name) const {
  const onnx::AttributeProto* a = attr(name);
  return a ? std::vector<float>(a->floats().begin(), a->floats().end()) : std::vector<float>();
}

std::vector<Attr> Builder::attrs_but(const std::vector<std::string>& skip) const {
  std::vector<Attr> out;
  for (const auto& a : n_.attribute()) {
    bool drop = false;
    for (const auto& s : skip) drop |= a.name() == s;
    if (!drop) out.push_back(Attr{a});
  }
  return out;
}

void Builder::refuse(const std::string& what, const std::string& note) const {
  user_error << describe() << ": " << what << " is not supported by kilnc's expansion of ONNX Runtime's "
             << n_.op_type() << " (com.microsoft) into standard ONNX operators" << (note.empty() ? "" : " (")
             << note << (note.empty() ? "" : ")");
}

void Builder::check(bool ok, const std::string& msg) const {
  user_assert(ok) << describe() << ": " << msg << "; fix the model";
}

void Builder::need_opset(int64_t least, const char* why) const {
  user_assert(opset_ >= least) << describe() << ": kilnc expands it with " << why << ", which needs ONNX opset "
                               << least << " or newer, but the model imports opset " << opset_
                               << "; convert the model to opset " << least;
}

void Builder::refuse_output(int i, const char* what) const {
  if (wants(i)) refuse(std::string("output ") + std::to_string(i) + " (" + what + ")");
}

void Builder::refuse_input(int i, const char* what) const {
  if (has(i)) refuse(std::string("input ") + std::to_string(i) + " (" + what + ")");
}

int Builder::rank(const std::string& v, const char* what) {
  int r = types_.rank(v);
  user_assert(r >= 0) << describe() << ": the rank of " << what << " '" << v
                      << "' is not known before shape inference, and kilnc's expansion of " << n_.op_type()
                      << " depends on it; give the value a shape (value_info) or the model's inputs static ranks";
  return r;
}

int Builder::rank_or(const std::string& v, int def) {
  int r = types_.rank(v);
  return r >= 0 ? r : def;
}

void Builder::require_float(const std::string& v, const char* what) {
  int t = types_.elem_type(v);
  if (t != 0 && t != onnx::TensorProto::FLOAT)
    refuse(std::string(what) + " of type " + onnx::TensorProto::DataType_Name(t),
           "it computes in float32: convert the model to float32");
}

// ---------------------------------------------------------------------------
// Builder: nodes

std::string Builder::temp(const std::string& what) {
  return n_.output(0) + "/" + n_.op_type() + "." + what + "." + std::to_string(count_++);
}

onnx::NodeProto& Builder::emit(const std::string& op, const std::vector<std::string>& ins,
                               const std::vector<std::string>& outs, const std::vector<Attr>& attrs) {
  onnx::NodeProto m;
  m.set_op_type(op);
  m.set_name(n_.name() + "/" + op + "." + std::to_string(count_++));
  for (const auto& i : ins) m.add_input(i);
  for (const auto& o : outs) m.add_output(o);
  for (const auto& a : attrs) *m.add_attribute() = a.a;
  out_.push_back(std::move(m));
  return out_.back();
}

std::string Builder::op(const std::string& type, const std::vector<std::string>& ins, const std::vector<Attr>& attrs,
                        const std::string& out) {
  std::string y = out.empty() ? temp(type) : out;
  emit(type, ins, {y}, attrs);
  return y;
}

void Builder::rename(const std::string& value, const std::string& name) {
  if (!name.empty() && value != name) op("Identity", {value}, {}, name);
}

// ---------------------------------------------------------------------------
// Builder: constants

namespace {

onnx::TensorProto tensor(int type, const std::vector<int64_t>& dims) {
  onnx::TensorProto t;
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  return t;
}

}  // namespace

std::string Builder::f32(float v) { return f32s({v}, {}); }

std::string Builder::f32s(const std::vector<float>& v, const std::vector<int64_t>& dims) {
  onnx::TensorProto t = tensor(onnx::TensorProto::FLOAT, dims);
  for (float x : v) t.add_float_data(x);
  return op("Constant", {}, {Attr::tensor("value", t)});
}

std::string Builder::i64(int64_t v) {
  onnx::TensorProto t = tensor(onnx::TensorProto::INT64, {});
  t.add_int64_data(v);
  return op("Constant", {}, {Attr::tensor("value", t)});
}

std::string Builder::i64s(const std::vector<int64_t>& v) {
  onnx::TensorProto t = tensor(onnx::TensorProto::INT64, {(int64_t)v.size()});
  for (int64_t x : v) t.add_int64_data(x);
  return op("Constant", {}, {Attr::tensor("value", t)});
}

std::string Builder::u8(uint8_t v) {
  onnx::TensorProto t = tensor(onnx::TensorProto::UINT8, {});
  t.add_int32_data(v);
  return op("Constant", {}, {Attr::tensor("value", t)});
}

// ---------------------------------------------------------------------------
// Builder: standard operators across opsets

std::string Builder::unsqueeze(const std::string& x, const std::vector<int64_t>& axes) {
  if (opset_ < 13) return op("Unsqueeze", {x}, {Attr::ints("axes", axes)});
  return op("Unsqueeze", {x, i64s(axes)});
}

std::string Builder::reduce(const std::string& type, const std::string& x, const std::vector<int64_t>& axes,
                            bool keepdims) {
  bool input_axes = type == "ReduceSum" ? opset_ >= 13 : opset_ >= 18;
  if (input_axes) return op(type, {x, i64s(axes)}, {Attr::i("keepdims", keepdims ? 1 : 0)});
  return op(type, {x}, {Attr::ints("axes", axes), Attr::i("keepdims", keepdims ? 1 : 0)});
}

std::vector<std::string> Builder::split(const std::string& x, int64_t axis, const std::vector<int64_t>& sizes) {
  std::vector<std::string> outs;
  for (size_t i = 0; i < sizes.size(); i++) outs.push_back(temp("split"));
  if (opset_ < 13)
    emit("Split", {x}, outs, {Attr::i("axis", axis), Attr::ints("split", sizes)});
  else
    emit("Split", {x, i64s(sizes)}, outs, {Attr::i("axis", axis)});
  return outs;
}

std::string Builder::slice(const std::string& x, const std::string& starts, const std::string& ends,
                           const std::string& axes, const std::string& steps) {
  need_opset(10, "Slice with tensor bounds");
  std::vector<std::string> ins = {x, starts, ends};
  if (!axes.empty() || !steps.empty()) ins.push_back(axes);
  if (!steps.empty()) ins.push_back(steps);
  return op("Slice", ins);
}

std::string Builder::slice_c(const std::string& x, const std::vector<int64_t>& starts,
                             const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                             const std::vector<int64_t>& steps) {
  if (opset_ < 10) {
    check(steps.empty(), "a strided slice needs opset 10");
    return op("Slice", {x}, {Attr::ints("starts", starts), Attr::ints("ends", ends), Attr::ints("axes", axes)});
  }
  return slice(x, i64s(starts), i64s(ends), i64s(axes), steps.empty() ? std::string() : i64s(steps));
}

std::string Builder::clip(const std::string& x, float lo, float hi) {
  if (opset_ < 11) return op("Clip", {x}, {Attr::f("min", lo), Attr::f("max", hi)});
  return op("Clip", {x, f32(lo), f32(hi)});
}

std::string Builder::transpose(const std::string& x, const std::vector<int64_t>& perm) {
  return op("Transpose", {x}, {Attr::ints("perm", perm)});
}

std::string Builder::reshape(const std::string& x, const std::string& shape) { return op("Reshape", {x, shape}); }

std::string Builder::reshape(const std::string& x, const std::vector<int64_t>& shape) {
  return op("Reshape", {x, i64s(shape)});
}

std::string Builder::concat(const std::vector<std::string>& xs, int64_t axis) {
  return op("Concat", xs, {Attr::i("axis", axis)});
}

std::string Builder::cast(const std::string& x, int to) { return op("Cast", {x}, {Attr::i("to", to)}); }

std::string Builder::gather(const std::string& x, const std::string& indices, int64_t axis) {
  return op("Gather", {x, indices}, {Attr::i("axis", axis)});
}

std::string Builder::dim(const std::string& x, int64_t axis) { return gather(op("Shape", {x}), i64s({axis}), 0); }

std::string Builder::dim_scalar(const std::string& x, int64_t axis) { return gather(op("Shape", {x}), i64(axis), 0); }

std::string Builder::iota(const std::string& n) {
  need_opset(11, "Range");
  return op("Range", {i64(0), n, i64(1)});
}

// ---------------------------------------------------------------------------
// Builder: composite forms

namespace {

std::vector<int64_t> trailing_axes(int64_t axis, int rank) {
  std::vector<int64_t> axes;
  if (axis < 0) {
    for (int64_t a = axis; a < 0; a++) axes.push_back(a);
  } else {
    for (int64_t a = axis; a < rank; a++) axes.push_back(a);
  }
  return axes;
}

}  // namespace

std::string Builder::layer_norm(const std::string& x, const std::string& gamma, const std::string& beta, float eps,
                                int64_t axis, const std::string& out) {
  if (opset_ >= 17) {
    std::vector<std::string> ins = {x, gamma};
    if (!beta.empty()) ins.push_back(beta);
    return op("LayerNormalization", ins, {Attr::i("axis", axis), Attr::f("epsilon", eps)}, out);
  }
  std::vector<int64_t> axes = trailing_axes(axis, axis < 0 ? 0 : rank(x, "the normalized input"));
  std::string mean = reduce("ReduceMean", x, axes, true);
  std::string d = op("Sub", {x, mean});
  std::string var = reduce("ReduceMean", op("Mul", {d, d}), axes, true);
  std::string y = op("Div", {d, op("Sqrt", {op("Add", {var, f32(eps)})})});
  if (beta.empty()) return op("Mul", {y, gamma}, {}, out);
  return op("Add", {op("Mul", {y, gamma}), beta}, {}, out);
}

std::string Builder::rms_norm(const std::string& x, const std::string& gamma, float eps, int64_t axis,
                              const std::string& out) {
  std::vector<int64_t> axes = trailing_axes(axis, axis < 0 ? 0 : rank(x, "the normalized input"));
  std::string ms = reduce("ReduceMean", op("Mul", {x, x}), axes, true);
  std::string y = op("Div", {x, op("Sqrt", {op("Add", {ms, f32(eps)})})});
  return op("Mul", {y, gamma}, {}, out);
}

std::string Builder::gelu_erf(const std::string& x, const std::string& out) {
  need_opset(9, "Erf");
  std::string e = op("Erf", {op("Mul", {x, f32(0.70710678118654752f)})});
  return op("Mul", {op("Mul", {x, f32(0.5f)}), op("Add", {e, f32(1.0f)})}, {}, out);
}

std::string Builder::gelu_tanh(const std::string& x, const std::string& out) {
  // ONNX Runtime's constants: sqrt(2 / pi) and 0.044715 sqrt(2 / pi).
  std::string x2 = op("Mul", {x, x});
  std::string cubic = op("Mul", {x2, f32(0.035677408136300125f)});
  std::string inner = op("Mul", {x, op("Add", {cubic, f32(0.7978845608028654f)})});
  std::string t = op("Add", {op("Tanh", {inner}), f32(1.0f)});
  return op("Mul", {op("Mul", {x, f32(0.5f)}), t}, {}, out);
}

std::string Builder::integer_matmul(const std::string& a, const std::string& b, const std::string& a_zp,
                                    const std::string& b_zp, const std::string& scale, const std::string& bias,
                                    const std::string& out) {
  need_opset(10, "MatMulInteger");
  std::vector<std::string> ins = {a, b};
  if (!a_zp.empty() || !b_zp.empty()) ins.push_back(a_zp);
  if (!b_zp.empty()) ins.push_back(b_zp);
  std::string acc = cast(op("MatMulInteger", ins), onnx::TensorProto::FLOAT);
  if (bias.empty()) return op("Mul", {acc, scale}, {}, out);
  return op("Add", {op("Mul", {acc, scale}), bias}, {}, out);
}

}  // namespace kiln::contrib
