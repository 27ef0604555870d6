// identity: removes Identity and inference-mode Dropout nodes (role
// Passthrough in the operator table).
//
// Both forward their input unchanged (kilnc compiles inference only, so a
// Dropout is the identity unless its training_mode input is a constant
// true). Consumers are rewired to read the input directly, which lets
// later patterns (Conv -> BatchNormalization, Reshape chains) and epilogue
// fusion see through them. A node whose output is a model output is removed
// only when its input can take the output's place (a value produced by a
// node, not a model input, constant or another output), so model output
// names and storage stay intact; otherwise it stays (lowering aliases or
// copies it).
#include "graph/passes.h"

namespace kiln::graph {

namespace {

bool is_forwarding(const Graph& g, const Node& n) {
  if (n.inputs.empty() || n.inputs[0] < 0 || n.outputs.empty() || n.outputs[0] < 0) return false;
  if (n.traits().role != OpRole::Passthrough) return false;
  if (!n.is(Op::Dropout)) return true;
  // The mask output must be unused.
  if (n.outputs.size() > 1 && n.outputs[1] >= 0) {
    int m = n.outputs[1];
    if (is_model_output(g, m)) return false;
    for (const Node& c : g.nodes)
      for (int v : c.inputs)
        if (v == m) return false;
  }
  // training_mode (opset 12+) must be absent or a constant false.
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    const Value& t = g.values[n.inputs[2]];
    if (!t.is_constant() || t.elements() != 1 || t.const_at(0) != 0) return false;
  }
  return true;
}

}  // namespace

bool pass_identity(Graph& g, PassContext& ctx) {
  NodeRemoval r(g);
  for (size_t i = 0; i < g.nodes.size(); i++) {
    const Node& n = g.nodes[i];
    if (!is_forwarding(g, n)) continue;
    int in = n.inputs[0], out = n.outputs[0];
    if (g.values[in].dtype != g.values[out].dtype || !g.same_dims(g.values[in].dim_exprs(), g.values[out].dim_exprs())) continue;
    if (!is_model_output(g, out)) {
      replace_uses(g, out, in);
    } else {
      // out must survive: the producer of `in` writes `out` directly.
      int p = g.values[in].producer;
      if (p < 0 || is_model_output(g, in) || is_model_input(g, in) || g.values[in].is_constant()) continue;
      for (int& o : g.nodes[p].outputs)
        if (o == in) o = out;
      g.values[out].producer = p;
      g.values[in].producer = -1;
      replace_uses(g, in, out);
    }
    r.remove[i] = true;
    r.count++;
  }
  return r.finish(g, ctx, "removed");
}

}  // namespace kiln::graph
