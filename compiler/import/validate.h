// Checks of an ONNX model that must pass before ONNX's own code (checker,
// version converter, shape inference) runs on it, because that code trusts
// them: the default-domain opset is one this ONNX library knows (a newer one
// would be treated as the newest, silently), and the attributes ONNX's shape
// inference divides by or sizes windows with (strides, dilations,
// kernel_shape, group, blocksize) are positive (a Conv with strides [0, 0]
// would stop kilnc with SIGFPE inside it), and every main-graph output is
// defined by the graph (ONNX's IR conversion under the version converter
// dereferences a null value otherwise; found by tests/fuzz/fuzz_onnx_import).
// Errors name the node or value and say what to fix.
#pragma once

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

namespace kiln {

// Throws UserError.
void validate_model(const onnx::ModelProto& model);

// ONNX's schema registry for shape inference (onnx::shape_inference::
// InferShapes), with checks in front of the inference functions that trust
// their inputs' ranks (Conv, ConvInteger, ConvTranspose, QLinearConv: the
// weight's rank equals the data's; MaxUnpool: its indices have a shape of
// that rank); a failed check is an onnx::InferenceError, like ONNX's own.
const onnx::ISchemaRegistry* guarded_schema_registry();

}  // namespace kiln
