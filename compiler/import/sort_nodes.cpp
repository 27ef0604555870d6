// Stable topological sort of every graph of a model (sort_nodes.h).
#include "import/sort_nodes.h"

#include <queue>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "import/subgraph.h"

namespace kiln {
namespace {

// Sorts `g`, then its subgraphs; returns the graphs that were out of order.
int sort_graph(onnx::GraphProto& g) {
  const int n = g.node_size();
  // Who writes each name in this graph.
  std::unordered_map<std::string, int> writer;
  for (int i = 0; i < n; i++)
    for (const auto& o : g.node(i).output())
      if (!o.empty()) writer.emplace(o, i);
  // Each node's predecessors: the writers of what it (or its subgraphs) reads.
  std::vector<std::vector<int>> users(n);
  std::vector<int> waiting(n, 0);
  bool sorted = true;
  for (int i = 0; i < n; i++) {
    std::vector<std::string> reads;
    node_reads(g.node(i), true, &reads);
    std::set<int> preds;
    for (const auto& r : reads) {
      if (r.empty()) continue;
      auto w = writer.find(r);
      // Graph inputs, initializers, outer names and a subgraph's own values
      // are written by no node of this graph: no edge (ONNX forbids
      // redefining a name, so nothing is shadowed).
      if (w == writer.end() || w->second == i) continue;
      preds.insert(w->second);
    }
    for (int p : preds) {
      users[p].push_back(i);
      waiting[i]++;
      sorted &= p < i;
    }
  }
  int changed = 0;
  if (!sorted) {
    changed = 1;
    // Kahn's algorithm, always taking the ready node that came first.
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
    for (int i = 0; i < n; i++)
      if (waiting[i] == 0) ready.push(i);
    std::vector<int> order;
    std::vector<bool> placed(n, false);
    while (!ready.empty()) {
      int i = ready.top();
      ready.pop();
      order.push_back(i);
      placed[i] = true;
      for (int u : users[i])
        if (--waiting[u] == 0) ready.push(u);
    }
    for (int i = 0; i < n; i++)  // a cycle: left in file order, for the import to report
      if (!placed[i]) {
        order.push_back(i);
        changed = 0;  // (not sorted: the import's error says what is wrong)
      }
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    nodes.Swap(g.mutable_node());
    for (int i : order) g.add_node()->Swap(&nodes[i]);
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
