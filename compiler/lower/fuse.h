// Operator fusion (TVM's rules, the epilogue part): decides which node
// outputs are not materialized but handed, as formulas, to their consumer.
//
// A value is fused into its consumer when it is produced by a kernel-emitting
// node with one output, is not a model output, has exactly one use, that use
// is an elementwise operator (role Elementwise in the operator table,
// graph/op_table.def: activations, arithmetic, Clip, BatchNormalization,
// ...), and the consumer's output has the value's shape (so each element is
// read once: nothing is recomputed). Chains fuse transitively: Conv ->
// Add(residual) -> Relu becomes one kernel; a reduction at the head of a
// chain is computed into a register where the epilogue reads it, and a
// kernel has one such anchor (role Heavy). Fusing into the inputs of
// reductions (which would recompute the producer per tap) is not done.
#pragma once

#include <set>

#include "graph/graph.h"

namespace kiln {

std::set<int> choose_fused_values(const graph::Graph& g);

}  // namespace kiln
