#include "import/unroll_loops.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "import/fold_shapes.h"
#include "import/subgraph.h"
#include "support/diagnostics.h"

namespace kiln {
namespace {

using TP = onnx::TensorProto;

int64_t int_attr(const onnx::NodeProto& n, const char* name, int64_t dflt) {
  for (auto& a : n.attribute())
    if (a.name() == name) return a.i();
  return dflt;
}

std::vector<int64_t> ints_attr(const onnx::NodeProto& n, const char* name) {
  for (auto& a : n.attribute())
    if (a.name() == name) return std::vector<int64_t>(a.ints().begin(), a.ints().end());
  return {};
}

class LoopUnroller {
 public:
  explicit LoopUnroller(onnx::ModelProto& m) : g_(*m.mutable_graph()), inliner_(g_) {
    for (auto& o : m.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
    constants_ = graph_constants(g_, /*inputs_override=*/true);
    shapes_ = static_shapes(g_);
  }

  int run() {
    std::vector<onnx::NodeProto> out;
    int unrolled = 0;
    for (const auto& n : g_.node()) {
      bool ours = n.domain().empty() || n.domain() == "ai.onnx";
      size_t mark = out.size();
      bool done = ours && ((n.op_type() == "Loop" && loop(n, out)) || (n.op_type() == "Scan" && scan(n, out)));
      if (!done && ours && n.op_type() == "Loop") {
        out.resize(mark);
        done = recurrence(n, out);
      }
      if (done) {
        unrolled++;
        continue;
      }
      out.resize(mark);
      out.push_back(n);
    }
    if (!unrolled) return 0;
    g_.clear_node();
    for (auto& n : out) *g_.add_node() = std::move(n);
    for (auto& t : new_initializers_) *g_.add_initializer() = std::move(t);
    return unrolled;
  }

 private:
  onnx::GraphProto& g_;
  SubgraphInliner inliner_;
  int64_t opset_ = 13;
  std::map<std::string, const TP*> constants_;          // value -> its constant
  std::map<std::string, std::vector<int64_t>> shapes_;  // value -> its static shape
  std::vector<TP> new_initializers_;                    // iteration numbers, indices, axes

  std::optional<std::vector<int64_t>> ints(const std::string& name) const {
    auto it = constants_.find(name);
    if (it == constants_.end()) return std::nullopt;
    return constant_ints(*it->second);
  }
  // An integer constant: a scalar (`dims` empty) or 1-D tensor.
  std::string constant(const std::string& base, TP::DataType type, const std::vector<int64_t>& values, bool scalar) {
    new_initializers_.push_back(int_tensor(inliner_.fresh(base), type, values, scalar));
    return new_initializers_.back().name();
  }
  onnx::NodeProto& emit(std::vector<onnx::NodeProto>& out, const std::string& base, const std::string& op,
                        std::vector<std::string> inputs, std::vector<std::string> outputs) {
    out.push_back(make_node(op, inliner_.fresh(base + "/" + op), inputs, outputs));
    return out.back();
  }
  // Unsqueeze on `axis` (an attribute before opset 13, an input since).
  std::string unsqueeze(std::vector<onnx::NodeProto>& out, const std::string& base, const std::string& x, int64_t axis) {
    std::string y = inliner_.fresh(base + "/unsqueezed");
    if (opset_ >= 13) {
      emit(out, base, "Unsqueeze", {x, constant(base + "/axes", TP::INT64, {axis}, false)}, {y});
    } else {
      onnx::NodeProto& m = emit(out, base, "Unsqueeze", {x}, {y});
      auto* a = m.add_attribute();
      a->set_name("axes");
      a->set_type(onnx::AttributeProto::INTS);
      a->add_ints(axis);
    }
    return y;
  }
  // Slice `index` of `x` along `axis`, that axis removed.
  std::string take(std::vector<onnx::NodeProto>& out, const std::string& base, const std::string& x, int64_t axis,
                   int64_t index) {
    std::string y = inliner_.fresh(base + "/slice");
    set_int_attribute(emit(out, base, "Gather", {x, constant(base + "/index", TP::INT64, {index}, true)}, {y}), "axis", axis);
    return y;
  }
  // Stacks `parts` (each Unsqueezed on `axis`) into `result` with a Concat.
  void stack(std::vector<onnx::NodeProto>& out, const std::string& base, const std::vector<std::string>& parts,
             int64_t axis, const std::string& result) {
    std::vector<std::string> grown;
    for (auto& p : parts) grown.push_back(unsqueeze(out, base, p, axis));
    set_int_attribute(emit(out, base, "Concat", grown, {result}), "axis", axis);
  }
  bool constant_true(const std::string& name) const {
    auto v = ints(name);
    return v && v->size() == 1 && (*v)[0] != 0;
  }
  // Whether the body's condition output is always true when its input is.
  static bool never_ends_early(const onnx::GraphProto& body) {
    if (body.input_size() < 2 || body.output_size() < 1) return false;
    std::string c = body.output(0).name();
    for (int hops = 0; hops < 8; hops++) {
      if (c == body.input(1).name()) return true;
      const onnx::NodeProto* producer = nullptr;
      for (auto& n : body.node())
        for (auto& o : n.output())
          if (o == c) producer = &n;
      if (!producer) return false;
      if (producer->op_type() == "Identity" && producer->input_size() == 1) {
        c = producer->input(0);
        continue;
      }
      if (producer->op_type() == "Constant")
        for (auto& a : producer->attribute())
          if (a.name() == "value" && a.has_t()) {
            auto v = constant_ints(a.t());
            return v && v->size() == 1 && (*v)[0] != 0;
          }
      return false;
    }
    return false;
  }

  // Loop(M, cond, v...) -> (v_final..., scan outputs...).
  bool loop(const onnx::NodeProto& n, std::vector<onnx::NodeProto>& out) {
    const onnx::GraphProto* body = graph_attribute(n, "body");
    if (!body || n.input_size() < 2 || n.input(0).empty()) return false;
    auto trips = ints(n.input(0));
    if (!trips || trips->size() != 1) return false;
    if (!n.input(1).empty() && !constant_true(n.input(1))) return false;
    if (!never_ends_early(*body)) return false;
    const int carried = n.input_size() - 2;
    const int scans = body->output_size() - 1 - carried;
    user_assert(body->input_size() == carried + 2 && scans >= 0 && n.output_size() <= carried + scans)
        << describe_node(n) << ": the body's inputs and outputs do not match the loop's";
    const int64_t m = std::max<int64_t>((*trips)[0], 0);
    if (!may_unroll(g_, out.size(), m, *body)) return false;
    if (m == 0 && scans > 0) return false;  // empty scan outputs: their shape is the body's to say
    std::string base = n.name().empty() ? n.output(0) : n.name();
    std::string cond = constant(base + "/true", TP::BOOL, {1}, true);
    std::vector<std::string> state(n.input().begin() + 2, n.input().end());
    std::vector<std::vector<std::string>> scanned((size_t)scans);
    for (int64_t i = 0; i < m; i++) {
      std::vector<std::string> bound = {constant(base + "/iteration", TP::INT64, {i}, true), cond};
      bound.insert(bound.end(), state.begin(), state.end());
      std::vector<std::string> results =
          inliner_.inline_graph(*body, bound, base + "/" + std::to_string(i) + "/", out);
      for (int k = 0; k < carried; k++) state[(size_t)k] = results[(size_t)(1 + k)];
      for (int k = 0; k < scans; k++) scanned[(size_t)k].push_back(results[(size_t)(1 + carried + k)]);
    }
    for (int k = 0; k < n.output_size(); k++) {
      if (n.output(k).empty()) continue;
      if (k < carried) emit(out, base, "Identity", {state[(size_t)k]}, {n.output(k)});
      else stack(out, base, scanned[(size_t)(k - carried)], 0, n.output(k));
    }
    return true;
  }

  // ---- Loops whose trip count is known only at run time: closed forms ----
  //
  // A body that never ends early and whose carried values are additive
  // recurrences becomes the tensors its iterations would have stacked, each
  // carried value k one of
  //   kept      s' = s
  //   stepped   s' = s + c, c loop-invariant (an outer value or a Constant):
  //             before iteration i, s0 + i c (ONNX's Range function body)
  //   indexed   s' = s + x[i:i+1] (Slice on axis 0) or x[i] (Gather on axis
  //             0), x loop-invariant and as deep as s: the running sums of
  //             x's first M slices
  // and each scan output a carried value before or after its update. The
  // run's trip count is M, or 0 where the first condition is false;
  // Range(0, M) then sizes everything (a data symbol, import/infer_dims.cpp).
  struct Recurrence {
    enum Kind { Kept, Stepped, Indexed } kind = Kept;
    std::string step;   // Stepped: c (outer scope); Indexed: x
    bool gather = false;  // Indexed by Gather (x[i], one axis fewer)
  };

  std::optional<onnx::TensorProto::DataType> elem_type(const std::string& name) const {
    for (auto* list : {&g_.input(), &g_.value_info(), &g_.output()})
      for (auto& vi : *list)
        if (vi.name() == name && vi.type().has_tensor_type() && vi.type().tensor_type().elem_type())
          return (TP::DataType)vi.type().tensor_type().elem_type();
    for (auto& t : g_.initializer())
      if (t.name() == name) return (TP::DataType)t.data_type();
    return std::nullopt;
  }

  bool recurrence(const onnx::NodeProto& n, std::vector<onnx::NodeProto>& out) {
    const onnx::GraphProto* body = graph_attribute(n, "body");
    if (!body || n.input_size() < 2 || n.input(0).empty() || !never_ends_early(*body)) return false;
    const int carried = n.input_size() - 2;
    const int scans = body->output_size() - 1 - carried;
    if (body->input_size() != carried + 2 || scans < 0 || n.output_size() > carried + scans) return false;
    std::map<std::string, const onnx::NodeProto*> producer;
    for (auto& b : body->node())
      for (auto& o : b.output()) producer[o] = &b;
    auto through = [&](std::string v) {  // past Identities
      for (int hops = 0; hops < 16; hops++) {
        auto it = producer.find(v);
        if (it == producer.end() || it->second->op_type() != "Identity" || it->second->input_size() != 1) break;
        v = it->second->input(0);
      }
      return v;
    };
    std::set<std::string> body_inputs;
    for (auto& i : body->input()) body_inputs.insert(i.name());
    const std::string iteration = body->input(0).name();
    std::string base = n.name().empty() ? n.output(0) : n.name();
    // A loop-invariant value as an outer name: an outer value, or a body Constant copied out.
    auto invariant = [&](const std::string& v) -> std::optional<std::string> {
      if (v.empty() || body_inputs.count(v)) return std::nullopt;
      auto it = producer.find(v);
      if (it == producer.end()) return v;
      if (it->second->op_type() != "Constant" || it->second->input_size() != 0) return std::nullopt;
      onnx::NodeProto c = *it->second;
      c.set_name(inliner_.fresh(base + "/" + c.name()));
      c.set_output(0, inliner_.fresh(base + "/" + v));
      for (auto& a : c.attribute())
        if (a.name() == "value" && a.has_t()) shapes_[c.output(0)] = std::vector<int64_t>(a.t().dims().begin(), a.t().dims().end());
      out.push_back(c);
      return c.output(0);
    };
    auto body_ints = [&](const std::string& v) -> std::optional<std::vector<int64_t>> {
      if (auto o = ints(v)) return o;
      auto it = producer.find(v);
      if (it == producer.end() || it->second->op_type() != "Constant") return std::nullopt;
      for (auto& a : it->second->attribute())
        if (a.name() == "value" && a.has_t()) return constant_ints(a.t());
      return std::nullopt;
    };
    // v = Unsqueeze(iteration + k, [0]) (or the iteration number itself with `scalar`): k.
    auto iteration_plus = [&](std::string v, bool scalar) -> std::optional<int64_t> {
      v = through(v);
      if (!scalar) {
        auto it = producer.find(v);
        if (it == producer.end() || it->second->op_type() != "Unsqueeze") return std::nullopt;
        const onnx::NodeProto& u = *it->second;
        std::vector<int64_t> axes = u.input_size() > 1 ? body_ints(u.input(1)).value_or(std::vector<int64_t>{-1})
                                                       : ints_attr(u, "axes");
        if (axes != std::vector<int64_t>{0}) return std::nullopt;
        v = through(u.input(0));
      }
      if (v == iteration) return 0;
      auto it = producer.find(v);
      if (it == producer.end() || it->second->op_type() != "Add" || it->second->input_size() != 2) return std::nullopt;
      for (int side = 0; side < 2; side++) {
        auto k = body_ints(it->second->input(1 - side));
        if (through(it->second->input(side)) == iteration && k && k->size() == 1) return (*k)[0];
      }
      return std::nullopt;
    };
    std::vector<Recurrence> rec((size_t)carried);
    std::vector<std::string> s0(n.input().begin() + 2, n.input().end());
    for (int k = 0; k < carried; k++) {
      const std::string in = body->input(2 + k).name(), res = through(body->output(1 + k).name());
      if (res == in) continue;  // kept
      auto it = producer.find(res);
      if (it == producer.end() || it->second->op_type() != "Add" || it->second->input_size() != 2) return false;
      const onnx::NodeProto& add = *it->second;
      int side = through(add.input(0)) == in ? 1 : through(add.input(1)) == in ? 0 : -1;
      if (side < 0) return false;
      const std::string term = through(add.input(side));
      auto t = producer.find(term);
      Recurrence& r = rec[(size_t)k];
      if (t != producer.end() && (t->second->op_type() == "Slice" || t->second->op_type() == "Gather")) {
        const onnx::NodeProto& sl = *t->second;
        bool gather = sl.op_type() == "Gather";
        if (opset_ < 10) return false;  // (the closed form slices with inputs)
        if (gather ? !(int_attr(sl, "axis", 0) == 0 && sl.input_size() == 2 && iteration_plus(sl.input(1), true) == 0)
                   : !(opset_ >= 10 && sl.input_size() >= 3 && iteration_plus(sl.input(1), false) == 0 &&
                       iteration_plus(sl.input(2), false) == 1 &&
                       (sl.input_size() < 4 || body_ints(sl.input(3)) == std::vector<int64_t>{0}) &&
                       (sl.input_size() < 5 || body_ints(sl.input(4)) == std::vector<int64_t>{1})))
          return false;
        auto x = invariant(sl.input(0));
        auto xs = x ? shapes_.find(*x) : shapes_.end();
        auto ss = shapes_.find(s0[(size_t)k]);
        // (x[i:i+1] keeps x's rank, x[i] drops one: either must be as deep as the state.)
        if (xs == shapes_.end() || ss == shapes_.end() || xs->second.size() != ss->second.size() + (gather ? 1 : 0))
          return false;
        r = {Recurrence::Indexed, *x, gather};
        continue;
      }
      auto c = invariant(term);
      if (!c) return false;
      r = {Recurrence::Stepped, *c, false};
    }
    // Scan outputs: carried values before (the body's input) or after (its result).
    std::vector<std::pair<int, bool>> scanned;  // (carried value, after its update)
    for (int j = 0; j < scans; j++) {
      const std::string v = through(body->output(1 + carried + j).name());
      int found = -1;
      bool after = false;
      for (int k = 0; k < carried && found < 0; k++) {
        if (v == body->input(2 + k).name()) found = k;
        else if (v == through(body->output(1 + k).name())) found = k, after = true;
      }
      if (found < 0 || rec[(size_t)found].kind == Recurrence::Kept) return false;  // (a kept value's copies: not built)
      scanned.push_back({found, after});
    }
    for (int k = 0; k < carried; k++)
      if (rec[(size_t)k].kind != Recurrence::Kept && (!shapes_.count(s0[(size_t)k]) || !elem_type(s0[(size_t)k])))
        return false;
    // The trip count this run: M, times the first condition (the body keeps it).
    std::string trips = n.input(0);
    auto ms = shapes_.find(trips);
    if (ms == shapes_.end() || ms->second.size() > 1) return false;
    if (!ms->second.empty()) {
      trips = inliner_.fresh(base + "/trips");
      emit(out, base, "Reshape", {n.input(0), constant(base + "/scalar", TP::INT64, {}, false)}, {trips});
    }
    if (!n.input(1).empty() && !constant_true(n.input(1))) {
      std::string taken = inliner_.fresh(base + "/taken"), m = inliner_.fresh(base + "/trips");
      set_int_attribute(emit(out, base, "Cast", {n.input(1)}, {taken}), "to", TP::INT64);
      emit(out, base, "Mul", {trips, taken}, {m});
      trips = m;
    }
    std::string index = inliner_.fresh(base + "/index");
    emit(out, base, "Range", {constant(base + "/zero", TP::INT64, {0}, true), trips, constant(base + "/one", TP::INT64, {1}, true)},
         {index});
    auto op = [&](const std::string& type, std::vector<std::string> inputs) {
      std::string y = inliner_.fresh(base + "/" + type);
      emit(out, base, type, std::move(inputs), {y});
      return y;
    };
    // Each carried value's closed forms (empty: not needed).
    std::vector<std::string> before((size_t)carried), after((size_t)carried), final((size_t)carried);
    for (int k = 0; k < carried; k++) {
      const Recurrence& r = rec[(size_t)k];
      bool needed = k < n.output_size() && !n.output(k).empty();
      for (auto& [c, a] : scanned) needed |= c == k;
      if (!needed) continue;
      const std::string& s = s0[(size_t)k];
      if (r.kind == Recurrence::Kept) {
        final[(size_t)k] = s;
        continue;
      }
      auto ss = shapes_.find(s);
      auto type = elem_type(s);
      if (r.kind == Recurrence::Stepped) {
        // i c for each iteration i, [M, 1, ...] against the state's rank.
        std::string i = op("Cast", {index});
        set_int_attribute(out.back(), "to", *type);
        if (!ss->second.empty()) {
          std::vector<int64_t> shape(ss->second.size() + 1, 1);
          shape[0] = -1;
          i = op("Reshape", {i, constant(base + "/shape", TP::INT64, shape, false)});
        }
        before[(size_t)k] = op("Add", {s, op("Mul", {i, r.step})});
        after[(size_t)k] = op("Add", {before[(size_t)k], r.step});
        std::string m = op("Cast", {trips});
        set_int_attribute(out.back(), "to", *type);
        final[(size_t)k] = op("Add", {s, op("Mul", {m, r.step})});
        continue;
      }
      // Indexed: x's first M slices along axis 0, stacked as the iterations' terms.
      std::string ends = unsqueeze(out, base, trips, 0);
      std::string terms = op("Slice", {r.step, constant(base + "/starts", TP::INT64, {0}, false), ends,
                                       constant(base + "/axes", TP::INT64, {0}, false)});
      if (!r.gather) terms = unsqueeze(out, base, terms, 1);  // x[i:i+1]: [M, 1, ...]
      std::string axis = constant(base + "/axis", TP::INT64, {0}, true);
      after[(size_t)k] = op("Add", {s, op("CumSum", {terms, axis})});
      std::string exclusive = op("CumSum", {terms, axis});
      set_int_attribute(out.back(), "exclusive", 1);
      before[(size_t)k] = op("Add", {s, exclusive});
      std::string total;
      if (opset_ >= 13) {
        total = op("ReduceSum", {terms, constant(base + "/axes", TP::INT64, {0}, false)});
      } else {
        total = op("ReduceSum", {terms});
        auto* a = out.back().add_attribute();
        a->set_name("axes");
        a->set_type(onnx::AttributeProto::INTS);
        a->add_ints(0);
      }
      set_int_attribute(out.back(), "keepdims", 0);
      final[(size_t)k] = op("Add", {s, total});
    }
    for (int k = 0; k < n.output_size(); k++) {
      if (n.output(k).empty()) continue;
      const std::string& v =
          k < carried ? final[(size_t)k] : scanned[(size_t)(k - carried)].second ? after[(size_t)scanned[(size_t)(k - carried)].first]
                                                                               : before[(size_t)scanned[(size_t)(k - carried)].first];
      emit(out, base, "Identity", {v}, {n.output(k)});
    }
    return true;
  }

  // One scan over `inputs` (without a batch axis): the final states and the
  // scan outputs, written to `results` (states first).
  bool scan_once(const onnx::NodeProto& n, const onnx::GraphProto& body, const std::string& base,
                 std::vector<std::string> state, const std::vector<std::string>& inputs,
                 const std::vector<std::vector<int64_t>>& input_shapes, std::vector<std::string>* finals,
                 std::vector<std::vector<std::string>>* scanned, std::vector<onnx::NodeProto>& out) {
    const int num_in = (int)inputs.size();
    // (Opset 8 calls the input directions `directions`; its axes are the sequence axis.)
    std::vector<int64_t> axes = ints_attr(n, "scan_input_axes");
    std::vector<int64_t> dirs = ints_attr(n, opset_ < 9 ? "directions" : "scan_input_directions");
    if (axes.empty()) axes.assign((size_t)num_in, 0);
    if (dirs.empty()) dirs.assign((size_t)num_in, 0);
    user_assert((int)axes.size() == num_in && (int)dirs.size() == num_in)
        << describe_node(n) << ": scan_input_axes and scan_input_directions need one entry per scan input";
    int64_t trips = -1;
    for (int k = 0; k < num_in; k++) {
      const auto& shape = input_shapes[(size_t)k];
      int64_t axis = axes[(size_t)k] < 0 ? axes[(size_t)k] + (int64_t)shape.size() : axes[(size_t)k];
      user_assert(axis >= 0 && axis < (int64_t)shape.size()) << describe_node(n) << ": scan input " << k << "'s axis is out of range";
      axes[(size_t)k] = axis;
      user_assert(trips < 0 || trips == shape[(size_t)axis])
          << describe_node(n) << ": the scan inputs' scanned axes differ (" << trips << " and " << shape[(size_t)axis] << ")";
      trips = shape[(size_t)axis];
    }
    if (trips <= 0 || !may_unroll(g_, out.size(), trips, body)) return false;
    for (int64_t i = 0; i < trips; i++) {
      std::vector<std::string> bound = state;
      for (int k = 0; k < num_in; k++)
        bound.push_back(take(out, base, inputs[(size_t)k], axes[(size_t)k], dirs[(size_t)k] ? trips - 1 - i : i));
      std::vector<std::string> results = inliner_.inline_graph(body, bound, base + "/" + std::to_string(i) + "/", out);
      for (size_t k = 0; k < state.size(); k++) state[k] = results[k];
      for (size_t k = state.size(); k < results.size(); k++) (*scanned)[k - state.size()].push_back(results[k]);
    }
    *finals = state;
    return true;
  }

  // Scan: opset 9 on (states..., scan inputs...); opset 8 (sequence_lens, states..., scan inputs...) with a batch axis.
  bool scan(const onnx::NodeProto& n, std::vector<onnx::NodeProto>& out) {
    const onnx::GraphProto* body = graph_attribute(n, "body");
    if (!body) return false;
    const bool batched = opset_ < 9;
    const int first = batched ? 1 : 0;
    if (batched && !n.input(0).empty()) return false;  // sequence_lens: lengths per batch entry
    const int num_in = (int)int_attr(n, "num_scan_inputs", -1);
    const int num_state = n.input_size() - first - num_in;
    user_assert(num_in >= 1 && num_state >= 0 && body->input_size() == num_state + num_in &&
                body->output_size() >= num_state && n.output_size() <= body->output_size())
        << describe_node(n) << ": num_scan_inputs and the body's inputs and outputs do not match the node's";
    const int num_out = body->output_size() - num_state;
    std::vector<int64_t> out_axes = ints_attr(n, "scan_output_axes"), out_dirs = ints_attr(n, "scan_output_directions");
    if (out_axes.empty()) out_axes.assign((size_t)num_out, 0);
    if (out_dirs.empty()) out_dirs.assign((size_t)num_out, 0);
    user_assert((int)out_axes.size() == num_out && (int)out_dirs.size() == num_out)
        << describe_node(n) << ": scan_output_axes and scan_output_directions need one entry per scan output";
    std::vector<std::string> states(n.input().begin() + first, n.input().begin() + first + num_state);
    std::vector<std::string> inputs(n.input().begin() + first + num_state, n.input().end());
    std::vector<std::vector<int64_t>> shapes;
    for (auto& x : inputs) {
      auto it = shapes_.find(x);
      if (it == shapes_.end()) return false;
      shapes.push_back(it->second);
    }
    std::string base = n.name().empty() ? n.output(0) : n.name();
    // Opset 8: one scan per batch entry, over axis 1 of each input.
    int64_t batch = 1;
    if (batched) {
      for (auto& s : shapes) {
        user_assert(s.size() >= 2) << describe_node(n) << ": a scan input needs a batch and a sequence axis";
        batch = s[0];
      }
      // (Every batch entry scans every slice: batch * length copies.)
      const int64_t length = shapes[0][1];
      if (batch <= 0 || length <= 0 || batch > kMaxUnrolledNodes / length || !may_unroll(g_, out.size(), batch * length, *body))
        return false;
    }
    std::vector<std::vector<std::string>> final_parts((size_t)num_state), output_parts((size_t)num_out);
    for (int64_t b = 0; b < batch; b++) {
      std::vector<std::string> s = states, x = inputs;
      std::vector<std::vector<int64_t>> xs = shapes;
      if (batched) {
        for (auto& v : s) v = take(out, base, v, 0, b);
        for (size_t k = 0; k < x.size(); k++) {
          x[k] = take(out, base, x[k], 0, b);
          xs[k].erase(xs[k].begin());
        }
      }
      std::vector<std::string> finals;
      std::vector<std::vector<std::string>> scanned((size_t)num_out);
      if (!scan_once(n, *body, base + (batched ? "/" + std::to_string(b) : std::string()), s, x, xs, &finals, &scanned,
                     out))
        return false;
      for (int k = 0; k < num_state; k++) final_parts[(size_t)k].push_back(finals[(size_t)k]);
      for (int k = 0; k < num_out; k++) {
        std::vector<std::string> parts = scanned[(size_t)k];
        if (out_dirs[(size_t)k]) std::reverse(parts.begin(), parts.end());
        std::string joined = batched ? inliner_.fresh(base + "/scanned") : n.output(num_state + k);
        if (joined.empty()) continue;
        // (A negative axis counts from the stacked output's rank, which the
        // Unsqueeze resolves the same way.)
        stack(out, base, parts, out_axes[(size_t)k], joined);
        output_parts[(size_t)k].push_back(joined);
      }
    }
    for (int k = 0; k < num_state; k++) {
      if (k >= n.output_size() || n.output(k).empty()) continue;
      if (batched) stack(out, base, final_parts[(size_t)k], 0, n.output(k));
      else emit(out, base, "Identity", {final_parts[(size_t)k][0]}, {n.output(k)});
    }
    if (batched)
      for (int k = 0; k < num_out && num_state + k < n.output_size(); k++)
        if (!n.output(num_state + k).empty()) stack(out, base, output_parts[(size_t)k], 0, n.output(num_state + k));
    return true;
  }
};

}  // namespace

int unroll_static_loops(onnx::ModelProto& model) { return LoopUnroller(model).run(); }

}  // namespace kiln
