#include "import/static_sequences.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "import/fold_shapes.h"
#include "import/inline_if.h"
#include "import/subgraph.h"
#include "support/diagnostics.h"

namespace kiln {
namespace {

using TP = onnx::TensorProto;

std::string describe(const onnx::NodeProto& n) { return n.op_type() + " node '" + n.name() + "'"; }

class Unroller {
 public:
  explicit Unroller(onnx::ModelProto& m) : m_(m), g_(*m.mutable_graph()), inliner_(g_) {
    for (auto& o : m.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
    // (An initializer that is also a graph input is a constant to kilnc, as in onnx_import.cpp.)
    for (auto& t : g_.initializer()) constants_[t.name()] = &t;
    for (auto& n : g_.node())  // (the import left Constant nodes in their `value` form)
      if (n.op_type() == "Constant" && n.output_size() == 1)
        for (auto& a : n.attribute())
          if (a.name() == "value" && a.has_t()) constants_[n.output(0)] = &a.t();
    shapes_ = static_shapes(g_);
  }

  int run() {
    std::vector<onnx::NodeProto> out;
    int rewritten = 0;
    for (const auto& n : g_.node()) {
      if (rewrite(n, out)) rewritten++;
      else out.push_back(n);
    }
    if (!rewritten) return 0;
    // All or nothing: no sequence this step dissolved may be read by what is
    // left, subgraphs (If, Loop bodies reading outer values) included. What
    // is left may still learn a length (a Loop's trip count is often a
    // SequenceLength, and unrolling the Loop dissolves the rest).
    for (auto& n : out)
      if (reads_list(n)) return lengths_only();
    std::vector<onnx::ValueInfoProto> outputs;
    for (auto& o : g_.output()) {
      auto it = lists_.find(o.name());
      if (it == lists_.end()) {
        outputs.push_back(o);
        continue;
      }
      expand_output(o, it->second, out, outputs);
    }
    g_.clear_node();
    for (auto& n : out) *g_.add_node() = n;
    for (auto& t : new_initializers_) *g_.add_initializer() = t;
    g_.clear_output();
    for (auto& o : outputs) *g_.add_output() = std::move(o);
    return rewritten;
  }

 private:
  onnx::ModelProto& m_;
  onnx::GraphProto& g_;
  int64_t opset_ = 13;
  std::map<std::string, const TP*> constants_;            // value -> its constant
  std::map<std::string, std::vector<int64_t>> shapes_;    // value -> its static shape
  std::map<std::string, std::vector<std::string>> lists_;  // sequence value -> its elements
  std::vector<TP> new_initializers_;                       // axes and splits of the new nodes
  int fresh_ = 0;
  SubgraphInliner inliner_;  // copies of SequenceMap bodies

  // Only the SequenceLengths of known lists become constants (the rest of
  // the graph is unchanged); returns how many.
  int lengths_only() {
    std::vector<onnx::NodeProto> out;
    int rewritten = 0;
    for (const auto& n : g_.node()) {
      const std::vector<std::string>* in = list(n, 0);
      if (n.op_type() == "SequenceLength" && in && rewrite(n, out)) rewritten++;
      else out.push_back(n);
    }
    if (!rewritten) return 0;
    g_.clear_node();
    for (auto& n : out) *g_.add_node() = n;
    return rewritten;
  }

  // A sequence model output becomes one output per element, NAME[i] (an
  // Identity of the element); the model's metadata records the sequence
  // (kSequenceOutputKey) for the bundle's composite values.
  void expand_output(const onnx::ValueInfoProto& o, const std::vector<std::string>& elems,
                     std::vector<onnx::NodeProto>& out, std::vector<onnx::ValueInfoProto>& outputs) {
    for (size_t i = 0; i < elems.size(); i++) {
      onnx::ValueInfoProto e;
      e.set_name(sequence_element_name(o.name(), i));
      if (o.type().has_sequence_type()) *e.mutable_type() = o.type().sequence_type().elem_type();
      onnx::NodeProto id;
      id.set_op_type("Identity");
      id.set_name(e.name() + "/Identity");
      id.add_input(elems[i]);
      id.add_output(e.name());
      out.push_back(id);
      outputs.push_back(e);
    }
    auto* p = m_.add_metadata_props();
    p->set_key(kSequenceOutputKey + o.name());
    p->set_value(std::to_string(elems.size()));
  }

  bool reads_list(const onnx::NodeProto& n) const {
    for (auto& i : n.input())
      if (lists_.count(i)) return true;
    for (auto& a : n.attribute()) {
      for (auto& sub : a.graphs())
        for (auto& m : sub.node())
          if (reads_list(m)) return true;
      if (a.has_g())
        for (auto& m : a.g().node())
          if (reads_list(m)) return true;
    }
    return false;
  }
  std::string input(const onnx::NodeProto& n, int i) const { return i < n.input_size() ? n.input(i) : std::string(); }
  const std::vector<std::string>* list(const onnx::NodeProto& n, int i) const {
    auto it = lists_.find(input(n, i));
    return it == lists_.end() ? nullptr : &it->second;
  }
  std::optional<std::vector<int64_t>> ints(const std::string& name) const {
    auto it = constants_.find(name);
    if (it == constants_.end()) return std::nullopt;
    return constant_ints(*it->second);
  }
  int64_t attr(const onnx::NodeProto& n, const char* name, int64_t dflt) const {
    for (auto& a : n.attribute())
      if (a.name() == name) return a.i();
    return dflt;
  }
  std::string temp(const onnx::NodeProto& n, const std::string& what) {
    return n.output(0) + "/" + what + "." + std::to_string(fresh_++);
  }
  // An int64 initializer `values` (1-D), named after node n (added when the rewrite holds).
  std::string ints_initializer(const onnx::NodeProto& n, const std::vector<int64_t>& values) {
    TP t;
    t.set_name(temp(n, "const"));
    t.set_data_type(TP::INT64);
    t.add_dims((int64_t)values.size());
    for (int64_t v : values) t.add_int64_data(v);
    new_initializers_.push_back(t);
    return t.name();
  }
  onnx::NodeProto& emit(std::vector<onnx::NodeProto>& out, const onnx::NodeProto& from, const std::string& op,
                        std::vector<std::string> inputs, std::vector<std::string> outputs) {
    onnx::NodeProto m;
    m.set_op_type(op);
    m.set_name(from.name() + "/" + op + "." + std::to_string(fresh_++));
    for (auto& i : inputs) m.add_input(i);
    for (auto& o : outputs) m.add_output(o);
    out.push_back(m);
    return out.back();
  }
  static void set_ints(onnx::NodeProto& m, const char* name, const std::vector<int64_t>& v) {
    auto* a = m.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void set_int(onnx::NodeProto& m, const char* name, int64_t v) {
    auto* a = m.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  // Unsqueeze / Squeeze / Split with `axes` or `split` an attribute (opset < 13) or an input.
  onnx::NodeProto& emit_with_ints(std::vector<onnx::NodeProto>& out, const onnx::NodeProto& from, const std::string& op,
                                  const std::string& x, const char* name, const std::vector<int64_t>& v,
                                  std::vector<std::string> outputs) {
    if (opset_ >= 13) return emit(out, from, op, {x, ints_initializer(from, v)}, outputs);
    onnx::NodeProto& m = emit(out, from, op, {x}, outputs);
    set_ints(m, name, v);
    return m;
  }
  // A position input (absent: `dflt`) as an index in [0, limit], or nothing when not a constant.
  std::optional<int64_t> position(const onnx::NodeProto& n, int i, int64_t size, int64_t dflt, int64_t limit) const {
    if (input(n, i).empty()) return dflt;
    auto v = ints(input(n, i));
    if (!v) return std::nullopt;
    user_assert(v->size() == 1) << describe(n) << ": the position must hold one value";
    int64_t p = (*v)[0] < 0 ? (*v)[0] + size : (*v)[0];
    user_assert(p >= 0 && p <= limit) << describe(n) << ": position " << (*v)[0] << " is out of range for a sequence of "
                                      << size << " tensors";
    return p;
  }

  bool rewrite(const onnx::NodeProto& n, std::vector<onnx::NodeProto>& out) {
    if (n.domain() == kSequenceWhereDomain && n.op_type() == "Where") return where(n, out);
    if (!n.domain().empty() && n.domain() != "ai.onnx") return false;
    const std::string& op = n.op_type();
    if (op == "SequenceEmpty") {
      lists_[n.output(0)] = {};
      return true;
    }
    if (op == "SequenceConstruct") {
      lists_[n.output(0)] = std::vector<std::string>(n.input().begin(), n.input().end());
      return true;
    }
    const std::vector<std::string>* in = list(n, 0);
    if (op == "SplitToSequence") return split(n, out);
    if (op == "Where") return where(n, out);
    if (!in) return false;
    if (op == "Identity") {
      lists_[n.output(0)] = *in;
      return true;
    }
    if (op == "SequenceMap") return map(n, out);
    const int64_t size = (int64_t)in->size();
    if (op == "SequenceInsert") {
      auto p = position(n, 2, size, size, size);
      if (!p) return false;
      std::vector<std::string> l = *in;
      l.insert(l.begin() + *p, input(n, 1));
      lists_[n.output(0)] = l;
      return true;
    }
    if (op == "SequenceErase" || op == "SequenceAt") {
      user_assert(size > 0) << describe(n) << ": the sequence is empty";
      auto p = position(n, 1, size, size - 1, size - 1);
      if (!p) return false;
      if (op == "SequenceAt") {
        emit(out, n, "Identity", {(*in)[(size_t)*p]}, {n.output(0)});
      } else {
        std::vector<std::string> l = *in;
        l.erase(l.begin() + *p);
        lists_[n.output(0)] = l;
      }
      return true;
    }
    if (op == "SequenceLength") {
      onnx::NodeProto& c = emit(out, n, "Constant", {}, {n.output(0)});
      auto* a = c.add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      a->mutable_t()->set_data_type(TP::INT64);
      a->mutable_t()->add_int64_data(size);
      return true;
    }
    if (op == "ConcatFromSequence") {
      user_assert(size > 0) << describe(n) << ": the sequence is empty: there is nothing to concatenate";
      int64_t axis = attr(n, "axis", 0);
      std::vector<std::string> parts = *in;
      if (attr(n, "new_axis", 0) != 0)
        for (auto& p : parts) {
          std::string u = temp(n, "unsqueezed");
          emit_with_ints(out, n, "Unsqueeze", p, "axes", {axis}, {u});
          p = u;
        }
      set_int(emit(out, n, "Concat", parts, {n.output(0)}), "axis", axis);
      return true;
    }
    return false;
  }

  // Where(c, A, B) of two lists of one length (an inlined run-time If's
  // sequence output): one Where per element.
  bool where(const onnx::NodeProto& n, std::vector<onnx::NodeProto>& out) {
    const std::vector<std::string>*a = list(n, 1), *b = list(n, 2);
    if (!a || !b) return false;
    user_assert(a->size() == b->size()) << describe(n) << ": the branches' sequences hold " << a->size() << " and "
                                        << b->size() << " tensors; kilnc needs them alike";
    std::vector<std::string> l;
    for (size_t k = 0; k < a->size(); k++) {
      l.push_back(temp(n, "element"));
      emit(out, n, "Where", {input(n, 0), (*a)[k], (*b)[k]}, {l.back()});
    }
    lists_[n.output(0)] = l;
    return true;
  }

  // SequenceMap: the body once per position, reading that element of each
  // sequence input and the tensor inputs as they are.
  bool map(const onnx::NodeProto& n, std::vector<onnx::NodeProto>& out) {
    const onnx::GraphProto* body = graph_attribute(n, "body");
    if (!body) return false;
    const size_t size = list(n, 0)->size();
    for (int i = 1; i < n.input_size(); i++) {
      const std::vector<std::string>* l = list(n, i);
      if (!l && !lists_.count(input(n, i)) && is_sequence_somewhere(input(n, i))) return false;
      user_assert(!l || l->size() == size) << describe(n) << ": its sequences hold " << size << " and " << l->size()
                                           << " tensors; SequenceMap needs them alike";
    }
    std::vector<std::vector<std::string>> results((size_t)n.output_size());
    for (size_t k = 0; k < size; k++) {
      std::vector<std::string> bound;
      for (int i = 0; i < n.input_size(); i++) {
        const std::vector<std::string>* l = list(n, i);
        bound.push_back(l ? (*l)[k] : input(n, i));
      }
      std::vector<std::string> r = inliner_.inline_graph(*body, bound, n.output(0) + "/" + std::to_string(k) + "/", out);
      for (int o = 0; o < n.output_size() && o < (int)r.size(); o++) results[(size_t)o].push_back(r[(size_t)o]);
    }
    for (int o = 0; o < n.output_size(); o++) lists_[n.output(o)] = results[(size_t)o];
    return true;
  }
  // A value the graph types as a sequence (an input of SequenceMap that is
  // no known list must be a tensor for the rewrite to hold).
  bool is_sequence_somewhere(const std::string& name) const {
    for (auto* vis : {&g_.input(), &g_.value_info(), &g_.output()})
      for (auto& vi : *vis)
        if (vi.name() == name) return vi.type().has_sequence_type();
    return false;
  }

  // SplitToSequence: Split into the parts the split input (or 1s) gives, then
  // (keepdims=0, no split) Squeeze each.
  bool split(const onnx::NodeProto& n, std::vector<onnx::NodeProto>& out) {
    auto shape = shapes_.find(input(n, 0));
    if (shape == shapes_.end()) return false;
    const int64_t rank = (int64_t)shape->second.size();
    int64_t axis = attr(n, "axis", 0);
    if (axis < 0) axis += rank;
    user_assert(axis >= 0 && axis < rank) << describe(n) << ": axis is out of range";
    const int64_t dim = shape->second[(size_t)axis];
    // A sequence is a list of separately planned tensors: a handful, not millions.
    constexpr int64_t kMaxParts = 4096;
    user_assert(dim >= 0) << describe(n) << ": the split dimension is negative";
    std::vector<int64_t> sizes;
    bool squeeze = false;
    if (input(n, 1).empty()) {
      user_assert(dim <= kMaxParts) << describe(n) << ": " << dim << " parts; kilnc unrolls sequences of at most "
                                    << kMaxParts << " tensors";
      sizes.assign((size_t)dim, 1);
      squeeze = attr(n, "keepdims", 1) == 0;
    } else {
      auto s = ints(input(n, 1));
      if (!s) return false;
      auto sd = shapes_.find(input(n, 1));
      bool scalar = sd != shapes_.end() && sd->second.empty();
      if (scalar) {
        user_assert(s->size() == 1 && (*s)[0] > 0) << describe(n) << ": a scalar split must be positive";
        user_assert((dim + (*s)[0] - 1) / (*s)[0] <= kMaxParts)
            << describe(n) << ": more than " << kMaxParts << " parts; kilnc unrolls sequences of at most that many";
        for (int64_t left = dim; left > 0; left -= (*s)[0]) sizes.push_back(std::min(left, (*s)[0]));
      } else {
        int64_t total = 0;
        for (int64_t v : *s) {
          user_assert(v >= 0 && v <= dim) << describe(n) << ": split size " << v << " is outside 0.." << dim;
          total += v;
        }
        user_assert(total == dim) << describe(n) << ": the split sizes add up to " << total << ", not " << dim;
        user_assert((int64_t)s->size() <= kMaxParts) << describe(n) << ": more than " << kMaxParts << " parts";
        sizes = *s;
      }
    }
    std::vector<std::string> parts, elems;
    for (size_t k = 0; k < sizes.size(); k++) parts.push_back(temp(n, "part"));
    if (!parts.empty()) set_int(emit_with_ints(out, n, "Split", input(n, 0), "split", sizes, parts), "axis", axis);
    for (auto& p : parts) {
      if (!squeeze) {
        elems.push_back(p);
        continue;
      }
      std::string s = temp(n, "squeezed");
      emit_with_ints(out, n, "Squeeze", p, "axes", {axis}, {s});
      elems.push_back(s);
    }
    lists_[n.output(0)] = elems;
    return true;
  }
};

}  // namespace

int unroll_static_sequences(onnx::ModelProto& model) { return Unroller(model).run(); }

std::vector<std::pair<std::string, int64_t>> expand_sequence_inputs(onnx::ModelProto& model,
                                                                     const std::map<std::string, int64_t>& lengths) {
  onnx::GraphProto& g = *model.mutable_graph();
  std::set<std::string> initializers;
  for (auto& t : g.initializer()) initializers.insert(t.name());
  std::map<std::string, int64_t> unused = lengths;
  std::vector<std::pair<std::string, int64_t>> expanded;
  std::vector<onnx::ValueInfoProto> inputs;
  std::vector<onnx::NodeProto> constructs;
  for (auto& in : g.input()) {
    auto it = lengths.find(in.name());
    if (!in.type().has_sequence_type() || initializers.count(in.name())) {
      user_assert(it == lengths.end()) << "--sequence-length names '" << in.name() << "', which is no sequence input";
      inputs.push_back(in);
      continue;
    }
    user_assert(it != lengths.end()) << "model input '" << in.name() << "' is a sequence: give its number of tensors "
                                     << "with --sequence-length " << in.name() << "=N (its elements become inputs "
                                     << sequence_element_name(in.name(), 0) << ", ...)";
    unused.erase(in.name());
    const onnx::TypeProto& elem = in.type().sequence_type().elem_type();
    user_assert(elem.has_tensor_type()) << "model input '" << in.name()
                                        << "' is a sequence of non-tensors, which kilnc does not support";
    onnx::NodeProto c;
    c.set_op_type(it->second ? "SequenceConstruct" : "SequenceEmpty");
    c.set_name(in.name() + "/" + c.op_type());
    c.add_output(in.name());
    if (!it->second) {
      auto* a = c.add_attribute();
      a->set_name("dtype");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(elem.tensor_type().elem_type());
    }
    for (int64_t i = 0; i < it->second; i++) {
      onnx::ValueInfoProto e;
      e.set_name(sequence_element_name(in.name(), (size_t)i));
      *e.mutable_type() = elem;
      c.add_input(e.name());
      inputs.push_back(e);
    }
    constructs.push_back(c);
    expanded.push_back({in.name(), it->second});
  }
  if (!unused.empty()) user_error << "--sequence-length names '" << unused.begin()->first << "', which is not a model input";
  if (expanded.empty()) return expanded;
  g.clear_input();
  for (auto& in : inputs) *g.add_input() = std::move(in);
  std::vector<onnx::NodeProto> nodes(constructs.begin(), constructs.end());
  nodes.insert(nodes.end(), g.node().begin(), g.node().end());
  g.clear_node();
  for (auto& n : nodes) *g.add_node() = std::move(n);
  return expanded;
}

std::string sequence_element_name(const std::string& sequence, size_t index) {
  return sequence + "[" + std::to_string(index) + "]";
}

}  // namespace kiln
