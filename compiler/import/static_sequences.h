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
// A sequence model output becomes one output per element, NAME[i]
// (sequence_element_name), and the model's metadata_props records it
// (kSequenceOutputKey + NAME -> the count); a sequence model input was made
// a SequenceConstruct of NAME[i] inputs before (onnx_import.cpp,
// kilnc --sequence-length). Their lengths are compile-time facts; the
// elements' values are the run's (docs/sequences.md).
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

// Every sequence model input (kilnc --sequence-length NAME=N names each)
// becomes N tensor inputs NAME[0..N-1] in its place, typed by the
// sequence's element type, and a SequenceConstruct (SequenceEmpty for 0) of
// them defines NAME. Returns the expanded inputs' names and lengths, in
// input order. Throws UserError for a sequence input without a length, a
// length for an input that is no sequence, or a sequence of sequences.
std::vector<std::pair<std::string, int64_t>> expand_sequence_inputs(onnx::ModelProto& model,
                                                                     const std::map<std::string, int64_t>& lengths);

// "NAME[i]": the model input or output holding element i of sequence NAME.
std::string sequence_element_name(const std::string& sequence, size_t index);

// metadata_props key prefix: a sequence model output (expanded), its length as the value.
inline const std::string kSequenceOutputKey = "kiln.sequence_output:";

}  // namespace kiln
