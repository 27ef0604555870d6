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
// names that node later. Also:
//   Identity of a list -> the list
//   Where(c, A, B) of two lists of one length -> one Where per element
//   SequenceMap        -> its body once per position (subgraph.h)
//   Optional(x), Optional() -> an optional: whether it holds a value (a
//                        bool, constant or computed) and the value
//   OptionalHasElement -> Identity of that bool
//   OptionalGetElement -> the value
//   Where(c, A, B) of two optionals -> a Where of the bools, and of the values
// Sequence and optional model inputs and outputs are their tensors
// (boundary_values.h): inputs were expanded before; outputs are expanded
// here, once nothing else reads what this step dissolved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

namespace kiln {

// Returns the number of sequence operators rewritten (0: the graph is unchanged).
// Throws UserError for a position out of range or an empty ConcatFromSequence.
int unroll_static_sequences(onnx::ModelProto& model);

}  // namespace kiln
