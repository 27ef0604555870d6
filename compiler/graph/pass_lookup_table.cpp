// lookup-table: an elementwise computation from one 8-bit tensor to an 8-bit
// tensor becomes a 256-entry table, computed at compile time.
//
// Quantized models leave the operators ONNX Runtime's quantizer has no
// integer kernel for in float, between a DequantizeLinear and a
// QuantizeLinear: GELU (Div, Erf, Add, Mul, each re-quantized), Sigmoid,
// Tanh, HardSwish, Softplus. Whatever the chain computes, when its only
// varying input X is uint8/int8 and its result is uint8/int8, it is a
// function of 256 values: the chain is evaluated once on every value X can
// hold, with the compiler itself (the evaluator of PassEnvironment, the same
// kernels the chain would have run), and replaced by kiln.LookupTable(X,
// table): out[i] = table[X[i]] (int8: table[X[i] + 128]). ONNX Runtime does
// this for its QLinear activations; here it covers any chain, at a cost of
// one load per element instead of a polynomial and a division per
// quantization step.
//
// The region: starting from an eligible node whose output is 8-bit, the
// pass walks back through eligible producers (elementwise, deterministic,
// every operand a one-element constant or a tensor of the output's shape)
// to the furthest 8-bit value that every path goes through (X). Every value
// computed inside the region must be read only inside it (and not be a
// model output), and the region must contain an operator other than
// QuantizeLinear/DequantizeLinear (a bare requantization is cheap already).
// Where the target looks bytes up in registers (VectorInfo::byte_table:
// AVX512-VBMI, AArch64) a lookup costs a few permutes per vector and every
// such region is worth it; elsewhere the lookup is a gather, and only
// regions of at least kMinNodesForGather nodes (a GELU is 12) become tables.
// It runs after the layout pass, so it sees blocked tensors as they will
// run; without an evaluator it does nothing.
#include <algorithm>
#include <map>
#include <set>

#include "graph/passes.h"
#include "support/diagnostics.h"

namespace kiln::graph {

namespace {

constexpr size_t kMaxRegionNodes = 64;
constexpr size_t kMinNodesForGather = 6;

bool is_8bit(DType t) { return t == DType::U8 || t == DType::I8; }
bool is_float_type(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::F16; }

struct Region {
  int root = -1;           // X, the varying 8-bit input
  int terminal = -1;       // the node whose output the table gives
  std::vector<int> nodes;  // the region's nodes, terminal included
};

class TableBuilder {
 public:
  TableBuilder(Graph& g, bool byte_table) : g_(g), byte_table_(byte_table), removal_(g), readers_(g.values.size()) {
    for (size_t i = 0; i < g.nodes.size(); i++)
      for (int v : g.nodes[i].inputs)
        if (v >= 0) readers_[v].push_back((int)i);
  }

  bool run(PassContext& ctx) {
    if (!ctx.env.evaluate) return false;
    std::vector<Region> regions;
    std::vector<bool> taken(g_.nodes.size(), false);
    for (size_t i = g_.nodes.size(); i-- > 0;) {
      if (taken[i]) continue;
      Region r;
      if (!find_region((int)i, taken, r)) continue;
      for (int n : r.nodes) taken[n] = true;
      regions.push_back(std::move(r));
    }
    if (regions.empty()) return false;
    std::vector<std::vector<uint8_t>> tables;
    try {
      tables = evaluate(ctx, regions);
    } catch (const std::exception&) {
      // One at a time; a region the compiler cannot evaluate stays as it is.
      std::vector<Region> ok;
      for (Region& r : regions) {
        try {
          tables.push_back(evaluate(ctx, {r})[0]);
          ok.push_back(std::move(r));
        } catch (const std::exception&) {
        }
      }
      regions = std::move(ok);
    }
    for (size_t k = 0; k < regions.size(); k++) replace(regions[k], std::move(tables[k]));
    // The new nodes replace their terminals in place: the order stays topological.
    return removal_.finish(g_, ctx, "regions became tables");
  }

 private:
  // An elementwise node whose operands are one-element constants or tensors of `shape`.
  bool eligible(int i, const Shape& shape) const {
    const Node& n = g_.nodes[i];
    const OpTraits& t = n.traits();
    if (!t.elementwise() || t.nondeterministic() || removal_.remove[i]) return false;
    // Integer division is undefined (a trap on x86) for a zero divisor, which
    // some of the 256 inputs may produce although the model's data never does.
    if ((t.op == Op::Div || t.op == Op::Mod) && !n.outputs.empty() && n.outputs[0] >= 0 &&
        !is_float_type(g_.values[n.outputs[0]].dtype))
      return false;
    int outs = 0;
    for (int o : n.outputs) outs += o >= 0;
    if (outs != 1 || n.outputs[0] < 0 || g_.values[n.outputs[0]].shape != shape) return false;
    for (int v : n.inputs) {
      if (v < 0) continue;
      const Value& x = g_.values[v];
      if (x.is_constant() ? x.elements() != 1 || x.shape.size() > shape.size() : x.shape != shape) return false;
    }
    return true;
  }

  // Walks back from `terminal`, in reverse topological order, recording each
  // point where a single 8-bit value feeds everything collected so far; the
  // furthest such point whose region is self-contained wins.
  bool find_region(int terminal, const std::vector<bool>& taken, Region& out) const {
    const Node& t = g_.nodes[terminal];
    if (t.outputs.empty() || t.outputs[0] < 0) return false;
    const Value& y = g_.values[t.outputs[0]];
    if (!is_8bit(y.dtype) || y.shape.empty() || y.elements() < 256 || !eligible(terminal, y.shape)) return false;
    std::vector<int> nodes = {terminal};
    std::set<int> open;  // values read by the collected nodes, produced outside them
    auto add_inputs = [&](int node) {
      for (int v : g_.nodes[node].inputs)
        if (v >= 0 && !g_.values[v].is_constant()) open.insert(v);
    };
    add_inputs(terminal);
    std::vector<Region> candidates;
    while (!open.empty() && nodes.size() <= kMaxRegionNodes) {
      if (open.size() == 1 && is_8bit(g_.values[*open.begin()].dtype))
        candidates.push_back({*open.begin(), terminal, nodes});
      // The open value produced last: nothing else open depends on it, so if
      // it cannot be expanded the collected nodes can never narrow to one input.
      int v = *std::max_element(open.begin(), open.end(),
                                [&](int a, int b) { return g_.values[a].producer < g_.values[b].producer; });
      int p = g_.values[v].producer;
      if (p < 0 || taken[p] || !eligible(p, y.shape)) break;
      open.erase(v);
      nodes.push_back(p);
      add_inputs(p);
    }
    for (size_t k = candidates.size(); k-- > 0;) {
      if (self_contained(candidates[k]) && computes(candidates[k]) &&
          (byte_table_ || candidates[k].nodes.size() >= kMinNodesForGather)) {
        out = std::move(candidates[k]);
        return true;
      }
    }
    return false;
  }

  // Every value computed inside, but the terminal's, is read only inside.
  bool self_contained(const Region& r) const {
    std::set<int> inside(r.nodes.begin(), r.nodes.end());
    for (int n : r.nodes) {
      if (n == r.terminal) continue;
      for (int o : g_.nodes[n].outputs) {
        if (o < 0) continue;
        if (is_model_output(g_, o)) return false;
        for (int reader : readers_[o])
          if (!inside.count(reader)) return false;
      }
    }
    return true;
  }

  // More than quantization steps.
  bool computes(const Region& r) const {
    for (int n : r.nodes)
      if (!g_.nodes[n].is(Op::QuantizeLinear) && !g_.nodes[n].is(Op::DequantizeLinear)) return true;
    return false;
  }

  // Runs the regions on every value of their inputs: one graph whose inputs
  // are a fresh value per region standing for its root (shape
  // [1, ..., 1, 256], holding 0..255 or -128..127; fresh, because a root
  // may be another region's result), outputs the terminals' values.
  std::vector<std::vector<uint8_t>> evaluate(PassContext& ctx, const std::vector<Region>& regions) const {
    Graph sub;
    sub.values = g_.values;
    sub.opset = g_.opset;
    sub.producer = g_.producer;
    std::vector<int> order;
    std::vector<int> root(g_.nodes.size(), -1), stand_in(g_.nodes.size(), -1);  // node -> its region's root, its stand-in
    std::vector<std::vector<uint8_t>> inputs;
    for (const Region& r : regions) {
      Value x = g_.values[r.root];
      x.name = sub.unique_name(x.name + ".all_values");
      x.shape = table_shape(x.shape.size());
      x.data = nullptr;
      x.producer = -1;
      int v = sub.add_value(std::move(x));
      sub.inputs.push_back(v);
      std::vector<uint8_t> all(256);
      for (int k = 0; k < 256; k++) all[k] = (uint8_t)(g_.values[r.root].dtype == DType::I8 ? k - 128 : k);
      inputs.push_back(std::move(all));
      for (int n : r.nodes) root[n] = r.root, stand_in[n] = v;
      order.insert(order.end(), r.nodes.begin(), r.nodes.end());
    }
    std::sort(order.begin(), order.end());
    for (int n : order) {
      Node copy = g_.nodes[n];
      for (int& in : copy.inputs)
        if (in >= 0 && in == root[n]) in = stand_in[n];
      for (int o : copy.outputs)
        if (o >= 0) sub.values[o].shape = table_shape(sub.values[o].shape.size());
      sub.nodes.push_back(std::move(copy));
    }
    for (const Region& r : regions) sub.outputs.push_back(g_.nodes[r.terminal].outputs[0]);
    recompute_producers(sub);
    std::vector<std::vector<uint8_t>> tables = ctx.env.evaluate(sub, inputs);
    internal_assert(tables.size() == regions.size()) << "lookup-table: the evaluator returned " << tables.size()
                                                     << " results for " << regions.size() << " regions";
    for (auto& t : tables) internal_assert(t.size() == 256) << "lookup-table: a table of " << t.size() << " bytes";
    return tables;
  }

  static Shape table_shape(size_t rank) {
    Shape s(std::max<size_t>(rank, 1), 1);
    s.back() = 256;
    return s;
  }

  void replace(const Region& r, std::vector<uint8_t> table) {
    int out = g_.nodes[r.terminal].outputs[0];
    std::string name = g_.unique_name(g_.values[out].name + ".table");
    int tab = g_.add_constant(name, g_.values[out].dtype, {256}, std::move(table));
    Node& t = g_.nodes[r.terminal];
    Node lut;
    lut.op = "kiln.LookupTable";
    lut.name = t.name;
    lut.inputs = {r.root, tab};
    lut.outputs = {out};
    for (int n : r.nodes) removal_.remove[n] = true;
    removal_.remove[r.terminal] = false;
    t = std::move(lut);
    removal_.count++;
  }

  Graph& g_;
  bool byte_table_;  // the target looks bytes up in registers
  NodeRemoval removal_;
  std::vector<std::vector<int>> readers_;  // value -> the nodes reading it
};

}  // namespace

bool pass_lookup_table(Graph& g, PassContext& ctx) {
  if (!g.symbols.empty()) return false;  // run-time dimensions: not yet (docs/dynamic-shapes.md)
  return TableBuilder(g, ctx.env.vector.byte_table).run(ctx);
}

}  // namespace kiln::graph
