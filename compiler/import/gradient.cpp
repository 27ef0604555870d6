// Gradient nodes expanded into derivative nodes (gradient.h).
#include "import/gradient.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "import/sort_nodes.h"
#include "import/subgraph.h"
#include "support/diagnostics.h"

namespace kiln {
namespace {

using Shape = std::vector<int64_t>;

const char* const kTrainingDomain = "ai.onnx.preview.training";

bool is_gradient(const onnx::NodeProto& n) { return n.op_type() == "Gradient" && n.domain() == kTrainingDomain; }

// What node n reads, its subgraphs included (subgraph.h).
std::vector<std::string> node_reads(const onnx::NodeProto& n) {
  std::vector<std::string> names;
  kiln::node_reads(n, true, &names);
  return names;
}

// The nodes in an order where each comes after what it reads, keeping the
// given order where it already is (the backward nodes may need values a
// node after the Gradient node computes).
std::vector<onnx::NodeProto> sorted(std::vector<onnx::NodeProto> nodes) {
  std::vector<const onnx::NodeProto*> view;
  for (const auto& n : nodes) view.push_back(&n);
  std::vector<int> order = stable_topological_order(view);
  user_assert(order.size() == nodes.size()) << "Gradient: the graph has a cycle once differentiated";
  std::vector<onnx::NodeProto> out;
  for (int i : order) out.push_back(std::move(nodes[(size_t)i]));
  return out;
}

// One Gradient node's expansion: the backward nodes, written in order.
class Expander {
 public:
  Expander(onnx::ModelProto& model, SubgraphInliner& names, const onnx::NodeProto& gradient, int64_t opset)
      : g_(*model.mutable_graph()), names_(names), opset_(opset) {
    name_ = gradient.name();
    where_ = "Gradient node '" + name_ + "'";
    auto record = [&](const std::string& name, const onnx::TypeProto& t) {
      if (!t.has_tensor_type() || !t.tensor_type().has_shape()) return;
      Shape s;
      for (auto& d : t.tensor_type().shape().dim()) {
        if (!d.has_dim_value()) return;
        s.push_back(d.dim_value());
      }
      shapes_[name] = s;
      types_[name] = t.tensor_type().elem_type();
    };
    for (auto& v : g_.input()) record(v.name(), v.type());
    for (auto& v : g_.value_info()) record(v.name(), v.type());
    for (auto& v : g_.output()) record(v.name(), v.type());
    for (auto& t : g_.initializer()) {
      shapes_[t.name()] = Shape(t.dims().begin(), t.dims().end());
      types_[t.name()] = t.data_type();
    }
  }

  // The backward nodes giving `gradient`'s outputs, from the graph's other nodes.
  std::vector<onnx::NodeProto> expand(const onnx::NodeProto& gradient) {
    std::vector<std::string> xs;
    std::string y;
    for (auto& a : gradient.attribute()) {
      if (a.name() == "xs") xs.assign(a.strings().begin(), a.strings().end());
      if (a.name() == "y") y = a.s();
    }
    user_assert(!y.empty() && xs.size() == (size_t)gradient.output_size())
        << where_ << ": needs attribute y and one output per name in xs";
    elem_ = type_of(y);
    user_assert(elem_ == onnx::TensorProto::FLOAT || elem_ == onnx::TensorProto::DOUBLE)
        << where_ << ": kilnc differentiates float and double tensors only; '" << y << "' is neither";
    // The nodes between the xs and y: those y depends on that depend on an
    // x (a subgraph's reads count as its node's: an If reading x is on the
    // path, and refused below).
    std::set<std::string> from_x(xs.begin(), xs.end());
    std::vector<bool> on_path((size_t)g_.node_size(), false);
    for (int i = 0; i < g_.node_size(); i++) {
      bool reads = false;
      for (auto& in : node_reads(g_.node(i))) reads |= from_x.count(in) != 0;
      if (reads && !is_gradient(g_.node(i)))
        for (auto& o : g_.node(i).output()) from_x.insert(o);
    }
    std::set<std::string> wanted = {y};
    for (int i = g_.node_size() - 1; i >= 0; i--) {
      const onnx::NodeProto& n = g_.node(i);
      bool gives = false, depends = false;
      for (auto& o : n.output()) gives |= wanted.count(o) != 0, depends |= from_x.count(o) != 0;
      if (!gives || !depends || is_gradient(n)) continue;
      on_path[(size_t)i] = true;
      for (auto& in : node_reads(n)) wanted.insert(in);
    }
    grads_[y] = constant(1.0, shape_of(y));  // d(sum of y)/dy
    for (int i = g_.node_size() - 1; i >= 0; i--) {
      bool reached = false;  // some output has a gradient
      for (auto& o : g_.node(i).output()) reached |= grads_.count(o) != 0;
      if (on_path[(size_t)i] && reached) backward(g_.node(i), from_x);
    }
    for (int k = 0; k < gradient.output_size(); k++) {
      if (gradient.output(k).empty()) continue;
      const std::string& x = xs[(size_t)k];
      auto it = grads_.find(x);
      std::string dx = it != grads_.end() ? it->second : constant(0.0, shape_of(x), type_of(x));
      out_.push_back(make_node("Identity", names_.fresh(name_ + "/out"), {dx}, {gradient.output(k)}));
    }
    return std::move(out_);
  }

 private:
  int type_of(const std::string& name) {
    auto it = types_.find(name);
    user_assert(it != types_.end()) << where_ << ": value '" << name << "' has no static shape and type; give the model's "
                                    << "inputs static shapes with --input-shape";
    return it->second;
  }
  const Shape& shape_of(const std::string& name) {
    type_of(name);
    return shapes_.at(name);
  }

  // A node `op` of `inputs` (attributes copied from `attrs`); returns its
  // output, whose shape is `shape`.
  std::string emit(const std::string& op, const std::vector<std::string>& inputs, const Shape& shape,
                   const onnx::NodeProto* attrs = nullptr) {
    std::string o = names_.fresh(name_ + "/d");
    onnx::NodeProto n = make_node(op, names_.fresh(o + "_" + op), inputs, {o});
    if (attrs)
      for (auto& a : attrs->attribute()) *n.add_attribute() = a;
    out_.push_back(n);
    shapes_[o] = shape;
    types_[o] = elem_;
    return o;
  }

  // An initializer of `shape` filled with v, of element type `type` (float
  // or double; by default the gradient's).
  std::string constant(double v, const Shape& shape, int type = 0) {
    type = type ? type : elem_;
    user_assert(type == onnx::TensorProto::FLOAT || type == onnx::TensorProto::DOUBLE)
        << where_ << ": kilnc differentiates float and double tensors only";
    onnx::TensorProto t;
    t.set_name(names_.fresh("gradient_const"));
    t.set_data_type(type);
    int64_t n = 1;
    for (int64_t d : shape) {
      t.add_dims(d);
      n *= d;
    }
    for (int64_t i = 0; i < n; i++) {
      if (type == onnx::TensorProto::FLOAT) t.add_float_data((float)v);
      else t.add_double_data(v);
    }
    *g_.add_initializer() = t;
    shapes_[t.name()] = shape;
    types_[t.name()] = type;
    return t.name();
  }

  // The gradient `d` (of a node output's shape) summed over the axes
  // numpy broadcasting stretched `input` along, then shaped as `input`.
  std::string unbroadcast(const std::string& d, const std::string& input) {
    const Shape ds = shape_of(d), is = shape_of(input);
    if (ds == is) return d;
    user_assert(ds.size() >= is.size()) << where_ << ": '" << input << "' has more dimensions than its node's output";
    const size_t r = ds.size() - is.size();
    std::vector<int64_t> axes;
    for (size_t k = 0; k < ds.size(); k++)
      if (k < r || (is[k - r] == 1 && ds[k] != 1)) axes.push_back((int64_t)k);
    Shape kept = ds;
    for (int64_t a : axes) kept[(size_t)a] = 1;
    std::string summed;
    if (opset_ >= 13) {
      onnx::TensorProto t = int_tensor(names_.fresh("gradient_axes"), onnx::TensorProto::INT64, axes, false);
      *g_.add_initializer() = t;
      summed = emit("ReduceSum", {d, t.name()}, kept);
    } else {
      onnx::NodeProto attrs;
      auto* a = attrs.add_attribute();
      a->set_name("axes");
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t x : axes) a->add_ints(x);
      summed = emit("ReduceSum", {d}, kept, &attrs);
    }
    onnx::TensorProto s = int_tensor(names_.fresh("gradient_shape"), onnx::TensorProto::INT64, is, false);
    *g_.add_initializer() = s;
    return emit("Reshape", {summed, s.name()}, is);
  }

  // Adds `d` to the gradient of `value`.
  void accumulate(const std::string& value, const std::string& d) {
    auto it = grads_.find(value);
    if (it == grads_.end()) grads_[value] = d;
    else it->second = emit("Add", {it->second, d}, shape_of(value));
  }

  // The vector-Jacobian product of node n: its inputs' shares of its output's gradient.
  void backward(const onnx::NodeProto& n, const std::set<std::string>& from_x) {
    const std::string& op = n.op_type();
    const std::string node = op + " node '" + n.name() + "'";
    if (n.output_size() != 1 || !(n.domain().empty() || n.domain() == "ai.onnx"))
      user_error << where_ << ": kilnc cannot differentiate " << node << " (one output, default domain)";
    const std::string dy = grads_.at(n.output(0)), y = n.output(0);
    const Shape ys = shape_of(y);
    auto input = [&](int k) { return k < n.input_size() ? n.input(k) : std::string(); };
    auto wants = [&](int k) { return !input(k).empty() && from_x.count(input(k)); };
    auto give = [&](int k, const std::string& d) {
      if (wants(k)) accumulate(input(k), unbroadcast(d, input(k)));
    };
    if (op == "Add" || op == "Identity") {
      give(0, dy), give(1, dy);
    } else if (op == "Sub") {
      give(0, dy);
      if (wants(1)) give(1, emit("Neg", {dy}, ys));
    } else if (op == "Mul") {
      if (wants(0)) give(0, emit("Mul", {dy, input(1)}, ys));
      if (wants(1)) give(1, emit("Mul", {dy, input(0)}, ys));
    } else if (op == "Div") {  // d(a / b) = da / b - y db / b
      if (wants(0)) give(0, emit("Div", {dy, input(1)}, ys));
      if (wants(1)) give(1, emit("Neg", {emit("Div", {emit("Mul", {dy, y}, ys), input(1)}, ys)}, ys));
    } else if (op == "Neg") {
      give(0, emit("Neg", {dy}, ys));
    } else if (op == "Relu") {
      onnx::NodeProto to;
      auto* a = to.add_attribute();
      a->set_name("to");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(elem_);
      std::string positive = emit("Greater", {input(0), constant(0.0, {})}, ys);
      give(0, emit("Mul", {dy, emit("Cast", {positive}, ys, &to)}, ys));
    } else if (op == "Sigmoid") {  // y (1 - y)
      give(0, emit("Mul", {dy, emit("Mul", {y, emit("Sub", {constant(1.0, {}), y}, ys)}, ys)}, ys));
    } else if (op == "Tanh") {  // 1 - y^2
      give(0, emit("Mul", {dy, emit("Sub", {constant(1.0, {}), emit("Mul", {y, y}, ys)}, ys)}, ys));
    } else if (op == "Exp") {
      give(0, emit("Mul", {dy, y}, ys));
    } else if (op == "MatMul" && shape_of(input(0)).size() == 2 && shape_of(input(1)).size() == 2) {
      const Shape as = shape_of(input(0)), bs = shape_of(input(1));
      if (wants(0)) give(0, emit("MatMul", {dy, emit("Transpose", {input(1)}, {bs[1], bs[0]})}, as));
      if (wants(1)) give(1, emit("MatMul", {emit("Transpose", {input(0)}, {as[1], as[0]}), dy}, bs));
    } else {
      user_error << where_ << ": kilnc cannot differentiate " << node
                 << " (it differentiates Add, Sub, Mul, Div, Neg, Identity, Relu, Sigmoid, Tanh, Exp and 2-D MatMul)";
    }
  }

  onnx::GraphProto& g_;
  SubgraphInliner& names_;
  int64_t opset_;
  std::string name_;                          // the Gradient node's name (its values' prefix)
  std::string where_;                         // "Gradient node 'NAME'", for messages
  int elem_ = 0;                              // the element type differentiated (float or double)
  std::map<std::string, Shape> shapes_;       // static shapes of the values
  std::map<std::string, int> types_;          // element types of the values
  std::map<std::string, std::string> grads_;  // value -> the name of its gradient so far
  std::vector<onnx::NodeProto> out_;          // the backward nodes, in order
};

}  // namespace

int expand_gradients(onnx::ModelProto& model) {
  onnx::GraphProto& g = *model.mutable_graph();
  int64_t opset = 0;
  for (auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  int expanded = 0;
  for (int i = 0; i < g.node_size(); i++) {
    if (!is_gradient(g.node(i))) continue;
    onnx::NodeProto gradient = g.node(i);
    if (gradient.name().empty()) gradient.set_name("Gradient_" + std::to_string(i));
    SubgraphInliner names(g);
    Expander e(model, names, gradient, opset);
    std::vector<onnx::NodeProto> nodes = e.expand(gradient);
    // The backward nodes take the Gradient node's place, then everything is
    // ordered by what it reads (y may come after the Gradient node).
    std::vector<onnx::NodeProto> all(g.node().begin(), g.node().end());
    all.erase(all.begin() + i);
    all.insert(all.begin() + i, nodes.begin(), nodes.end());
    all = sorted(std::move(all));
    g.clear_node();
    for (auto& n : all) *g.add_node() = std::move(n);
    i = -1;  // the next Gradient node, from the start: the order changed
    expanded++;
  }
  return expanded;
}

}  // namespace kiln
