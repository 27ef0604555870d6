// Everything a bundle describes, read once through the runtime's public
// accessors (kiln_model_get_*), for inspect, its --dot picture and profile's
// names and FLOPs; and the text helpers they share (shapes, JSON strings).
#ifndef KILN_TOOLS_KILN_CONTENTS_H_
#define KILN_TOOLS_KILN_CONTENTS_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "kiln/kiln.hpp"

namespace kiln_tool {

// The model was verified at load, so every index these hold is in range.
struct ModelContents {
  kiln_model_info_t info;                     // header facts, memory plan, counts
  std::vector<kiln_tensor_info_t> tensors;    // by index
  std::vector<kiln_tensor_info_t> inputs;     // model inputs, in order
  std::vector<kiln_tensor_info_t> outputs;    // model outputs, in order
  std::vector<kiln_node_info_t> nodes;        // by index
  std::vector<std::vector<kiln_attribute_info_t>> attributes;  // per node
  std::vector<kiln_library_info_t> libraries; // by index
  std::vector<kiln_kernel_info_t> kernels;    // by index
  std::vector<kiln_dispatch_info_t> dispatches;               // in run order
  std::vector<std::vector<kiln_binding_info_t>> bindings;     // per dispatch
  std::vector<kiln_composite_info_t> composites;              // sequence and optional inputs and outputs
};

// Reads every accessor of `model` into `out` (which must not outlive it).
kiln::Status ReadModelContents(const kiln::Model& model, ModelContents* out);

// "[1,3,224,224]"
std::string ShapeText(const kiln_tensor_info_t& t);
// "name:float32[1,3,224,224]"
std::string TensorText(const kiln_tensor_info_t& t);
// `s` as a JSON string literal (quotes included; control and non-ASCII bytes as \u00XX).
std::string JsonString(const char* s);
// "%016llx" of a hash.
std::string HexHash(uint64_t hash);
// The text value of node `node`'s attribute `name`, or nullptr.
const char* FindAttribute(const ModelContents& c, size_t node, const char* name);
// What dispatch `d` implements: `Conv "conv1" + Relu "relu1"`, or its
// kernel's name when it lists no source node.
std::string DispatchLabel(const ModelContents& c, size_t d);
// The FLOPs (2 per multiply-add) of node `node` when its operator is one
// whose count the shapes give (Conv, ConvTranspose, Gemm, MatMul); false
// otherwise.
bool NodeFlops(const ModelContents& c, size_t node, double* flops);

}  // namespace kiln_tool

#endif  // KILN_TOOLS_KILN_CONTENTS_H_
