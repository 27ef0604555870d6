// ONNX → graph IR: the ONNX frontend (frontend/frontend.h).
//
// Parses the model with the pinned ONNX's protobuf classes (decision 60);
// sorts its nodes (import/sort_nodes.h); checks what ONNX's own code trusts
// (import/validate.h: known opset, attribute types, single assignment, ...);
// reads external data, only from inside the model's folder
// (import/external_data.h); runs ONNX's checker and shape inference, whose
// failures are warnings; brings models older than opset 7 up to opset 7
// with ONNX's version converter; expands local functions and operators ONNX
// defines by a function body (import/expand_functions.h) and ONNX Runtime's
// contrib operators (import/contrib_ops.h); applies --input-shape overrides
// to the graph inputs; and builds a graph::Graph in which every value has a
// dtype and a shape, every initializer, frozen input (--freeze-input) and
// Constant node is a constant value with its bytes. Declared shapes are
// hints (import/declared_shapes.h). Input dimensions given as ranges, the
// model's named ones bounded with --dim, and those nothing bounds (sized
// per run) become shape symbols, and every value's dimensions expressions
// over them (import/infer_dims.h); `shape` then holds their bounds.
#pragma once

#include <string>

#include "frontend/frontend.h"
#include "graph/graph.h"

namespace kiln {

// `bytes`: a serialized ModelProto; external data is read from `model_dir`.
// Throws UserError on a malformed model, a failed check or a shape kilnc
// cannot follow.
graph::Graph import_onnx_bytes(const std::string& bytes, const std::string& model_dir, const ImportOptions& options);

// The ONNX frontend (frontend/frontend.h): recognizes a ModelProto by its
// first fields, imports it with import_onnx_bytes.
extern const Frontend kOnnxFrontend;

}  // namespace kiln
