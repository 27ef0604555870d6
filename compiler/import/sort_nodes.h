// Topological order of an ONNX graph's nodes.
//
// ONNX requires a graph's nodes in topological order, and its checker and
// shape inference assume it; exporters and hand edits do not always keep it
// (ONNX Runtime sorts and runs such models). kilnc sorts every graph, its
// subgraphs too, before anything reads it: a node comes after the nodes that
// write what it reads, its subgraphs' reads of the enclosing graphs
// included. Nodes already in order keep their order (a stable sort: a sorted
// model is unchanged, byte for byte). A node whose inputs nothing defines
// stays where the sort leaves it (after all the others that can be ordered):
// the import then reports the undefined input, naming the node.
#pragma once

#include <onnx/onnx_pb.h>

namespace kiln {

// Sorts `model`'s graphs in place; returns how many graphs were out of
// order and are sorted now (a graph with a cycle is not counted).
int sort_nodes(onnx::ModelProto& model);

}  // namespace kiln
