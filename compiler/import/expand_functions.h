// ONNX operators defined as functions of other operators, expanded.
//
// ONNX defines many operators by a function body (Gelu, Swish,
// RMSNormalization, RotaryEmbedding, Attention, GroupNormalization,
// CenterCropPad, AffineGrid, ...; some bodies depend on the inputs' types),
// and a model may carry functions of its own (model-local functions, which
// PyTorch's exporters write). kilnc compiles what its operator table has a
// row for natively; every other default-domain node whose schema has a
// function body is replaced by that body (ONNX's inliner), which the
// passes and the fusion then compile like any other graph (decision 61).
// Model-local functions are inlined first, everywhere.
//
// Bodies built from their inputs' types need those types: expand_functions
// runs after each round of shape inference (fold_shapes.cpp), on the main
// graph (a subgraph's nodes are expanded once the If inliner or the loop
// unroller has brought them into it).
#pragma once

#include <onnx/onnx_pb.h>

namespace kiln {

// Inlines the model's local functions (and drops them).
void inline_local_functions(onnx::ModelProto& model);

// Replaces the main graph's nodes of default-domain operators that kilnc's
// operator table lacks and that ONNX defines by a function body; returns how
// many it replaced.
int expand_functions(onnx::ModelProto& model);

}  // namespace kiln
