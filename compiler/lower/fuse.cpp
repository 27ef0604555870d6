#include "lower/fuse.h"

#include <algorithm>
#include <map>
#include <vector>

namespace kiln {
namespace {

// The most operators one fused kernel computes. Fused formulas nest one
// level per operator and every later stage walks them recursively: a model
// with thousands of elementwise operators in a row would otherwise overflow
// the stack. Real models fuse a handful (a GELU: about ten).
constexpr int kMaxFusedChain = 64;

}  // namespace

std::set<int> choose_fused_values(const graph::Graph& g) {
  std::map<int, int> uses;
  std::map<int, int> consumer;
  for (size_t ni = 0; ni < g.nodes.size(); ni++)
    for (int v : g.nodes[ni].inputs)
      if (v >= 0) {
        uses[v]++;
        consumer[v] = (int)ni;
      }
  std::set<int> outputs(g.outputs.begin(), g.outputs.end());
  for (int v : g.outputs) uses[v] += 2;  // never fuse a model output
  std::set<int> fused;
  for (const graph::Node& n : g.nodes) {
    if (n.traits().shape_only() || n.outputs.size() != 1 || n.outputs[0] < 0) continue;
    int v = n.outputs[0];
    if (uses[v] != 1 || g.values[v].is_constant()) continue;
    const graph::Node& c = g.nodes[consumer[v]];
    int written = 0;  // an elementwise operator with several outputs (training BatchNormalization) is no epilogue
    for (int o : c.outputs) written += o >= 0;
    if (!c.traits().elementwise() || c.outputs.empty() || c.outputs[0] < 0 || written != 1) continue;
    if (c.guards != n.guards) continue;  // a run-time If's branch runs alone (its kernels are predicated)
    if (!g.same_dims(g.values[c.outputs[0]].dim_exprs(), g.values[v].dim_exprs())) continue;
    fused.insert(v);
  }
  // A value read by several elementwise consumers that all end in the same
  // kernel fuses too (a GELU or SiLU reads its input twice: x * f(x)): each
  // read inlines its formula, and a heavy producer's reads all become reads
  // of its accumulator tile in the fused epilogue (te::find_epilogue_anchor),
  // so nothing is computed twice but cheap elementwise operators. The kernel
  // a consumer ends in: follow fused values to the first one that is not.
  auto root_of = [&](int node) {
    for (int steps = 0; steps < kMaxFusedChain; steps++) {
      const graph::Node& n = g.nodes[(size_t)node];
      if (n.outputs.size() != 1 || n.outputs[0] < 0 || !fused.count(n.outputs[0])) return node;
      node = consumer[n.outputs[0]];
    }
    return -1;
  };
  std::map<int, std::vector<int>> consumers;
  for (size_t ni = 0; ni < g.nodes.size(); ni++)
    for (int v : g.nodes[ni].inputs)
      if (v >= 0 && uses[v] > 1 && (consumers[v].empty() || consumers[v].back() != (int)ni)) consumers[v].push_back((int)ni);
  for (const graph::Node& n : g.nodes) {
    if (n.traits().shape_only() || n.outputs.size() != 1 || n.outputs[0] < 0) continue;
    int v = n.outputs[0];
    if (uses[v] < 2 || outputs.count(v) || g.values[v].is_constant() || !consumers.count(v)) continue;
    int root = -2;
    for (int ci : consumers[v]) {
      const graph::Node& c = g.nodes[(size_t)ci];
      bool ok = c.traits().elementwise() && c.outputs.size() == 1 && c.outputs[0] >= 0 && c.guards == n.guards &&
                g.same_dims(g.values[c.outputs[0]].dim_exprs(), g.values[v].dim_exprs());
      int r = ok ? root_of(ci) : -1;
      if (r < 0 || (root != -2 && r != root)) {
        root = -1;
        break;
      }
      root = r;
    }
    if (root >= 0) fused.insert(v);
  }
  // Chains longer than kMaxFusedChain are cut (a value every that many
  // operators is materialized); nodes are in topological order, so each
  // node's chain length is known when it is reached.
  std::vector<int> chain(g.values.size(), 0);  // operators fused into the kernel up to this value
  for (const graph::Node& n : g.nodes) {
    int longest = 0;
    for (int v : n.inputs)
      if (v >= 0 && fused.count(v)) longest = std::max(longest, chain[v]);
    for (int o : n.outputs)
      if (o >= 0) chain[o] = longest + 1;
    if (n.outputs.size() == 1 && n.outputs[0] >= 0 && chain[n.outputs[0]] >= kMaxFusedChain) {
      fused.erase(n.outputs[0]);
      chain[n.outputs[0]] = 0;
    }
  }
  // A kernel has one anchor: when a consumer would receive several heavy
  // producers (e.g. the two convolutions of a ResNet downsampling block
  // meeting in an Add), only the last one fuses; the others get their own
  // kernels (their reductions would otherwise run untiled at every element).
  // Heavy producers are found through fused elementwise ones too (int8
  // convolutions meet in an Add through their DequantizeLinear nodes).
  std::map<int, std::vector<int>> anchors;  // fused value -> the heavy fused values its kernel part holds
  for (const graph::Node& c : g.nodes) {
    std::vector<int> heavy;
    for (int v : c.inputs) {
      if (v < 0 || !fused.count(v)) continue;
      if (g.nodes[g.values[v].producer].traits().role == graph::OpRole::Heavy) heavy.push_back(v);
      auto it = anchors.find(v);
      if (it != anchors.end()) heavy.insert(heavy.end(), it->second.begin(), it->second.end());
    }
    std::sort(heavy.begin(), heavy.end(), [&](int a, int b) { return g.values[a].producer < g.values[b].producer; });
    heavy.erase(std::unique(heavy.begin(), heavy.end()), heavy.end());
    for (size_t i = 0; i + 1 < heavy.size(); i++) fused.erase(heavy[i]);
    if (!heavy.empty())
      for (int o : c.outputs)
        if (o >= 0) anchors[o] = {heavy.back()};
  }
  return fused;
}

}  // namespace kiln
