// Helpers shared by the graph passes (declared in passes.h).
#include <algorithm>
#include <cstring>

#include "graph/passes.h"
#include "support/diagnostics.h"

namespace kiln::graph {

std::vector<int> use_counts(const Graph& g) {
  std::vector<int> uses(g.values.size(), 0);
  for (const Node& n : g.nodes)
    for (int v : n.inputs)
      if (v >= 0) uses[v]++;
  return uses;
}

bool is_model_output(const Graph& g, int v) { return std::count(g.outputs.begin(), g.outputs.end(), v) > 0; }
bool is_model_input(const Graph& g, int v) { return std::count(g.inputs.begin(), g.inputs.end(), v) > 0; }

void replace_uses(Graph& g, int from, int to) {
  for (Node& n : g.nodes)
    for (int& v : n.inputs)
      if (v == from) v = to;
}

void recompute_producers(Graph& g) {
  for (Value& v : g.values) v.producer = -1;
  for (size_t i = 0; i < g.nodes.size(); i++)
    for (int o : g.nodes[i].outputs)
      if (o >= 0) g.values[o].producer = (int)i;
}

void remove_nodes(Graph& g, const std::vector<bool>& remove) {
  std::vector<Node> kept;
  kept.reserve(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); i++)
    if (!remove[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
  recompute_producers(g);
}

std::vector<double> constant_as_doubles(const Value& v) {
  internal_assert(v.is_constant()) << v.name << " is not a constant";
  std::vector<double> x((size_t)v.elements());
  for (int64_t i = 0; i < v.elements(); i++) x[(size_t)i] = v.const_at(i);
  return x;
}

std::vector<uint8_t> doubles_to_bytes(const std::vector<double>& x, DType dtype) {
  std::vector<uint8_t> b(x.size() * dtype_size(dtype));
  for (size_t i = 0; i < x.size(); i++) {
    if (dtype == DType::F32) {
      float f = (float)x[i];
      memcpy(b.data() + i * 4, &f, 4);
    } else if (dtype == DType::F64) {
      memcpy(b.data() + i * 8, &x[i], 8);
    } else {
      internal_error << "doubles_to_bytes: unsupported dtype " << dtype_name(dtype);
    }
  }
  return b;
}

}  // namespace kiln::graph
