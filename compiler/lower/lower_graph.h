// Graph → kernels: lowers every node through the operator library.
//
// The result is the list of kernels in execution order (one dispatch each)
// and, for every value, the root value whose storage it uses: operators that
// only reinterpret a shape alias their input. Shape nodes and shape-only
// operators on constants are folded to constants here (the full constant
// folder is a graph pass, issue 4). Model outputs always get storage of their
// own: a copy kernel is added where an output would alias a constant, a model
// input or another output.
#pragma once

#include <vector>

#include "graph/graph.h"
#include "lower/kernel.h"

namespace kiln {

struct LoweredProgram {
  std::vector<KernelDef> kernels;  // in dispatch order
  std::vector<int> storage_root;   // per value index: the value whose storage it shares
};

LoweredProgram lower_graph(graph::Graph& g);

}  // namespace kiln
