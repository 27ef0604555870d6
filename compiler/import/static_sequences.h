// Sequences whose structure is known at compile time become tensors.
//
// ONNX's sequence operators build lists of tensors; in most models the
// list's length and every position are compile-time facts (a
// SequenceConstruct of three tensors, a SequenceAt of a constant index, a
// SplitToSequence of a static dimension). This step follows each such list
// as the names of its element tensors and rewrites the operators on the
// ONNX graph, before shape inference folds the rest:
//   SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceErase -> the list itself
//   SequenceAt         -> Identity of the element
//   SequenceLength     -> a constant
//   ConcatFromSequence -> Concat (new_axis: Unsqueeze each element first)
//   SplitToSequence    -> Split (keepdims=0: Squeeze each part)
// Positions must be constants (initializers or Constant nodes, or folded
// shape computations). The rewrite is all or nothing per graph: when a
// sequence value reaches anything else (a model input or output, a Loop, a
// position known only at run time), the graph is left as it is and kilnc
// names that node later. Sequences as model inputs and outputs (run-time
// values) are not supported yet.
#pragma once

#include <onnx/onnx_pb.h>

namespace kiln {

// Returns the number of sequence operators rewritten (0: the graph is unchanged).
// Throws UserError for a position out of range or an empty ConcatFromSequence.
int unroll_static_sequences(onnx::ModelProto& model);

}  // namespace kiln
