// Model checks before ONNX's code runs (validate.h).
#include "import/validate.h"

#include <onnx/defs/schema.h>

#include <cstring>
#include <unordered_set>

#include "support/diagnostics.h"

namespace kiln {
namespace {

// Attributes of default-domain operators that must be positive wherever
// they appear (their every use in ONNX is a size, step or divisor).
const char* const kPositive[] = {"strides", "dilations", "kernel_shape", "group", "blocksize"};

std::string describe(const onnx::NodeProto& n, int index) {
  return n.op_type() + " node '" + (n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name()) + "'";
}

void check_graph(const onnx::GraphProto& g) {
  for (int i = 0; i < g.node_size(); i++) {
    const onnx::NodeProto& n = g.node(i);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) check_graph(a.g());
      for (const auto& sub : a.graphs()) check_graph(sub);
      if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
      bool positive = false;
      for (const char* name : kPositive) positive |= a.name() == name;
      if (!positive) continue;
      bool ok = a.type() == onnx::AttributeProto::INT ? a.i() > 0 : a.type() == onnx::AttributeProto::INTS;
      for (int64_t v : a.ints()) ok &= v > 0;
      std::string got = a.type() == onnx::AttributeProto::INT ? std::to_string(a.i()) : "";
      for (int k = 0; k < a.ints_size(); k++) got += (k ? ", " : "[") + std::to_string(a.ints(k));
      if (a.type() == onnx::AttributeProto::INTS) got += a.ints_size() ? "]" : "[]";
      user_assert(ok) << describe(n, i) << ": attribute '" << a.name() << "' must be positive integers (got "
                      << (got.empty() ? "a " + onnx::AttributeProto::AttributeType_Name(a.type()) : got)
                      << "); fix the model";
    }
  }
}

// Every output of the main graph must be a value the graph defines: a graph
// input, a node's output or (from IR version 4, where initializers need not
// be inputs) an initializer. ONNX's checker does not check this, and ONNX's
// IR conversion (onnx::ImportModelProto, under the version converter)
// dereferences a null value for an undefined output. Subgraphs may name
// values of enclosing scopes, which ONNX resolves itself.
void check_graph_outputs(const onnx::ModelProto& model) {
  const onnx::GraphProto& g = model.graph();
  std::unordered_set<std::string> defined;
  for (const auto& in : g.input()) defined.insert(in.name());
  if (model.ir_version() >= 4) {
    for (const auto& init : g.initializer()) defined.insert(init.name());
  }
  for (const auto& n : g.node()) {
    for (const auto& out : n.output()) defined.insert(out);
  }
  for (const auto& out : g.output()) {
    user_assert(!out.name().empty() && defined.count(out.name()))
        << "graph output '" << out.name()
        << "' is not a graph input, an initializer or any node's output; fix the model";
  }
}

}  // namespace

void validate_model(const onnx::ModelProto& model) {
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto known = ranges.find(onnx::ONNX_DOMAIN);
  const int max_opset = known == ranges.end() ? 0 : known->second.second;
  for (const auto& o : model.opset_import()) {
    if (!o.domain().empty() && o.domain() != "ai.onnx") continue;
    user_assert(o.version() >= 1 && o.version() <= max_opset)
        << "the model imports ONNX opset " << o.version() << ", but kilnc knows opsets 1 to " << max_opset
        << "; export it for opset " << max_opset << " or older";
  }
  check_graph(model.graph());
  check_graph_outputs(model);
}

}  // namespace kiln
