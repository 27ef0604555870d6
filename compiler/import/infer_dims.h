// Run-time dimensions through the graph (docs/dynamic-shapes.md).
//
// When some model input dimensions are known only at run time (shape
// symbols, graph::Symbol), ONNX's shape inference leaves most dimensions
// downstream unknown: a convolution's output width is an expression in the
// input's, and exporters compute the target shapes of Reshape and Expand
// from the input's own (Shape -> Gather -> Concat -> Reshape). This step
// walks the graph in order and gives every value its dimensions as
// expressions over the symbols, operator by operator (the Dims column of
// graph/op_table.def). It follows small integer tensors that hold shapes as
// symbolic values (graph::Value::sym), so a Reshape whose target shape was
// computed from run-time dimensions gets exact dimensions too; the nodes
// that only computed such shapes become symbolic constants and drop out.
// Where two run-time dimensions must agree (broadcasting, a matrix product's
// inner dimension, a reshape's element count) it records a constraint the
// runtime checks (graph::ShapeConstraint).
#pragma once

#include <set>

#include "graph/graph.h"

namespace kiln {

// Fills every node output's dimensions. Before it runs, an output's `shape`
// holds what ONNX's shape inference knew: its rank, and -1 for each
// dimension it could not give; the outputs in `unknown_rank` (no rank
// either) take the rank their operator's rule gives. Model inputs already
// have their dimensions. Throws UserError naming the node where an
// operator's dimensions cannot be derived (no rule for it, or data-dependent
// in a way the rule cannot follow).
void infer_run_time_dims(graph::Graph& g, const std::set<int>& unknown_rank = {});

}  // namespace kiln
