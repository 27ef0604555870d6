// Stable topological sort of every graph of a model (sort_nodes.h).
#include "import/sort_nodes.h"

#include <queue>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "import/subgraph.h"

namespace kiln {

std::vector<int> stable_topological_order(const std::vector<const onnx::NodeProto*>& nodes) {
  const int n = (int)nodes.size();
  // Who writes each name.
  std::unordered_map<std::string, int> writer;
  for (int i = 0; i < n; i++)
    for (const auto& o : nodes[(size_t)i]->output())
      if (!o.empty()) writer.emplace(o, i);
  // Each node's users: the nodes reading what it writes (or whose subgraphs do).
  std::vector<std::vector<int>> users((size_t)n);
  std::vector<int> waiting((size_t)n, 0);
  for (int i = 0; i < n; i++) {
    std::vector<std::string> reads;
    node_reads(*nodes[(size_t)i], true, &reads);
    std::set<int> preds;
    for (const auto& r : reads) {
      auto w = r.empty() ? writer.end() : writer.find(r);
      // Graph inputs, initializers, outer names and a subgraph's own values
      // are written by no node here: no edge (ONNX forbids redefining a name).
      if (w != writer.end() && w->second != i) preds.insert(w->second);
    }
    for (int p : preds) users[(size_t)p].push_back(i);
    waiting[(size_t)i] = (int)preds.size();
  }
  // Kahn's algorithm, always taking the ready node that came first.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; i++)
    if (waiting[(size_t)i] == 0) ready.push(i);
  std::vector<int> order;
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[(size_t)i])
      if (--waiting[(size_t)u] == 0) ready.push(u);
  }
  return order;
}

namespace {

// Sorts `g`, then its subgraphs; returns the graphs that were out of order.
// A graph with a cycle is left as it is, for the import to report.
int sort_graph(onnx::GraphProto& g) {
  std::vector<const onnx::NodeProto*> nodes;
  for (const auto& node : g.node()) nodes.push_back(&node);
  std::vector<int> order = stable_topological_order(nodes);
  bool in_order = true;
  for (size_t i = 0; i < order.size(); i++) in_order &= order[i] == (int)i;
  int changed = 0;
  if (!in_order && order.size() == nodes.size()) {
    changed = 1;
    google::protobuf::RepeatedPtrField<onnx::NodeProto> old;
    old.Swap(g.mutable_node());
    for (int i : order) g.add_node()->Swap(&old[i]);
  }
  for (auto& node : *g.mutable_node())
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_g()) changed += sort_graph(*a.mutable_g());
      for (auto& sub : *a.mutable_graphs()) changed += sort_graph(sub);
    }
  return changed;
}

}  // namespace

int sort_nodes(onnx::ModelProto& model) {
  if (!model.has_graph()) return 0;
  return sort_graph(*model.mutable_graph());
}

}  // namespace kiln
