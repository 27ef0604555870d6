// cse: common-subexpression elimination.
//
// Two nodes with the same operator, the same attributes and the same input
// values compute the same outputs (ONNX inference operators are pure), so
// the later one is removed and its consumers read the earlier one's
// outputs. Exporters duplicate work this way (e.g. one Shape -> Gather per
// use, repeated Transposes of the same tensor); rewriting passes can too.
// Nodes are visited in topological order and rewired at once, so chains of
// duplicates collapse in one sweep. Nondeterministic operators (random ones,
// and any operator missing from the operator table) and nodes with subgraph
// attributes are never merged; neither is a node one of whose
// outputs is a model output (the output keeps its own value).
#include <map>
#include <sstream>

#include "graph/passes.h"

namespace kiln::graph {

namespace {

bool never_merge(const Graph& g, const Node& n) {
  if (n.traits().nondeterministic() || g.defines_symbol(n)) return true;
  for (auto& [k, a] : n.attrs)
    if (a.kind == Attr::Kind::Graph) return true;
  return false;
}

std::string key_of(const Node& n) {
  std::ostringstream o;
  o << n.op << "(";
  for (int v : n.inputs) o << v << ",";
  o << ")[" << n.outputs.size() << "]{";
  for (auto& [k, a] : n.attrs) {
    o << k << "=";
    if (a.kind == Attr::Kind::Tensor) o << "tensor#" << a.tensor;
    else o << (int)a.kind << ":" << a.str();
    o << ";";
  }
  o << "}";
  for (auto& [flag, taken] : n.guards) o << "?" << flag << (taken ? "+" : "-");
  return o.str();
}

}  // namespace

bool pass_cse(Graph& g, PassContext& ctx) {
  std::map<std::string, int> seen;
  NodeRemoval r(g);
  for (size_t i = 0; i < g.nodes.size(); i++) {
    const Node& n = g.nodes[i];
    if (never_merge(g, n)) continue;
    std::string key = key_of(n);
    auto it = seen.find(key);
    if (it == seen.end()) {
      seen[key] = (int)i;
      continue;
    }
    const Node& first = g.nodes[it->second];
    bool ok = true;
    for (size_t k = 0; k < n.outputs.size(); k++) {
      int o = n.outputs[k];
      if (o < 0) continue;
      if (first.outputs[k] < 0 || is_model_output(g, o)) ok = false;
    }
    if (!ok) continue;
    for (size_t k = 0; k < n.outputs.size(); k++)
      if (n.outputs[k] >= 0) replace_uses(g, n.outputs[k], first.outputs[k]);
    r.remove[i] = true;
    r.count++;
  }
  return r.finish(g, ctx, "merged");
}

}  // namespace kiln::graph
