// The operator table's C++ face: graph::Op (one enumerator per row of
// graph/op_table.def) and each operator's traits. Passes, fusion, folding
// and the import ask these, never a list of op names of their own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::graph {

// Flags (the Flags column).
constexpr uint32_t kKeepsFinite = 1u << 0;       // finite inputs give finite outputs
constexpr uint32_t kNondeterministic = 1u << 1;  // random: never folded, never merged
constexpr uint32_t kAxisOperands = 1u << 2;      // operands along attribute `axis`, not numpy-broadcast
constexpr uint32_t kCommutesWithQuant = 1u << 3; // commutes with per-tensor quantization (moves or picks values)
constexpr uint32_t kDataShape = 1u << 4;         // output size known only after the kernel ran (a data symbol)
constexpr uint32_t kValueShape = 1u << 5;        // output size may come from a run-time input's values (then a data symbol)
constexpr uint32_t kPreviewTraining = 1u << 6;   // of domain ai.onnx.preview.training (ONNX's optimizers)
constexpr uint32_t kStrings = 1u << 7;           // takes or gives string tensors (import/string_values.cpp)
constexpr uint32_t kSizedByOutput = 1u << 8;     // its kernel needs only its output's shape, not the values deciding it
constexpr uint32_t kStoredBits = 1u << 9;        // handles bfloat16/float16/narrow types as stored (pass bfloat16 skips it)

// Parameter operands (the Params column): a bit per input position.
constexpr uint32_t kNoParams = 0;
constexpr uint32_t kParamsAfterFirst = ~1u;  // every input but the first (weights, bias, ...)
constexpr uint32_t kAllParams = ~0u;         // any input (MatMul: either side may be the weights)

enum class Op : uint16_t {
#define KILN_OP(id, name, family, lowering, role, layout, fold, params, flags, dims) id,
#include "graph/op_table.def"
#undef KILN_OP
  Unknown,  // not in the table: kilnc does not support it
};

// The operator library file that lowers an operator (lower/ops_<family>.cpp).
enum class OpFamily : uint8_t {
  Import, Conv, Pool, Elementwise, Math, Matmul, Shape, Softmax, Reduce, Index, Norm, Scan, Rnn, Loss, Resize,
  Quant, Layout, Select, Attention, Signal, Text, Random, Training, Ml, None,
};

// Fusion and evaluation role (see op_table.def).
enum class OpRole : uint8_t { Kernel, Elementwise, Heavy, Reshape, Passthrough, Import };

// What the layout pass does with an operator (see op_table.def).
enum class OpLayout : uint8_t { Nchw, Any, Conv, Pool, Concat, PackWeights };

// How import/fold_shapes.cpp computes an operator on small constants.
enum class ImportFold : uint8_t {
  None, Constant, Shape, Size, Identity, Cast, Unsqueeze, Squeeze, Reshape, Concat, Gather, Slice,
  ConstantOfShape, Range, Arith, Compare, Where, IntUnary, IntReduce, Logic,
};

// How import/infer_dims.cpp derives an operator's output dimensions when
// its inputs' are known only at run time (see op_table.def).
enum class OpDims : uint8_t {
  None, Same, Broadcast, Conv, ConvTranspose, Pool, GlobalPool, MatMul, Gemm, Reshape, Flatten, Squeeze, Unsqueeze,
  Shape, Size, Concat, Transpose, Reduce, TopK, Gather, GatherElements, GatherND, Slice, Expand, Tile, Pad, Split, DepthToSpace,
  SpaceToDepth, ConstantOfShape, Range, Resize, NonZero, Compress, NonMaxSuppression, Unique, Condition, InputValue, Window, Dft, Stft, MaxUnpool,
  MelWeightMatrix, StringNormalizer, StringSplit, Col2Im, AffineGrid, Recurrent,
};

// One row of the table.
struct OpTraits {
  Op op;                  // the enumerator (Op::Unknown for an operator not in the table)
  const char* name;       // the ONNX op type
  OpFamily family;        // which ops_<family>.cpp lowers it
  OpRole role;            // fusion / evaluation role
  OpLayout layout;        // layout pass behaviour
  ImportFold fold;        // import-time folding rule
  uint32_t param_inputs;  // bit i: input i is read as a parameter (weights)
  uint32_t flags;         // kKeepsFinite, kNondeterministic, kAxisOperands, kCommutesWithQuant, kDataShape
  OpDims dims;            // run-time dimensions rule

  bool known() const { return op != Op::Unknown; }
  bool elementwise() const { return role == OpRole::Elementwise; }
  // Reshape or Passthrough: the output holds the input's bytes unchanged, so
  // lowering aliases it and folding copies it.
  bool shape_only() const { return role == OpRole::Reshape || role == OpRole::Passthrough; }
  bool keeps_finite() const { return (flags & kKeepsFinite) != 0; }
  bool nondeterministic() const { return (flags & kNondeterministic) != 0; }
  bool data_shape() const { return (flags & kDataShape) != 0; }
  bool strings() const { return (flags & kStrings) != 0; }
  bool value_shape() const { return (flags & kValueShape) != 0; }
  bool axis_operands() const { return (flags & kAxisOperands) != 0; }
  bool commutes_with_quant() const { return (flags & kCommutesWithQuant) != 0; }
  bool preview_training() const { return (flags & kPreviewTraining) != 0; }
  bool sized_by_output() const { return (flags & kSizedByOutput) != 0; }
  bool stored_bits() const { return (flags & kStoredBits) != 0; }
  bool param_input(size_t position) const {
    return position < 32 ? ((param_inputs >> position) & 1u) != 0 : param_inputs == kAllParams;
  }
};

// The row of `op`.
const OpTraits& op_traits(Op op);
// The row named `name`; an Op::Unknown row (conservative traits: a plain
// kernel, nondeterministic, so never folded or merged) when it is not in the table.
const OpTraits& op_traits(const std::string& name);
// The ONNX op type of `op` (for nodes a pass creates).
const char* op_name(Op op);
// ONNX's classical-ML domain: its operators' rows carry it in their names.
constexpr const char* kMlDomain = "ai.onnx.ml";
// The row name of an ONNX node of `domain` and `op_type`: "ai.onnx.ml.TYPE"
// for domain ai.onnx.ml, the op type itself for the others (the default
// domain, and ai.onnx.preview.training, whose rows say so by a flag).
std::string onnx_op_name(const std::string& domain, const std::string& op_type);
// Every row, in table order.
const std::vector<OpTraits>& op_table();
// Printable names of the enums (kilnc --list-operators).
const char* family_name(OpFamily family);
const char* role_name(OpRole role);

}  // namespace kiln::graph
