// reshape-chain: collapses chains of shape reinterpretations and of
// transpositions.
//
// * Reshape-like ops (Reshape, Flatten, Squeeze, Unsqueeze) only reinterpret
//   row-major data, so any chain of them ending in a Reshape equals one
//   Reshape from the chain's source to the final static shape. The last
//   node becomes Reshape(source, constant final shape).
// * Transpose(Transpose(x, p1), p2) = Transpose(x, q) with q[k] = p1[p2[k]];
//   an identity q (or an identity Transpose/Reshape on its own) removes the
//   node: consumers read the source (a model output keeps an Identity,
//   which lowering turns into an alias or a copy).
// The inner nodes are removed when nothing else reads them. Fewer nodes
// means fewer copies: a Transpose is a kernel, and a chain of two is two.
#include <cstring>
#include <numeric>

#include "graph/passes.h"

namespace kiln::graph {

namespace {

// Reshape, Flatten, Squeeze, Unsqueeze (role Reshape in the operator table).
bool reshape_like(const Node& n) { return n.traits().role == OpRole::Reshape; }

std::vector<int64_t> perm_of(const Graph& g, const Node& n) {
  size_t rank = g.values[n.inputs[0]].shape.size();
  std::vector<int64_t> p(rank);
  std::iota(p.rbegin(), p.rend(), 0);  // default: reverse the axes
  return n.attr_ints("perm", p);
}

// The node becomes a no-op forwarding its input `src`.
void make_forward(Graph& g, Node& n, int src) {
  int out = n.outputs[0];
  if (!is_model_output(g, out)) {
    replace_uses(g, out, src);
    n.inputs = {src};
    n.op = op_name(Op::Identity);  // unused now: removed below
    n.attrs.clear();
    return;
  }
  n.op = op_name(Op::Identity);
  n.inputs = {src};
  n.attrs.clear();
}

}  // namespace

bool pass_reshape_chain(Graph& g, PassContext& ctx) {
  int collapsed = 0, removed_identity = 0;
  std::vector<bool> remove(g.nodes.size(), false);
  std::vector<size_t> touched_inner;
  for (size_t i = 0; i < g.nodes.size(); i++) {
    Node& n = g.nodes[i];
    if (n.inputs.empty() || n.inputs[0] < 0 || n.outputs.empty() || n.outputs[0] < 0) continue;
    int in = n.inputs[0], out = n.outputs[0];
    int p = g.values[in].producer;
    if (reshape_like(n)) {
      const Shape& final_shape = g.values[out].shape;
      bool has_zero = false;
      for (int64_t d : final_shape) has_zero |= d == 0;
      if (has_zero) continue;
      int src = in;
      if (p >= 0 && reshape_like(g.nodes[p]) && !g.nodes[p].inputs.empty() && g.nodes[p].inputs[0] >= 0) {
        src = g.nodes[p].inputs[0];
        touched_inner.push_back((size_t)p);
      }
      if (g.same_dims(g.values[src].dim_exprs(), g.values[out].dim_exprs())) {  // the whole chain is the identity
        make_forward(g, n, src);
        if (!is_model_output(g, out)) remove[i] = true;
        removed_identity++;
        continue;
      }
      if (src == in) continue;
      std::vector<uint8_t> bytes(final_shape.size() * 8);
      memcpy(bytes.data(), final_shape.data(), bytes.size());
      int shape_const = g.add_constant(g.values[out].name + ".shape", DType::I64, {(int64_t)final_shape.size()}, bytes);
      n.op = op_name(Op::Reshape);
      n.attrs.clear();
      n.inputs = {src, shape_const};
      collapsed++;
    } else if (n.is(Op::Transpose)) {
      std::vector<int64_t> q = perm_of(g, n);
      int src = in;
      if (p >= 0 && g.nodes[p].is(Op::Transpose) && g.nodes[p].inputs[0] >= 0) {
        std::vector<int64_t> p1 = perm_of(g, g.nodes[p]), p2 = q;
        for (size_t k = 0; k < p2.size(); k++) q[k] = p1[(size_t)p2[k]];
        src = g.nodes[p].inputs[0];
        touched_inner.push_back((size_t)p);
      }
      bool identity = true;
      for (size_t k = 0; k < q.size(); k++) identity &= q[k] == (int64_t)k;
      if (identity) {
        make_forward(g, n, src);
        if (!is_model_output(g, out)) remove[i] = true;
        removed_identity++;
        continue;
      }
      if (src == in) continue;
      n.inputs = {src};
      Attr a;
      a.kind = Attr::Kind::Ints;
      a.ints = q;
      n.attrs["perm"] = a;
      collapsed++;
    }
  }
  if (!collapsed && !removed_identity) return false;
  // Inner nodes nothing reads any more go too.
  std::vector<int> uses = use_counts(g);
  for (size_t i = 0; i < g.nodes.size(); i++)
    if (remove[i]) for (int v : g.nodes[i].inputs) if (v >= 0) uses[v]--;
  for (size_t k = touched_inner.size(); k-- > 0;) {
    size_t p = touched_inner[k];
    if (remove[p]) continue;
    int o = g.nodes[p].outputs[0];
    if (uses[o] == 0 && !is_model_output(g, o)) {
      remove[p] = true;
      for (int v : g.nodes[p].inputs) if (v >= 0) uses[v]--;
    }
  }
  remove_nodes(g, remove);
  ctx.detail = std::to_string(collapsed) + " chains collapsed, " + std::to_string(removed_identity) + " no-ops removed";
  return true;
}

}  // namespace kiln::graph
