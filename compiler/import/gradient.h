// ONNX's Gradient operator (domain ai.onnx.preview.training), expanded into
// the forward graph's derivative: reverse-mode differentiation at import.
//
// `Gradient(xs = [x1, ...], y = Y)` outputs dY/dx1, ...: the gradient of
// the sum of Y's elements with respect to each x (as ONNX Runtime seeds it,
// with ones). The import walks the nodes between the xs and Y backwards and
// writes each one's vector-Jacobian product as ordinary ONNX nodes in
// place of the Gradient node (ReduceSum undoes numpy broadcasting), so
// everything after is an ordinary graph: fused, planned and compiled like
// the forward pass. The rules (one per operator, in gradient.cpp): Add,
// Sub, Mul, Div, Neg, Identity, Relu, Sigmoid, Tanh, Exp and 2-D MatMul,
// on float tensors of static shapes. An x that Y does not depend on gets
// zeros. Anything else on the path is a user error naming the operator.
#pragma once

#include <onnx/onnx_pb.h>

namespace kiln {

// Expands every Gradient node of the main graph; shapes come from the
// graph's value_info (run ONNX's shape inference first). Returns how many
// it expanded.
int expand_gradients(onnx::ModelProto& model);

}  // namespace kiln
