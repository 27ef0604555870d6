// constant-fold ("precompute prune"): computes at compile time everything
// that does not depend on a model input.
//
// A node is foldable when every input is a constant or the output of a
// foldable node (Shape and Size only need their input's static shape).
// Models build weights at run time this way (ConstantOfShape, Expand,
// Range, arithmetic on initializers, Shape -> Gather -> Concat chains,
// Reshape/Transpose of constants); without folding each of those would be
// a dispatch on every inference.
//
// How: Shape/Size and alias ops on constants (Reshape, Flatten, Squeeze,
// Unsqueeze, Identity, Dropout) are folded directly. Everything else is
// folded *for real* with the compiler itself: the constant subgraph (a
// Graph with no inputs whose outputs are the values to fold) goes to the
// evaluator the driver put in the pass environment (driver/evaluate.h:
// the driver's own steps from lowering to the linked kernel library, for
// the host, then dlopen and a local arena). So every operator kilnc
// supports folds, with exactly the semantics it has at run time; without an
// evaluator only the direct folds happen.
//
// Which values become constants: the "frontier", foldable values read by a
// non-foldable node or that are model outputs (intermediates of the
// constant subgraph are not kept). The size rule, to keep bundles from
// growing with data that is cheap to compute: a frontier value is folded
// when it is at most 1 MiB, or at most 2x the bytes of the constants it is
// computed from, or when every read of it is as a parameter operand
// (weights/bias/scale: the Params column of the operator table; Conv,
// ConvTranspose, Gemm, MatMul, the normalizations, PRelu), where it would
// be a constant in any ordinary export. A value that fails the rule stays
// computed at run time and its inputs are considered instead.
// Nondeterministic operators (and unknown ones) and nodes with subgraph
// attributes never fold. If the compiler cannot evaluate a constant
// subgraph, each frontier value is tried on its own and the ones that fail
// are left to lowering, which reports its errors as usual.
#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

#include "graph/passes.h"
#include "support/diagnostics.h"

namespace kiln::graph {

namespace {

constexpr uint64_t kSmallBytes = 1 << 20;

// Unknown operators (not in the operator table) are nondeterministic too.
// String tables are left to the kernels (a folded table would keep its
// kernel's slack bytes, and a constant's table is exactly its strings).
bool never_fold(const Graph& g, const Node& n) {
  if (n.traits().nondeterministic() || g.defines_symbol(n)) return true;
  for (int v : n.outputs)
    if (v >= 0 && g.values[(size_t)v].dtype == DType::String) return true;
  for (auto& [k, a] : n.attrs)
    if (a.kind == Attr::Kind::Graph) return true;
  return false;
}

void set_i64(Value& v, const std::vector<int64_t>& x) {
  v.data = std::make_shared<std::vector<uint8_t>>(x.size() * 8);
  if (!x.empty()) memcpy(v.data->data(), x.data(), x.size() * 8);
}

// Shape, Size and alias ops on constants: folded without running anything.
int fold_direct(Graph& g, std::vector<bool>& remove) {
  int n_folded = 0;
  for (size_t i = 0; i < g.nodes.size(); i++) {
    const Node& n = g.nodes[i];
    if (remove[i] || n.outputs.empty() || n.outputs[0] < 0 || n.inputs.empty() || n.inputs[0] < 0) continue;
    Value& out = g.values[n.outputs[0]];
    const Value& in = g.values[n.inputs[0]];
    if (out.is_constant()) continue;
    // A run-time shape is not a constant (the planned bounds are no answer):
    // Shape and Size of it are kernels computing it from the symbols.
    if ((n.is(Op::Shape) || n.is(Op::Size)) && in.is_dynamic()) continue;
    if (n.is(Op::Shape) && out.dtype == DType::I64) {
      int64_t rank = (int64_t)in.shape.size();
      int64_t start = n.attr_int("start", 0), end = n.attr_int("end", rank);
      if (start < 0) start += rank;
      if (end < 0) end += rank;
      start = std::clamp<int64_t>(start, 0, rank);
      end = std::clamp<int64_t>(end, start, rank);
      std::vector<int64_t> dims(in.shape.begin() + start, in.shape.begin() + end);
      if ((int64_t)dims.size() != out.elements()) continue;
      set_i64(out, dims);
    } else if (n.is(Op::Size) && out.dtype == DType::I64 && out.elements() == 1) {
      set_i64(out, {in.elements()});
    } else if (n.traits().shape_only() && in.is_constant() && in.dtype == out.dtype && in.byte_size() == out.byte_size()) {
      if (n.is(Op::Dropout) && n.inputs.size() > 2 && n.inputs[2] >= 0) {
        const Value& t = g.values[n.inputs[2]];
        if (!t.is_constant() || t.const_at(0) != 0) continue;
      }
      bool others_unused = true;  // Dropout's mask
      for (size_t k = 1; k < n.outputs.size(); k++) others_unused &= n.outputs[k] < 0;
      if (!others_unused) continue;
      out.data = in.data;
    } else {
      continue;
    }
    remove[i] = true;
    n_folded++;
  }
  return n_folded;
}

}  // namespace

bool pass_constant_fold(Graph& g, PassContext& ctx) {
  std::vector<bool> remove(g.nodes.size(), false);
  int direct = fold_direct(g, remove);

  std::vector<bool> rejected(g.nodes.size(), false);
  std::vector<bool> foldable;
  std::vector<int> frontier;
  std::vector<std::vector<std::pair<int, size_t>>> readers(g.values.size());  // value -> (node, position)
  for (size_t i = 0; i < g.nodes.size(); i++)
    for (size_t k = 0; k < g.nodes[i].inputs.size(); k++)
      if (g.nodes[i].inputs[k] >= 0) readers[g.nodes[i].inputs[k]].push_back({(int)i, k});

  for (;;) {
    // Foldable nodes, in topological order.
    foldable.assign(g.nodes.size(), false);
    std::vector<bool> computed(g.values.size(), false);  // constant or output of a foldable node
    for (size_t v = 0; v < g.values.size(); v++) computed[v] = g.values[v].is_constant();
    for (size_t i = 0; i < g.nodes.size(); i++) {
      const Node& n = g.nodes[i];
      if (remove[i] || rejected[i] || never_fold(g, n)) continue;
      bool ok = true;
      for (int v : n.inputs) ok &= v < 0 || computed[v];
      bool any_out = false;
      for (int o : n.outputs) any_out |= o >= 0;
      if (!ok || !any_out) continue;
      foldable[i] = true;
      for (int o : n.outputs)
        if (o >= 0) computed[o] = true;
    }
    // Frontier values and the size rule.
    frontier.clear();
    bool changed = false;
    for (size_t i = 0; i < g.nodes.size(); i++) {
      if (!foldable[i]) continue;
      for (int o : g.nodes[i].outputs) {
        if (o < 0) continue;
        bool outside = is_model_output(g, o), all_param = !outside;
        for (auto& [r, pos] : readers[o]) {
          if (remove[r] || foldable[r]) continue;
          outside = true;
          all_param &= g.nodes[r].traits().param_input(pos);
        }
        if (!outside) continue;
        // Bytes of the constants this value is computed from.
        uint64_t leaf_bytes = 0;
        std::set<int> seen;
        std::function<void(int)> walk = [&](int v) {
          if (v < 0 || !seen.insert(v).second) return;
          const Value& val = g.values[v];
          if (val.is_constant()) {
            leaf_bytes += val.byte_size();
            return;
          }
          if (val.producer < 0) return;
          const Node& p = g.nodes[val.producer];
          for (int in : p.inputs) walk(in);
          for (auto& [k, a] : p.attrs)
            if (a.kind == Attr::Kind::Tensor) walk(a.tensor);
        };
        walk(o);
        uint64_t bytes = g.values[o].byte_size();
        if (bytes <= kSmallBytes || bytes <= 2 * leaf_bytes || all_param) {
          frontier.push_back(o);
        } else {
          rejected[i] = true;
          changed = true;
        }
      }
    }
    if (!changed) break;
  }

  // The nodes each frontier value needs.
  auto cone_of = [&](const std::vector<int>& outs) {
    std::vector<bool> in_cone(g.nodes.size(), false);
    std::vector<int> stack(outs.begin(), outs.end());
    while (!stack.empty()) {
      int v = stack.back();
      stack.pop_back();
      int p = g.values[v].producer;
      if (p < 0 || g.values[v].is_constant() || in_cone[p]) continue;
      in_cone[p] = true;
      for (int in : g.nodes[p].inputs)
        if (in >= 0) stack.push_back(in);
    }
    return in_cone;
  };
  auto evaluate = [&](const std::vector<int>& outs) {
    std::vector<bool> in_cone = cone_of(outs);
    Graph sub;
    sub.values = g.values;
    sub.opset = g.opset;
    sub.ml_opset = g.ml_opset;
    sub.producer = g.producer;
    for (size_t i = 0; i < g.nodes.size(); i++)
      if (in_cone[i]) sub.nodes.push_back(g.nodes[i]);
    sub.outputs = outs;
    std::vector<std::vector<uint8_t>> results = ctx.env.evaluate(sub, {});
    for (size_t k = 0; k < outs.size(); k++)
      g.values[outs[k]].data = std::make_shared<std::vector<uint8_t>>(std::move(results[k]));
    for (size_t i = 0; i < g.nodes.size(); i++)
      if (in_cone[i]) remove[i] = true;
  };

  int64_t folded_values = 0, folded_bytes = 0, failed = 0;
  std::vector<int> done;
  if (!frontier.empty() && ctx.env.evaluate) {
    try {
      evaluate(frontier);
      done = frontier;
    } catch (const std::exception&) {
      // One at a time; leave the ones the compiler cannot evaluate to lowering.
      for (int v : frontier) {
        try {
          evaluate({v});
          done.push_back(v);
        } catch (const std::exception&) {
          failed++;
        }
      }
    }
  }
  for (int v : done) {
    folded_values++;
    folded_bytes += (int64_t)g.values[v].byte_size();
  }
  // Nodes whose outputs are all constants now (direct folds included) go.
  for (size_t i = 0; i < g.nodes.size(); i++) {
    if (remove[i]) continue;
    bool all_const = !g.nodes[i].outputs.empty();
    for (int o : g.nodes[i].outputs) all_const &= o < 0 || g.values[o].is_constant();
    bool any = false;
    for (int o : g.nodes[i].outputs) any |= o >= 0;
    if (all_const && any) remove[i] = true;
  }
  // A removed node whose output is still read (by a node that failed to fold)
  // must stay; readers come later in topological order, so walk backwards.
  for (size_t i = g.nodes.size(); i-- > 0;) {
    if (!remove[i]) continue;
    for (int o : g.nodes[i].outputs) {
      if (o < 0 || g.values[o].is_constant()) continue;
      for (auto& [r, pos] : readers[o])
        if (!remove[r]) remove[i] = false;
      if (is_model_output(g, o)) remove[i] = false;
    }
  }
  int removed = 0;
  for (bool r : remove) removed += r;
  ctx.folded_values = folded_values + direct;
  ctx.folded_bytes = folded_bytes;
  if (!removed) return false;
  remove_nodes(g, remove);
  ctx.detail = std::to_string(direct) + " shape/alias folds, " + std::to_string(folded_values) + " values (" +
               std::to_string(folded_bytes) + " bytes) computed" +
               (failed ? ", " + std::to_string(failed) + " not evaluable" : "");
  return true;
}

}  // namespace kiln::graph
