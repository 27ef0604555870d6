// dead-code: removes nodes whose outputs reach no model output, and drops
// the bytes of constants nothing reads any more.
//
// Earlier passes leave dead nodes behind (a folded BatchNormalization's
// inputs, the inner half of a collapsed Reshape chain, a constant subgraph
// replaced by its result), and exporters emit some too. ONNX inference
// operators have no side effects, so a node is live exactly when one of its
// outputs is (transitively) read by a live node or is a model output, or
// when it defines a data symbol (NonZero's count, a run-time TopK k).
// Constants no node, attribute or model output refers to are released
// (the bundle only ever stores constants a dispatch reads, so this only
// saves compiler memory and keeps --dump-graph honest).
#include "graph/passes.h"

namespace kiln::graph {

bool pass_dead_code(Graph& g, PassContext& ctx) {
  std::vector<bool> live_value(g.values.size(), false);
  for (int o : g.outputs) live_value[o] = true;
  std::vector<bool> remove(g.nodes.size(), true);
  for (size_t k = g.nodes.size(); k-- > 0;) {  // nodes are in topological order
    const Node& n = g.nodes[k];
    bool live = false;
    for (int o : n.outputs) live |= o >= 0 && live_value[o];
    live |= g.defines_symbol(n);  // a data symbol other values' dimensions may use needs its source
    if (!live) continue;
    remove[k] = false;
    for (int v : n.inputs)
      if (v >= 0) live_value[v] = true;
    for (auto& [name, a] : n.attrs)
      if (a.kind == Attr::Kind::Tensor && a.tensor >= 0) live_value[a.tensor] = true;
  }
  int removed = 0;
  for (bool r : remove) removed += r;
  int dropped = 0;
  for (size_t v = 0; v < g.values.size(); v++) {
    if (live_value[v] || !g.values[v].is_constant() || is_model_input(g, (int)v)) continue;
    g.values[v].data = nullptr;
    dropped++;
  }
  if (removed) remove_nodes(g, remove);
  if (removed || dropped)
    ctx.detail = std::to_string(removed) + " nodes removed, " + std::to_string(dropped) + " constants dropped";
  return removed > 0 || dropped > 0;
}

}  // namespace kiln::graph
