// Fuzz harness: the compiler's ONNX importer (compiler/import/: parse the
// ModelProto, validate_model, external data, ONNX's checker and version
// converter, shape inference, fold_shapes, graph IR), on serialized
// ModelProto bytes. Not lowering or code generation.
//
// External data is read relative to an empty temporary folder, so a model
// can only name files the importer must refuse.
//
// Must hold: the import either returns a graph or throws UserError (a
// message for the user). Crashes, ASan/UBSan reports, hangs, InternalError
// and any other exception are findings. A returned graph is well formed:
// every node's operands and results are values of the graph (or -1 where
// optional), nodes in topological order, every value's byte size fits 63
// bits, constants hold exactly their bytes, inputs and outputs are values.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "import/onnx_import.h"
#include "support/diagnostics.h"

#define FUZZ_CHECK(cond)                                                               \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      fprintf(stderr, "fuzz_onnx_import: check failed: %s (line %d)\n", #cond, __LINE__); \
      abort();                                                                         \
    }                                                                                  \
  } while (0)

namespace {

// The empty folder models are imported from (made once per process).
const std::string& ModelDir() {
  static const std::string dir = [] {
    char path[] = "/tmp/kiln_fuzz_onnx_XXXXXX";
    if (!mkdtemp(path)) abort();
    return std::string(path);
  }();
  return dir;
}

void CheckGraph(const kiln::graph::Graph& g) {
  const int value_count = (int)g.values.size();
  std::vector<bool> defined(g.values.size(), false);
  for (int v = 0; v < value_count; ++v) {
    const kiln::graph::Value& value = g.values[v];
    int64_t elements = 1;
    for (int64_t d : value.shape) {
      FUZZ_CHECK(d >= 0);
      FUZZ_CHECK(!__builtin_mul_overflow(elements, d, &elements));
    }
    int64_t bytes;
    FUZZ_CHECK(!__builtin_mul_overflow(elements, (int64_t)kiln::graph::dtype_size(value.dtype), &bytes));
    // A string constant is its table: offsets, then string_bytes of strings.
    if (value.is_constant()) FUZZ_CHECK(value.data->size() == value.byte_size());
    if (value.dtype != kiln::graph::DType::String) FUZZ_CHECK(value.byte_size() == (size_t)bytes);
    if (value.producer < 0) defined[v] = true;
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    for (int in : g.nodes[n].inputs) {
      FUZZ_CHECK(in >= -1 && in < value_count);
      if (in >= 0) FUZZ_CHECK(defined[in]);  // topological order
    }
    for (int out : g.nodes[n].outputs) {
      FUZZ_CHECK(out >= -1 && out < value_count);
      if (out >= 0) {
        FUZZ_CHECK(g.values[out].producer == (int)n);
        defined[out] = true;
      }
    }
  }
  for (int in : g.inputs) FUZZ_CHECK(in >= 0 && in < value_count);
  for (int out : g.outputs) FUZZ_CHECK(out >= 0 && out < value_count);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes((const char*)data, size);
  try {
    kiln::graph::Graph g = kiln::import_onnx_bytes(bytes, ModelDir(), kiln::ImportOptions());
    CheckGraph(g);
  } catch (const kiln::UserError&) {
    // The expected outcome for a malformed model.
  } catch (const kiln::InternalError& e) {
    fprintf(stderr, "fuzz_onnx_import: InternalError: %s\n", e.what());
    abort();
  } catch (const std::exception& e) {
    fprintf(stderr, "fuzz_onnx_import: exception other than UserError: %s\n", e.what());
    abort();
  }
  return 0;
}
