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
    } else if (dtype == DType::I32) {
      int32_t v = (int32_t)x[i];
      memcpy(b.data() + i * 4, &v, 4);
    } else if (dtype == DType::I8 || dtype == DType::U8) {
      b[i] = dtype == DType::I8 ? (uint8_t)(int8_t)x[i] : (uint8_t)x[i];
    } else {
      internal_error << "doubles_to_bytes: unsupported dtype " << dtype_name(dtype);
    }
  }
  return b;
}

bool fold_channel_affine_into_conv(Graph& g, Node& conv, const std::vector<double>& scale,
                                   const std::vector<double>& shift, const std::string& suffix) {
  if (conv.inputs.size() < 2 || conv.inputs[1] < 0) return false;
  const Value& w = g.values[conv.inputs[1]];
  int64_t C = (int64_t)shift.size();
  bool is_float = w.dtype == DType::F32 || w.dtype == DType::F64;
  if (!w.is_constant() || !is_float || w.shape.empty() || w.shape[0] != C) return false;
  if (!scale.empty() && (int64_t)scale.size() != C) return false;
  bool has_bias = conv.inputs.size() > 2 && conv.inputs[2] >= 0;
  if (has_bias && (!g.values[conv.inputs[2]].is_constant() || g.values[conv.inputs[2]].elements() != C)) return false;
  DType dt = w.dtype;
  Shape wshape = w.shape;
  std::string wname = w.name;
  std::vector<double> b = has_bias ? constant_as_doubles(g.values[conv.inputs[2]]) : std::vector<double>(C, 0.0);
  int new_w = conv.inputs[1];
  if (!scale.empty()) {
    std::vector<double> wd = constant_as_doubles(w);
    int64_t per = (int64_t)wd.size() / C;
    for (int64_t oc = 0; oc < C; oc++)
      for (int64_t j = 0; j < per; j++) wd[(size_t)(oc * per + j)] *= scale[(size_t)oc];
    new_w = g.add_constant(wname + "." + suffix, dt, wshape, doubles_to_bytes(wd, dt));
  }
  for (int64_t oc = 0; oc < C; oc++) b[(size_t)oc] = b[(size_t)oc] * (scale.empty() ? 1.0 : scale[(size_t)oc]) + shift[(size_t)oc];
  int new_b = g.add_constant(wname + "." + suffix + "_bias", dt, {C}, doubles_to_bytes(b, dt));
  conv.inputs.resize(3);
  conv.inputs[1] = new_w;
  conv.inputs[2] = new_b;
  return true;
}

bool NodeRemoval::finish(Graph& g, PassContext& ctx, const char* what) const {
  if (!count) return false;
  remove_nodes(g, remove);
  ctx.detail = std::to_string(count) + " " + what;
  return true;
}

int only_reader(const Graph& g, const std::vector<int>& uses, int v) {
  if (v < 0 || uses[v] != 1 || is_model_output(g, v)) return -1;
  for (size_t i = 0; i < g.nodes.size(); i++)
    for (int in : g.nodes[i].inputs)
      if (in == v) return (int)i;
  return -1;
}

bool scalar_input(const Graph& g, const Node& n, size_t slot, double* out) {
  if (slot >= n.inputs.size() || n.inputs[slot] < 0) return false;
  const Value& v = g.values[n.inputs[slot]];
  if (!v.is_constant() || v.elements() != 1) return false;
  *out = v.const_at(0);
  return true;
}

void absorb_consumer(Graph& g, int producer, int consumer, std::vector<bool>& remove) {
  int x = g.nodes[producer].outputs[0], y = g.nodes[consumer].outputs[0];
  g.nodes[producer].outputs[0] = y;  // keeps the consumer's output name
  g.values[y].producer = producer;
  g.values[x].producer = -1;
  remove[consumer] = true;
}

}  // namespace kiln::graph
