#include "import/static_sequences.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "import/boundary_values.h"
#include "import/fold_shapes.h"
#include "import/inline_if.h"
#include "import/subgraph.h"
#include "support/diagnostics.h"

namespace kiln {
namespace {

using TP = onnx::TensorProto;

class Unroller {
 public:
  explicit Unroller(onnx::ModelProto& m) : m_(m), g_(*m.mutable_graph()), inliner_(g_) {
    for (auto& o : m.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
    // (An initializer that is also a graph input is a constant to kilnc, as in onnx_import.cpp.)
    constants_ = graph_constants(g_, /*inputs_override=*/false);
    shapes_ = static_shapes(g_);
    std::set<std::string> inputs;
    for (auto& i : g_.input()) inputs.insert(i.name());
    for (auto& r : composite_records(m))  // optional inputs (boundary_values.h) whose typed input is left
      if (r.optional && !r.output && inputs.count(r.name)) {
        optionals_[r.name] = {optional_presence_name(r.name), optional_value_name(r.name)};
        optional_inputs_.insert(r.name);
      }
  }

  int run() {
    std::vector<onnx::NodeProto> out;
    int rewritten = 0;
    for (const auto& n : g_.node()) {
      if (rewrite(n, out)) rewritten++;
      else out.push_back(n);
    }
    if (!rewritten && optional_inputs_.empty()) return 0;
    // All or nothing: no sequence this step dissolved may be read by what is
    // left, subgraphs (If, Loop bodies reading outer values) included. What
    // is left may still learn a length (a Loop's trip count is often a
    // SequenceLength, and unrolling the Loop dissolves the rest).
    for (auto& n : out)
      if (reads_list(n)) return rewritten ? lengths_only() : 0;
    std::vector<onnx::ValueInfoProto> outputs;
    for (auto& o : g_.output()) {
      if (lists_.count(o.name()) || optionals_.count(o.name())) expand_output(o, out, outputs);
      else outputs.push_back(o);
    }
    g_.clear_node();
    for (auto& n : out) *g_.add_node() = n;
    for (auto& t : new_initializers_) *g_.add_initializer() = t;
    g_.clear_output();
    for (auto& o : outputs) *g_.add_output() = std::move(o);
    // Optional inputs are their tensors now (nothing reads the typed input).
    std::vector<onnx::ValueInfoProto> inputs;
    for (auto& i : g_.input())
      if (!optional_inputs_.count(i.name())) inputs.push_back(i);
    g_.clear_input();
    for (auto& i : inputs) *g_.add_input() = std::move(i);
    return rewritten + (int)optional_inputs_.size();
  }

 private:
  onnx::ModelProto& m_;
  onnx::GraphProto& g_;
  int64_t opset_ = 13;
  std::map<std::string, const TP*> constants_;            // value -> its constant
  std::map<std::string, std::vector<int64_t>> shapes_;    // value -> its static shape
  std::map<std::string, std::vector<std::string>> lists_;  // sequence value -> its elements
  // An optional value: whether it holds one (a bool scalar: a constant, or
  // computed at run time) and what ("": none; a tensor or a list's name).
  struct Optional {
    std::string presence;
    std::string value;
  };
  std::map<std::string, Optional> optionals_;  // optional value -> its parts
  std::set<std::string> optional_inputs_;      // model inputs the boundary expanded
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

  // A sequence or optional model output becomes its tensors
  // (boundary_values.h), each an Identity of what the graph computes; the
  // model's metadata records it for the bundle's composite values.
  void expand_output(const onnx::ValueInfoProto& o, std::vector<onnx::NodeProto>& out,
                     std::vector<onnx::ValueInfoProto>& outputs) {
    CompositeRecord r;
    r.name = o.name();
    r.output = true;
    std::vector<std::string> sources;
    const onnx::TypeProto* type = &o.type();
    auto opt = optionals_.find(o.name());
    if (opt != optionals_.end()) {
      r.optional = true;
      r.empty = opt->second.value.empty();
      if (type->has_optional_type()) type = &type->optional_type().elem_type();
      output_of(o, opt->second.presence, optional_presence_name(o.name()), out);
      onnx::ValueInfoProto p;
      p.set_name(optional_presence_name(o.name()));
      p.mutable_type()->mutable_tensor_type()->set_elem_type(TP::BOOL);
      p.mutable_type()->mutable_tensor_type()->mutable_shape();
      outputs.push_back(p);
      auto l = lists_.find(opt->second.value);
      r.sequence = l != lists_.end() || type->has_sequence_type();
      if (l != lists_.end()) sources = l->second;
      else if (!r.empty) sources = {opt->second.value};
      user_assert(r.empty || r.sequence == (l != lists_.end()))
          << "model output '" << o.name() << "': its value is not the kind of value its type says";
    } else {
      r.sequence = true;
      sources = lists_.at(o.name());
    }
    r.count = r.sequence ? (int64_t)sources.size() : 0;
    if (type->has_sequence_type()) type = &type->sequence_type().elem_type();
    std::vector<std::string> names = r.element_names();
    for (size_t i = 0; i < names.size(); i++) {
      onnx::ValueInfoProto e;
      e.set_name(names[i]);
      if (type->has_tensor_type()) *e.mutable_type() = *type;
      output_of(o, sources[i], e.name(), out);
      outputs.push_back(e);
    }
    add_composite_record(m_, r);
  }

  // Output tensor `name` of model output `o` holds `source`: an Identity,
  // unless it is `source` itself (a model input passed through).
  void output_of(const onnx::ValueInfoProto& o, const std::string& source, const std::string& name,
                 std::vector<onnx::NodeProto>& out) {
    if (source == name) return;
    user_assert(!inliner_.taken(name)) << "model output '" << o.name() << "' would become tensor '" << name
                                       << "', but the model already has a value of that name";
    inliner_.take(name);
    onnx::NodeProto n;
    n.set_name(o.name());
    emit(out, n, "Identity", {source}, {name});
  }

  bool reads_list(const onnx::NodeProto& n) const {
    for (auto& i : n.input())
      if (lists_.count(i) || optionals_.count(i)) return true;
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
    new_initializers_.push_back(int_tensor(temp(n, "const"), TP::INT64, values, false));
    return new_initializers_.back().name();
  }
  onnx::NodeProto& emit(std::vector<onnx::NodeProto>& out, const onnx::NodeProto& from, const std::string& op,
                        std::vector<std::string> inputs, std::vector<std::string> outputs) {
    out.push_back(make_node(op, from.name() + "/" + op + "." + std::to_string(fresh_++), inputs, outputs));
    return out.back();
  }
  static void set_ints(onnx::NodeProto& m, const char* name, const std::vector<int64_t>& v) {
    auto* a = m.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
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
    user_assert(v->size() == 1) << describe_node(n) << ": the position must hold one value";
    int64_t p = (*v)[0] < 0 ? (*v)[0] + size : (*v)[0];
    user_assert(p >= 0 && p <= limit) << describe_node(n) << ": position " << (*v)[0] << " is out of range for a sequence of "
                                      << size << " tensors";
    return p;
  }

  bool rewrite(const onnx::NodeProto& n, std::vector<onnx::NodeProto>& out) {
    if (n.domain() == kSequenceWhereDomain && n.op_type() == "Where") return where(n, out);
    if (!n.domain().empty() && n.domain() != "ai.onnx") return false;
    const std::string& op = n.op_type();
    if (op == "Optional" || op == "OptionalHasElement" || op == "OptionalGetElement" ||
        (op == "Identity" && optionals_.count(input(n, 0))))
      return optional(n, out);
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
      if (!p) return run_time_insert(n, *in, out);
      std::vector<std::string> l = *in;
      l.insert(l.begin() + *p, input(n, 1));
      lists_[n.output(0)] = l;
      return true;
    }
    if (op == "SequenceErase" || op == "SequenceAt") {
      user_assert(size > 0) << describe_node(n) << ": the sequence is empty";
      auto p = position(n, 1, size, size - 1, size - 1);
      if (!p) return run_time_at_or_erase(n, *in, out);
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
      user_assert(size > 0) << describe_node(n) << ": the sequence is empty: there is nothing to concatenate";
      int64_t axis = attr(n, "axis", 0);
      std::vector<std::string> parts = *in;
      if (attr(n, "new_axis", 0) != 0)
        for (auto& p : parts) {
          std::string u = temp(n, "unsqueezed");
          emit_with_ints(out, n, "Unsqueeze", p, "axes", {axis}, {u});
          p = u;
        }
      set_int_attribute(emit(out, n, "Concat", parts, {n.output(0)}), "axis", axis);
      return true;
    }
    return false;
  }

  // Positions known only at run time (an input): each element of the result
  // is a Where over the candidates, so every tensor involved must have one
  // static shape. An out-of-range position (ONNX's error) fails the run: the
  // normalized position is range-checked (boundary_values.h, RangeCheck;
  // on targets without run-time checks it picks an end).
  bool alike(const std::vector<std::string>& names) const {
    const std::vector<int64_t>* first = nullptr;
    for (auto& name : names) {
      auto it = shapes_.find(name);
      if (it == shapes_.end() || (first && it->second != *first)) return false;
      first = &it->second;
    }
    return true;
  }
  std::string int64_scalar(const onnx::NodeProto& n, int64_t value) {
    new_initializers_.push_back(int_tensor(temp(n, "const"), TP::INT64, {value}, true));
    return new_initializers_.back().name();
  }
  // The position input as an int64 scalar (a negative one counts from the
  // end), checked at run time to lie in [0, hi].
  std::string run_time_position(const onnx::NodeProto& n, int i, int64_t size, int64_t hi,
                                std::vector<onnx::NodeProto>& out) {
    std::string p = temp(n, "position"), negative = temp(n, "negative"), wrapped = temp(n, "wrapped");
    std::string scalar = temp(n, "position_scalar");
    set_int_attribute(emit(out, n, "Cast", {input(n, i)}, {p}), "to", TP::INT64);
    emit(out, n, "Reshape", {p, ints_initializer(n, {})}, {scalar});
    emit(out, n, "Less", {scalar, int64_scalar(n, 0)}, {negative});
    emit(out, n, "Add", {scalar, int64_scalar(n, size)}, {wrapped});
    std::string r = temp(n, "position_in_range");
    emit(out, n, "Where", {negative, wrapped, scalar}, {r});
    add_range_check(m_, {r, 0, hi, n.name().empty() ? n.op_type() : n.name()});
    return r;
  }
  std::string is(const onnx::NodeProto& n, const std::string& p, const char* op, int64_t k,
                 std::vector<onnx::NodeProto>& out) {  // p == k, or k < p ("Less")
    std::string c = temp(n, "condition");
    if (std::string(op) == "Equal") emit(out, n, "Equal", {p, int64_scalar(n, k)}, {c});
    else emit(out, n, "Less", {int64_scalar(n, k), p}, {c});
    return c;
  }
  std::string where(const onnx::NodeProto& n, const std::string& c, const std::string& a, const std::string& b,
                    std::vector<onnx::NodeProto>& out) {
    std::string r = temp(n, "element");
    emit(out, n, "Where", {c, a, b}, {r});
    return r;
  }
  bool run_time_insert(const onnx::NodeProto& n, const std::vector<std::string>& l, std::vector<onnx::NodeProto>& out) {
    std::vector<std::string> all = l;
    all.push_back(input(n, 1));
    if (input(n, 2).empty() || !alike(all)) return false;
    const int64_t size = (int64_t)l.size();
    std::string p = run_time_position(n, 2, size, size, out), t = input(n, 1);
    std::vector<std::string> r;
    for (int64_t k = 0; k <= size; k++) {  // k < p: l[k]; k == p: t; k > p: l[k - 1]
      std::string at = k == 0 ? t : where(n, is(n, p, "Equal", k, out), t, l[(size_t)k - 1], out);
      if (k == 0 && size > 0) at = where(n, is(n, p, "Equal", 0, out), t, l[0], out);
      if (k > 0 && k < size) at = where(n, is(n, p, "Less", k, out), l[(size_t)k], at, out);
      r.push_back(at);
    }
    lists_[n.output(0)] = r;
    return true;
  }
  bool run_time_at_or_erase(const onnx::NodeProto& n, const std::vector<std::string>& l,
                            std::vector<onnx::NodeProto>& out) {
    if (!alike(l)) return false;
    const int64_t size = (int64_t)l.size();
    user_assert(size > 0) << n.op_type() << " node '" << n.name() << "': the sequence is empty, so every position is "
                          << "out of range";
    std::string p = run_time_position(n, 1, size, size - 1, out);
    if (n.op_type() == "SequenceAt") {
      std::string r = l[0];
      for (int64_t k = 1; k < size; k++) r = where(n, is(n, p, "Equal", k, out), l[(size_t)k], r, out);
      emit(out, n, "Identity", {r}, {n.output(0)});
      return true;
    }
    std::vector<std::string> r;  // k < p: l[k]; else l[k + 1]
    for (int64_t k = 0; k + 1 < size; k++) r.push_back(where(n, is(n, p, "Less", k, out), l[(size_t)k], l[(size_t)k + 1], out));
    lists_[n.output(0)] = r;
    return true;
  }

  // A bool scalar constant (a new initializer).
  std::string bool_constant(const onnx::NodeProto& n, bool value) {
    new_initializers_.push_back(int_tensor(temp(n, value ? "true" : "false"), TP::BOOL, {value ? 1 : 0}, true));
    return new_initializers_.back().name();
  }

  // Optional(x) / Optional() / OptionalHasElement / OptionalGetElement /
  // Identity of an optional (opset 18's forms on plain tensors too).
  bool optional(const onnx::NodeProto& n, std::vector<onnx::NodeProto>& out) {
    const std::string& op = n.op_type();
    auto in = optionals_.find(input(n, 0));
    if (op == "Optional") {
      bool has = !input(n, 0).empty();
      optionals_[n.output(0)] = {bool_constant(n, has), has ? input(n, 0) : std::string()};
      return true;
    }
    if (op == "Identity") {
      optionals_[n.output(0)] = in->second;
      return true;
    }
    if (in == optionals_.end()) {  // a plain tensor or list (opset 18), or an absent input
      if (input(n, 0).empty() || lists_.count(input(n, 0)) || op == "OptionalHasElement") {
        if (op == "OptionalHasElement") {
          emit(out, n, "Identity", {bool_constant(n, !input(n, 0).empty())}, {n.output(0)});
          return true;
        }
        if (input(n, 0).empty()) return false;
        lists_[n.output(0)] = lists_.at(input(n, 0));
        return true;
      }
      return false;  // a tensor's OptionalGetElement is ONNX's own Identity-like op
    }
    if (op == "OptionalHasElement") {
      emit(out, n, "Identity", {in->second.presence}, {n.output(0)});
      return true;
    }
    // OptionalGetElement: the value (an absent one is the run's error in
    // ONNX; kilnc gives the tensor's contents, zeros for an absent input).
    user_assert(!in->second.value.empty()) << describe_node(n) << ": the optional never holds a value";
    auto l = lists_.find(in->second.value);
    if (l != lists_.end()) lists_[n.output(0)] = l->second;
    else emit(out, n, "Identity", {in->second.value}, {n.output(0)});
    return true;
  }

  // Where(c, A, B) of two optionals: whether either holds a value, and the
  // value (one side's when the other never holds one).
  bool where_optional(const onnx::NodeProto& n, std::vector<onnx::NodeProto>& out) {
    auto a = optionals_.find(input(n, 1)), b = optionals_.find(input(n, 2));
    if (a == optionals_.end() || b == optionals_.end()) return false;
    Optional r;
    r.presence = temp(n, "present");
    emit(out, n, "Where", {input(n, 0), a->second.presence, b->second.presence}, {r.presence});
    const std::string &va = a->second.value, &vb = b->second.value;
    if (va.empty() || vb.empty()) {
      r.value = va.empty() ? vb : va;
    } else {
      onnx::NodeProto w = n;  // the values' Where, as a list's or a tensor's
      w.clear_input();
      w.add_input(input(n, 0));
      w.add_input(va);
      w.add_input(vb);
      w.set_output(0, temp(n, "value"));
      r.value = w.output(0);
      if (!where(w, out)) {
        w.clear_domain();
        out.push_back(w);
      }
    }
    optionals_[n.output(0)] = r;
    return true;
  }

  // Where(c, A, B) of two lists of one length (an inlined run-time If's
  // sequence output): one Where per element.
  bool where(const onnx::NodeProto& n, std::vector<onnx::NodeProto>& out) {
    if (optionals_.count(input(n, 1))) return where_optional(n, out);
    const std::vector<std::string>*a = list(n, 1), *b = list(n, 2);
    if (!a || !b) return false;
    user_assert(a->size() == b->size()) << describe_node(n) << ": the branches' sequences hold " << a->size() << " and "
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
    if (!may_unroll(g_, out.size(), (int64_t)size, *body)) return false;
    for (int i = 1; i < n.input_size(); i++) {
      const std::vector<std::string>* l = list(n, i);
      if (!l && !lists_.count(input(n, i)) && is_sequence_somewhere(input(n, i))) return false;
      user_assert(!l || l->size() == size) << describe_node(n) << ": its sequences hold " << size << " and " << l->size()
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
    user_assert(axis >= 0 && axis < rank) << describe_node(n) << ": axis is out of range";
    const int64_t dim = shape->second[(size_t)axis];
    // A sequence is a list of separately planned tensors: a handful, not millions.
    constexpr int64_t kMaxParts = 4096;
    user_assert(dim >= 0) << describe_node(n) << ": the split dimension is negative";
    std::vector<int64_t> sizes;
    bool squeeze = false;
    if (input(n, 1).empty()) {
      user_assert(dim <= kMaxParts) << describe_node(n) << ": " << dim << " parts; kilnc unrolls sequences of at most "
                                    << kMaxParts << " tensors";
      sizes.assign((size_t)dim, 1);
      squeeze = attr(n, "keepdims", 1) == 0;
    } else {
      auto s = ints(input(n, 1));
      if (!s) return false;
      auto sd = shapes_.find(input(n, 1));
      bool scalar = sd != shapes_.end() && sd->second.empty();
      if (scalar) {
        user_assert(s->size() == 1 && (*s)[0] > 0) << describe_node(n) << ": a scalar split must be positive";
        user_assert((dim + (*s)[0] - 1) / (*s)[0] <= kMaxParts)
            << describe_node(n) << ": more than " << kMaxParts << " parts; kilnc unrolls sequences of at most that many";
        for (int64_t left = dim; left > 0; left -= (*s)[0]) sizes.push_back(std::min(left, (*s)[0]));
      } else {
        int64_t total = 0;
        for (int64_t v : *s) {
          user_assert(v >= 0 && v <= dim) << describe_node(n) << ": split size " << v << " is outside 0.." << dim;
          total += v;
        }
        user_assert(total == dim) << describe_node(n) << ": the split sizes add up to " << total << ", not " << dim;
        user_assert((int64_t)s->size() <= kMaxParts) << describe_node(n) << ": more than " << kMaxParts << " parts";
        sizes = *s;
      }
    }
    std::vector<std::string> parts, elems;
    for (size_t k = 0; k < sizes.size(); k++) parts.push_back(temp(n, "part"));
    if (!parts.empty()) set_int_attribute(emit_with_ints(out, n, "Split", input(n, 0), "split", sizes, parts), "axis", axis);
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

}  // namespace kiln
