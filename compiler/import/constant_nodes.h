// One form of Constant node for everything after the import's first steps.
//
// ONNX's Constant carries its value in one of eight attributes: `value` (a
// tensor), `value_float(s)`, `value_int(s)`, `value_string(s)` (opset 12+)
// and `sparse_value` (opset 11+). normalize_constant_nodes rewrites every
// form into `value`, in the graph and its subgraphs, so that shape folding,
// If inlining, sequences and the graph import read one form. It runs after
// the checker, and again after expand_functions (ONNX's function bodies use
// the scalar forms).
#pragma once

#include <onnx/onnx_pb.h>

namespace kiln {

// Throws UserError for a sparse value whose indices are out of range (naming the node).
void normalize_constant_nodes(onnx::GraphProto& g);

}  // namespace kiln
