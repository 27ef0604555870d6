// Topological order of an ONNX graph's nodes.
//
// ONNX requires a graph's nodes in topological order, and its checker and
// shape inference assume it; exporters and hand edits do not always keep it
// (ONNX Runtime sorts and runs such models). kilnc sorts every graph, its
// subgraphs too, before anything reads it: a node comes after the nodes that
// write what it reads, its subgraphs' reads of the enclosing graphs
// included. Nodes already in order keep their order (a stable sort: a sorted
// model is unchanged, byte for byte). An input nothing defines makes no
// edge (the import reports it, naming the node); a graph with a cycle is
// left as it is, for the import to report.
#pragma once

#include <onnx/onnx_pb.h>

#include <vector>

namespace kiln {

// The indices of `nodes` in a stable topological order: each after the
// nodes that write what it (or its subgraphs) reads, ready nodes taken by
// position. Nodes on a cycle, and those waiting for them, are left out.
std::vector<int> stable_topological_order(const std::vector<const onnx::NodeProto*>& nodes);

// Sorts `model`'s graphs in place; returns how many graphs were out of
// order and are sorted now (a graph with a cycle is not counted).
int sort_nodes(onnx::ModelProto& model);

}  // namespace kiln
