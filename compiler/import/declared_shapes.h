// The shapes a model declares for its values are claims, not facts: kilnc
// infers every shape itself (with ONNX's shape inference and its own,
// infer_dims.h) and trusts the declarations only where inference knows less.
//
// Exporters get them wrong (a Paddle export declares rank 2 for a rank-3
// output; a value_info left from before a graph edit), and ONNX's shape
// inference then refuses the model, where ONNX Runtime runs it. So before
// inference, strip_declared_shapes clears every graph's value_info and the
// shapes of the main graph's outputs, keeping the outputs' declarations;
// after it, reconcile_declared_shapes puts back what inference left unknown
// and, where the two disagree, keeps the inferred shape with a warning that
// names the output (decision 60).
#pragma once

#include <map>
#include <string>

#include <onnx/onnx_pb.h>

namespace kiln {

// The main graph's outputs' declared shapes, by name (only those that have one).
using DeclaredShapes = std::map<std::string, onnx::TensorShapeProto>;

DeclaredShapes strip_declared_shapes(onnx::ModelProto& model);

// Clears `shape`'s negative sizes: Paddle's exporter writes -1 for a
// dimension it does not know.
void clear_negative_dims(onnx::TensorShapeProto& shape);
// Returns whether a declaration gave a dimension inference left unknown:
// the import then infers dimensions itself (infer_dims.h), the declared
// size a constraint the run must meet.
bool reconcile_declared_shapes(onnx::ModelProto& model, const DeclaredShapes& declared);

}  // namespace kiln
