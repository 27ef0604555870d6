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

#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln {

// One dimension of --input-shape: a static size (lo == hi), a range LO..HI
// of sizes known only at run time, or `?`: the model's own name for the
// dimension (its dim_param), bounded by --dim NAME=LO..HI.
struct DimSpec {
  int64_t lo = 1;      // least size (the size, when static)
  int64_t hi = 1;      // greatest size
  bool named = false;  // `?`: keep the model's dim_param (lo, hi unused)

  DimSpec() = default;
  DimSpec(int64_t size) : lo(size), hi(size) {}  // NOLINT: implicit, a static size
  DimSpec(int64_t least, int64_t greatest) : lo(least), hi(greatest) {}
  static DimSpec model_named() {
    DimSpec d;
    d.named = true;
    return d;
  }
};

struct ImportOptions {
  std::map<std::string, std::vector<DimSpec>> input_shapes;        // --input-shape overrides by input name
  std::map<std::string, std::pair<int64_t, int64_t>> dim_bounds;   // --dim: bounds of the model's named dimensions
  std::map<std::string, std::string> frozen_inputs;               // --freeze-input: input name -> serialized TensorProto
  // --input-value: an integer input's elements, read at run time, lie in
  // [lo, hi]; each becomes a data symbol (a kiln.InputValue node copies them).
  std::map<std::string, std::pair<int64_t, int64_t>> input_values;
  // --sequence-length: a sequence model input's element count (its elements
  // become inputs NAME[0..N-1]; docs/sequences.md).
  std::map<std::string, int64_t> sequence_lengths;
  // --string-bytes: bytes per element a string model input's table holds
  // (docs/bundle.md#string-tensors).
  int64_t string_bytes = 64;
  // Values the runtime checks (a run-time sequence position in range,
  // boundary_values.h RangeCheck) get their kiln.InputValue node; off for
  // targets without data symbols (Vulkan), where they go unchecked.
  bool run_time_checks = true;
};

// `bytes`: a serialized ModelProto; external data is read from `model_dir`.
// Throws UserError on a malformed model, a failed check or a dynamic shape.
graph::Graph import_onnx_bytes(const std::string& bytes, const std::string& model_dir, const ImportOptions& options);

}  // namespace kiln
