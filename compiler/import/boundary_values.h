// Sequence and optional model inputs and outputs (docs/sequences.md).
//
// kilnc compiles tensors; ONNX models may also take and give sequences
// (lists of tensors) and optionals (a value or nothing). At the boundary
// each becomes tensors of the bundle:
//   a sequence NAME of N tensors (N a compile-time fact: kilnc
//     --sequence-length for an input, the graph's own for an output)
//     -> NAME[0] .. NAME[N-1];
//   an optional NAME -> a bool scalar NAME.present, and its value: a
//     tensor NAME.value, or a sequence's NAME[0] .. (none for an output
//     that is never set).
// Inputs are expanded here, before shape inference; outputs once the
// graph's sequences and optionals are resolved (static_sequences.h). Each
// step writes a record into the model's metadata_props for the importer,
// which puts them in graph::Graph::composites (the bundle's Composite table).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace kiln {

struct CompositeRecord {
  std::string name;       // the ONNX value
  bool output = false;    // a model output (else an input)
  bool optional = false;  // an optional (else a sequence)
  bool sequence = false;  // it is, or holds, a sequence of `count` tensors
  bool empty = false;     // an optional output that never holds a value
  int64_t count = 0;      // the sequence's length

  // The bundle inputs or outputs holding the value, in order.
  std::vector<std::string> element_names() const;
};

// "NAME[i]": element i of sequence NAME.
std::string sequence_element_name(const std::string& sequence, size_t index);
// "NAME.present": whether optional NAME holds a value (a bool scalar).
std::string optional_presence_name(const std::string& optional);
// "NAME.value": the tensor optional NAME holds (or the list, inside the graph).
std::string optional_value_name(const std::string& optional);

void add_composite_record(onnx::ModelProto& model, const CompositeRecord& record);
// Removes every record, range checks too (the import's first step: a
// model's own metadata must not pose as kilnc's).
void clear_composite_records(onnx::ModelProto& model);
// The records, in the order they were added. Throws InternalError for a malformed one.
std::vector<CompositeRecord> composite_records(const onnx::ModelProto& model);

// A value the import checks at run time (ONNX's errors the graph cannot
// express: a sequence position known only at run time must lie in its
// range): an int64 scalar `value` in [lo, hi].
// The importer copies it through a kiln.InputValue node, whose data
// symbol the runtime checks right after it (docs/sequences.md).
struct RangeCheck {
  std::string value;  // the checked value
  int64_t lo = 0;     // least allowed
  int64_t hi = 0;     // greatest allowed
  std::string node;   // the ONNX node it belongs to (the check is named "NODE.position")
};
void add_range_check(onnx::ModelProto& model, const RangeCheck& check);
std::vector<RangeCheck> range_checks(const onnx::ModelProto& model);

// Every sequence and optional model input becomes its tensors, in its
// place: a sequence NAME (kilnc --sequence-length NAME=N names each) is then
// defined by a SequenceConstruct (SequenceEmpty for 0) of NAME[i]; an
// optional keeps its typed input NAME (shape inference types its readers)
// until static_sequences.h has rewritten them, and an optional of a
// sequence gets a SequenceConstruct defining NAME.value. Throws UserError
// for a sequence without a length, a length for no sequence input, a
// sequence of non-tensors, or a name already taken.
void expand_composite_inputs(onnx::ModelProto& model, const std::map<std::string, int64_t>& lengths);

}  // namespace kiln
