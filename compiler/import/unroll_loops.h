// Loops whose trip count is a compile-time fact are unrolled.
//
// kilnc compiles a static dataflow graph; ONNX's Loop and Scan repeat a
// body graph. Where the number of repetitions is known at compile time, the
// body is copied once per iteration (subgraph.h) and the loop disappears:
//   Loop  with a constant trip count, a first condition that is absent or a
//         constant true, and a body that never ends early (its condition
//         output is its condition input, an Identity of it, or a constant
//         true): the iteration number becomes a constant, the carried values
//         thread through the copies, each scan output is the Concat of its
//         per-iteration values (Unsqueezed on axis 0);
//   Scan  (opset 8 with its batch axis and no sequence_lens; opset 9 on)
//         over inputs of static shape: each iteration Gathers one slice of
//         every scan input along its axis (in its direction), the states
//         thread through, each scan output is the Concat of its slices
//         along its axis (in its direction).
// SequenceMap over a sequence of known length is static_sequences.h's.
// A Loop with a trip count (or first condition) known only at run time
// whose carried values are additive recurrences (s + c, s + x[i]) becomes
// their closed forms over Range(0, trips): ONNX's Range function body, or a
// running sum (unroll_loops.cpp, `recurrence`). Other loops ending on a
// run-time condition, or with a trip count known only at run time, are left
// alone (kilnc names the node later). A loop whose copies
// would exceed kMaxUnrolledNodes nodes (nested graphs counted), or grow the
// graph past kMaxGraphNodes, is left alone too (subgraph.h).
#pragma once

#include <onnx/onnx_pb.h>

namespace kiln {

// Returns the number of Loop and Scan nodes unrolled (0: the graph is unchanged).
int unroll_static_loops(onnx::ModelProto& model);

}  // namespace kiln
