// Declared shapes as hints (declared_shapes.h).
#include "import/declared_shapes.h"

#include "support/diagnostics.h"

namespace kiln {
namespace {

void clear_value_info(onnx::GraphProto& g) {
  g.clear_value_info();
  for (auto& n : *g.mutable_node())
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) clear_value_info(*a.mutable_g());
      for (auto& sub : *a.mutable_graphs()) clear_value_info(sub);
    }
}

std::string shape_text(const onnx::TensorShapeProto& s) {
  std::string t = "[";
  for (int k = 0; k < s.dim_size(); k++) {
    if (k) t += ", ";
    const auto& d = s.dim(k);
    t += d.has_dim_value() ? std::to_string(d.dim_value()) : d.has_dim_param() ? d.dim_param() : "?";
  }
  return t + "]";
}

}  // namespace

void clear_negative_dims(onnx::TensorShapeProto& shape) {
  for (auto& d : *shape.mutable_dim())
    if (d.has_dim_value() && d.dim_value() < 0) d.clear_dim_value();
}

DeclaredShapes strip_declared_shapes(onnx::ModelProto& model) {
  DeclaredShapes declared;
  onnx::GraphProto& g = *model.mutable_graph();
  clear_value_info(g);
  for (auto& out : *g.mutable_output()) {
    if (!out.type().has_tensor_type() || !out.type().tensor_type().has_shape()) continue;
    onnx::TensorShapeProto& said = declared[out.name()];
    said = out.type().tensor_type().shape();
    clear_negative_dims(said);
    out.mutable_type()->mutable_tensor_type()->clear_shape();
  }
  return declared;
}

bool reconcile_declared_shapes(onnx::ModelProto& model, const DeclaredShapes& declared) {
  bool filled = false;
  for (auto& out : *model.mutable_graph()->mutable_output()) {
    auto it = declared.find(out.name());
    if (it == declared.end() || !out.type().has_tensor_type()) continue;
    const onnx::TensorShapeProto& said = it->second;
    onnx::TypeProto_Tensor& t = *out.mutable_type()->mutable_tensor_type();
    if (!t.has_shape()) {  // inference knows nothing: the declaration stands
      *t.mutable_shape() = said;
      filled = true;
      continue;
    }
    onnx::TensorShapeProto& inferred = *t.mutable_shape();
    bool disagree = inferred.dim_size() != said.dim_size();
    for (int k = 0; !disagree && k < said.dim_size(); k++)
      disagree = inferred.dim(k).has_dim_value() && said.dim(k).has_dim_value() &&
                 inferred.dim(k).dim_value() != said.dim(k).dim_value();
    if (disagree) {
      user_warning << "model output '" << out.name() << "' is declared " << shape_text(said) << " but is "
                   << shape_text(inferred) << "; kilnc uses the shape it inferred";
      continue;
    }
    // Same rank, no conflict: the declaration fills in what inference left open.
    for (int k = 0; k < said.dim_size(); k++) {
      onnx::TensorShapeProto_Dimension& d = *inferred.mutable_dim(k);
      if (d.has_dim_value()) continue;
      if (said.dim(k).has_dim_value()) d.set_dim_value(said.dim(k).dim_value()), filled = true;
      else if (!d.has_dim_param() && said.dim(k).has_dim_param()) d.set_dim_param(said.dim(k).dim_param());
    }
  }
  return filled;
}

}  // namespace kiln
