// The frontend interface: a model format kilnc reads (ONNX today, TFLite
// next) turned into the graph IR that every later step shares.
//
// A frontend is one row of driver/frontends.cpp's list: a name, whether a
// file is in its format (from its bytes: a FlatBuffers file identifier, a
// protobuf's first fields), and its import. An import builds a graph::Graph
// in which every value has a dtype and a shape (static, or dimensions over
// shape symbols: graph/graph.h), constants hold their bytes, and the model's
// inputs and outputs keep their names; it reports a malformed or unsupported
// model as a UserError naming the node (support/diagnostics.h), and may warn
// (report_warning). The options below are the format-independent ones the
// command line and the bindings give every frontend.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
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

struct Frontend {
  const char* name;         // "onnx": in messages
  const char* description;  // what it reads, e.g. "ONNX ModelProto (.onnx)"
  // Whether `bytes` (the whole file) is in this format: cheap, by its first bytes.
  bool (*recognizes)(const std::string& bytes);
  // The graph of `bytes`; external files (ONNX's external data) only from
  // inside `model_dir`. Throws UserError.
  graph::Graph (*import)(const std::string& bytes, const std::string& model_dir, const ImportOptions& options);
};

}  // namespace kiln
