#include "import/subgraph.h"

#include <algorithm>
#include <map>

namespace kiln {
namespace {

using Renames = std::map<std::string, std::string>;

// Names a graph defines for itself: its inputs, initializers and node
// outputs ("", an absent optional output, is no name).
std::set<std::string> defined_in(const onnx::GraphProto& g) {
  std::set<std::string> d;
  for (auto& i : g.input()) d.insert(i.name());
  for (auto& t : g.initializer()) d.insert(t.name());
  for (auto& n : g.node())
    for (auto& o : n.output()) d.insert(o);
  d.erase("");
  return d;
}

// Every name defined in `g` or in a graph nested in it.
void all_defined(const onnx::GraphProto& g, std::set<std::string>& out) {
  for (auto& name : defined_in(g)) out.insert(name);
  for (auto& n : g.node())
    for (auto& a : n.attribute()) {
      if (a.has_g()) all_defined(a.g(), out);
      for (auto& sub : a.graphs()) all_defined(sub, out);
    }
}

// Renames the reads of a nested graph that refer to renamed values of the
// graph around it (the names it defines itself shadow them).
void rename_outer_reads(onnx::GraphProto& g, const Renames& outer) {
  std::set<std::string> own = defined_in(g);
  Renames visible;
  for (auto& [from, to] : outer)
    if (!own.count(from)) visible[from] = to;
  if (visible.empty()) return;
  for (auto& n : *g.mutable_node()) {
    for (auto& in : *n.mutable_input()) {
      auto it = visible.find(in);
      if (it != visible.end()) in = it->second;
    }
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) rename_outer_reads(*a.mutable_g(), visible);
      for (auto& sub : *a.mutable_graphs()) rename_outer_reads(sub, visible);
    }
  }
  for (auto& o : *g.mutable_output()) {
    auto it = visible.find(o.name());
    if (it != visible.end()) o.set_name(it->second);
  }
}

}  // namespace

SubgraphInliner::SubgraphInliner(onnx::GraphProto& g) : g_(g) {
  all_defined(g, taken_);  // fresh names must not shadow or be shadowed anywhere
}

std::string SubgraphInliner::fresh(const std::string& base) {
  std::string name = base;
  int& k = next_[base];  // (loops ask for one base per iteration: start where the last one ended)
  if (k == 0) k = 1;
  for (; taken_.count(name); k++) name = base + "_" + std::to_string(k);
  taken_.insert(name);
  return name;
}

int64_t count_nodes(const onnx::GraphProto& g) {
  int64_t n = g.node_size();
  for (auto& node : g.node())
    for (auto& a : node.attribute()) {
      if (a.has_g()) n += count_nodes(a.g());
      for (auto& sub : a.graphs()) n += count_nodes(sub);
    }
  return n;
}

bool may_unroll(const onnx::GraphProto& g, size_t pending, int64_t copies, const onnx::GraphProto& body) {
  const int64_t per_copy = std::max<int64_t>(count_nodes(body), 1);
  if (copies < 0 || copies > kMaxUnrolledNodes / per_copy) return false;
  return (int64_t)g.node_size() + (int64_t)pending + copies * per_copy <= kMaxGraphNodes;
}

std::vector<std::string> SubgraphInliner::inline_graph(const onnx::GraphProto& body,
                                                        const std::vector<std::string>& bound,
                                                        const std::string& prefix, std::vector<onnx::NodeProto>& out) {
  Renames local;
  for (auto& name : defined_in(body)) local[name] = fresh(prefix + name);
  for (size_t k = 0; k < bound.size() && k < (size_t)body.input_size(); k++) local[body.input((int)k).name()] = bound[k];
  for (auto& t : body.initializer()) {
    onnx::TensorProto* copy = g_.add_initializer();
    *copy = t;
    copy->set_name(local[t.name()]);
  }
  for (auto& bn : body.node()) {
    onnx::NodeProto c = bn;
    c.set_name(fresh(prefix + (c.name().empty() ? c.op_type() : c.name())));
    for (auto& in : *c.mutable_input()) {
      auto it = local.find(in);
      if (it != local.end()) in = it->second;
    }
    for (auto& o : *c.mutable_output())
      if (!o.empty()) o = local[o];
    for (auto& a : *c.mutable_attribute()) {
      if (a.has_g()) rename_outer_reads(*a.mutable_g(), local);
      for (auto& sub : *a.mutable_graphs()) rename_outer_reads(sub, local);
    }
    out.push_back(std::move(c));
  }
  std::vector<std::string> results;
  for (auto& o : body.output()) {
    auto it = local.find(o.name());
    results.push_back(it == local.end() ? o.name() : it->second);  // an outer value, or the body's
  }
  return results;
}

std::map<std::string, const onnx::TensorProto*> graph_constants(const onnx::GraphProto& g, bool inputs_override) {
  std::map<std::string, const onnx::TensorProto*> constants;
  for (auto& t : g.initializer()) constants[t.name()] = &t;
  if (inputs_override)
    for (auto& i : g.input()) constants.erase(i.name());
  for (auto& n : g.node())  // (the import left Constant nodes in their `value` form)
    if (n.op_type() == "Constant" && n.output_size() == 1)
      for (auto& a : n.attribute())
        if (a.name() == "value" && a.has_t()) constants[n.output(0)] = &a.t();
  return constants;
}

onnx::NodeProto make_node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs) {
  onnx::NodeProto m;
  m.set_op_type(op);
  m.set_name(name);
  for (auto& i : inputs) m.add_input(i);
  for (auto& o : outputs) m.add_output(o);
  return m;
}

onnx::TensorProto int_tensor(const std::string& name, int type, const std::vector<int64_t>& values, bool scalar) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  if (!scalar) t.add_dims((int64_t)values.size());
  for (int64_t v : values) {
    if (type == onnx::TensorProto::INT64) t.add_int64_data(v);
    else t.add_int32_data((int32_t)v);
  }
  return t;
}

void set_int_attribute(onnx::NodeProto& n, const char* name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

int64_t imported_opset(const onnx::ModelProto& model, const std::string& domain) {
  for (const auto& o : model.opset_import())
    if (is_default_domain(domain) ? is_default_domain(o.domain()) : o.domain() == domain) return o.version();
  return 0;
}

const onnx::GraphProto* graph_attribute(const onnx::NodeProto& n, const char* name) {
  for (auto& a : n.attribute())
    if (a.name() == name && a.has_g()) return &a.g();
  return nullptr;
}

void node_reads(const onnx::NodeProto& n, bool subgraphs, std::vector<std::string>* out) {
  out->insert(out->end(), n.input().begin(), n.input().end());
  if (!subgraphs) return;
  for (auto& a : n.attribute()) {
    auto visit = [&](const onnx::GraphProto& g) {
      for (auto& inner : g.node()) node_reads(inner, true, out);
    };
    if (a.has_g()) visit(a.g());
    for (auto& sub : a.graphs()) visit(sub);
  }
}

}  // namespace kiln
