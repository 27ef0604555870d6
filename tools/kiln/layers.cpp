// The layer table of `kiln profile`: dispatches grouped by the graph nodes
// they implement (a Winograd conv's transforms and product, an LSTM's steps,
// fall into one layer), slowest first, with their share of the time and
// GFLOP/s where the nodes' FLOPs are known (NodeFlops).
#include <stdio.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "profiling.h"

namespace kiln_tool {

namespace {

struct Layer {
  std::string label;              // what DispatchLabel says of its first dispatch
  std::vector<size_t> dispatches;
  std::set<uint32_t> nodes;       // the source nodes of its dispatches
  double ms = 0;                  // the sum of its dispatches' times
};

// "1.234" or "-" (unknown FLOPs).
std::string Gflops(const ModelContents& c, const Layer& layer) {
  double flops = 0, node_flops = 0;
  for (uint32_t node : layer.nodes) {
    if (NodeFlops(c, node, &node_flops)) flops += node_flops;
  }
  if (flops <= 0 || layer.ms <= 0) return "-";
  char text[32];
  snprintf(text, sizeof(text), "%.2f", flops / (layer.ms * 1e6));
  return text;
}

}  // namespace

void PrintLayerTable(const ModelContents& c, const std::vector<double>& dispatch_ms, size_t top) {
  std::vector<Layer> layers;
  std::map<std::string, size_t> index;  // group key -> layer
  for (size_t d = 0; d < c.dispatches.size() && d < dispatch_ms.size(); ++d) {
    const kiln_dispatch_info_t& dispatch = c.dispatches[d];
    std::string key;
    for (uint32_t i = 0; i < dispatch.source_node_count; ++i) key += std::to_string(dispatch.source_nodes[i]) + ",";
    if (key.empty()) key = "kernel " + std::to_string(dispatch.kernel);
    auto found = index.emplace(key, layers.size());
    if (found.second) {
      layers.emplace_back();
      layers.back().label = DispatchLabel(c, d);
    }
    Layer& layer = layers[found.first->second];
    layer.dispatches.push_back(d);
    layer.nodes.insert(dispatch.source_nodes, dispatch.source_nodes + dispatch.source_node_count);
    layer.ms += dispatch_ms[d];
  }
  std::stable_sort(layers.begin(), layers.end(), [](const Layer& a, const Layer& b) { return a.ms > b.ms; });
  double total = std::accumulate(layers.begin(), layers.end(), 0.0,
                                 [](double sum, const Layer& layer) { return sum + layer.ms; });
  auto share = [&](double ms) { return total > 0 ? 100.0 * ms / total : 0.0; };
  size_t shown = top && top < layers.size() ? top : layers.size();
  printf("layers: %zu dispatches in %zu layers, sum of dispatch medians %.4f ms\n", c.dispatches.size(),
         layers.size(), total);
  printf("  %4s %10s %7s %9s %10s  %s\n", "rank", "median_ms", "share", "GFLOP/s", "dispatches", "layer");
  for (size_t rank = 0; rank < shown; ++rank) {
    const Layer& layer = layers[rank];
    printf("  %4zu %10.4f %6.2f%% %9s %10zu  %s\n", rank + 1, layer.ms, share(layer.ms),
           Gflops(c, layer).c_str(), layer.dispatches.size(), layer.label.c_str());
  }
  if (shown < layers.size()) {
    double rest = 0;
    size_t rest_dispatches = 0;
    for (size_t i = shown; i < layers.size(); ++i) {
      rest += layers[i].ms;
      rest_dispatches += layers[i].dispatches.size();
    }
    printf("  %4s %10.4f %6.2f%% %9s %10zu  (%zu more layers)\n", "-", rest, share(rest), "-",
           rest_dispatches, layers.size() - shown);
  }
}

}  // namespace kiln_tool
