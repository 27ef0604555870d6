// Function bodies instead of the operators kilnc lacks (expand_functions.h).
#include "import/expand_functions.h"

#include <onnx/defs/schema.h>
#include <onnx/inliner/inliner.h>

#include <map>
#include <string>
#include <vector>

#include "graph/op_table.h"
#include "import/constant_nodes.h"
#include "import/subgraph.h"
#include "support/diagnostics.h"

namespace kiln {
namespace {

// ONNX's preview domain (FlexAttention): its function bodies are expanded too.
const char* const kPreviewDomain = "ai.onnx.preview";
// The local functions expand_functions makes, one per node, inlined at once.
const char* const kExpandedDomain = "kiln.expanded";

}  // namespace

void inline_local_functions(onnx::ModelProto& model) {
  if (model.functions_size() == 0) return;
  try {
    onnx::inliner::InlineLocalFunctions(model, /*convert_version=*/true);
  } catch (const std::exception& e) {
    user_error << "the model's local functions could not be inlined: " << one_line(e.what());
  }
}

int expand_functions(onnx::ModelProto& model) {
  const int64_t opset = imported_opset(model);
  if (opset <= 0) return 0;
  onnx::GraphProto& g = *model.mutable_graph();
  // What types ONNX's inference gave (a body may depend on its inputs' types).
  std::map<std::string, const onnx::TypeProto*> types;
  for (const auto& vi : g.input()) types[vi.name()] = &vi.type();
  for (const auto& vi : g.value_info()) types[vi.name()] = &vi.type();
  for (const auto& vi : g.output()) types[vi.name()] = &vi.type();
  std::map<std::string, onnx::TypeProto> initializer_types;
  for (const auto& t : g.initializer()) {
    onnx::TypeProto& type = initializer_types[t.name()];
    type.mutable_tensor_type()->set_elem_type(t.data_type());
    for (int64_t d : t.dims()) type.mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
    types.emplace(t.name(), &type);
  }
  onnx::inliner::FunctionIdVector ids;
  for (int i = 0; i < g.node_size(); i++) {
    onnx::NodeProto& n = *g.mutable_node(i);
    const bool preview = n.domain() == kPreviewDomain;
    if (!(is_default_domain(n.domain()) || preview) || graph::op_traits(n.op_type()).known()) continue;
    const int64_t version = preview ? imported_opset(model, kPreviewDomain) : opset;
    const onnx::OpSchema* schema =
        version > 0 ? onnx::OpSchemaRegistry::Schema(n.op_type(), (int)version, n.domain()) : nullptr;
    if (!schema || !(schema->HasFunction() || schema->HasContextDependentFunction())) continue;
    // The attributes the node leaves out, at the schema's defaults (the body refers to them).
    for (const auto& [name, a] : schema->attributes()) {
      bool given = false;
      for (const auto& have : n.attribute()) given |= have.name() == name;
      if (!given && a.default_value.type() != onnx::AttributeProto::UNDEFINED) {
        onnx::AttributeProto* add = n.add_attribute();
        *add = a.default_value;
        add->set_name(name);
      }
    }
    onnx::FunctionProto body;
    bool built = false;
    if (schema->HasContextDependentFunction()) {
      std::vector<onnx::TypeProto> input_types;
      for (const auto& in : n.input()) {
        auto it = types.find(in);
        input_types.push_back(in.empty() || it == types.end() ? onnx::TypeProto() : *it->second);
      }
      onnx::FunctionBodyBuildContextImpl context(n, input_types);
      try {
        built = schema->BuildContextDependentFunction(context, body, (int)version);
      } catch (const std::exception&) {
        built = false;
      }
    }
    if (!built && schema->HasFunction()) {
      const onnx::FunctionProto* f = schema->GetFunction((int)version);
      if (f) body = *f, built = true;
    }
    if (!built) continue;  // (the import then names the node it cannot compile)
    // The body as a local function of this node alone, which ONNX's inliner replaces it with.
    const std::string name = n.op_type() + "." + std::to_string(i);
    body.set_domain(kExpandedDomain);
    body.set_name(name);
    if (body.opset_import_size() == 0) {
      onnx::OperatorSetIdProto* o = body.add_opset_import();
      o->set_domain("");
      o->set_version(opset);
    }
    *model.add_functions() = std::move(body);
    n.set_domain(kExpandedDomain);
    n.set_op_type(name);
    ids.emplace_back(kExpandedDomain, name);
  }
  if (ids.empty()) return 0;
  const int count = (int)ids.size();
  bool imported = false;
  for (const auto& o : model.opset_import()) imported |= o.domain() == kExpandedDomain;
  if (!imported) {
    onnx::OperatorSetIdProto* o = model.add_opset_import();
    o->set_domain(kExpandedDomain);
    o->set_version(1);
  }
  // A body written for an older ai.onnx opset than the model's (Swish's, at
  // 24, in a model of opset 28) is first brought to the model's opset by
  // ONNX's version converter, which only InlineLocalFunctions does; the
  // model's own functions are inlined already (inline_local_functions), so
  // it inlines just these.
  bool convert = false;
  for (const auto& f : model.functions())
    for (const auto& o : f.opset_import()) convert |= is_default_domain(o.domain()) && o.version() != opset;
  try {
    if (convert) {
      onnx::inliner::InlineLocalFunctions(model, /*convert_version=*/true);
    } else {
      auto set = onnx::inliner::FunctionIdSet::Create(std::move(ids));
      onnx::inliner::InlineSelectedLocalFunctions(model, *set);
    }
  } catch (const std::exception& e) {
    user_error << "expanding an operator into its ONNX function body failed: " << one_line(e.what());
  }
  for (const auto& n : g.node())
    user_assert(n.domain() != kExpandedDomain)
        << "expanding an operator into its ONNX function body failed: the body of " << n.op_type()
        << " imports opsets the model's do not match";
  normalize_constant_nodes(*model.mutable_graph());  // bodies use value_int, value_floats, ... (constant_nodes.h)
  // The body's own operators are ai.onnx ones; the helper domain goes again.
  auto* imports = model.mutable_opset_import();
  for (int k = imports->size() - 1; k >= 0; k--)
    if (imports->Get(k).domain() == kExpandedDomain) imports->DeleteSubrange(k, 1);
  return count;
}

}  // namespace kiln
