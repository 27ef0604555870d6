// ONNX → graph IR.
//
// Parses the model with libonnx's protobuf classes; checks what ONNX's own
// code trusts (import/validate.h: known opset, positive strides, ...); reads
// external data, only from inside the model's folder
// (import/external_data.h); runs ONNX's checker; brings models older than
// opset 7 up to opset 7 with ONNX's version converter; applies
// --input-shape overrides to the graph inputs; runs ONNX's shape inference
// (with data propagation); and builds a graph::Graph in which every value
// has a static dtype and shape whose byte size fits in 63 bits, and every
// initializer, frozen input (--freeze-input) and Constant node is a
// constant value with its bytes. Input dimensions given as ranges (or the
// model's named ones bounded with --dim) become shape symbols, and every
// value's dimensions expressions over them (import/infer_dims.h); `shape`
// then holds their bounds.
#pragma once

#include <string>

#include "frontend/frontend.h"
#include "graph/graph.h"

namespace kiln {

// `bytes`: a serialized ModelProto; external data is read from `model_dir`.
// Throws UserError on a malformed model, a failed check or a dynamic shape.
graph::Graph import_onnx_bytes(const std::string& bytes, const std::string& model_dir, const ImportOptions& options);

// The ONNX frontend (frontend/frontend.h): recognizes a ModelProto by its
// first fields, imports it with import_onnx_bytes.
extern const Frontend kOnnxFrontend;

}  // namespace kiln
