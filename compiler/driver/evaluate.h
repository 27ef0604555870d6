// Runs a graph on this machine with the compiler itself: the pipeline's own
// steps from lowering to the linked kernel library (driver/pipeline.h,
// compile_graph) for the host, then the library loaded in process
// (codegen/host_library.h) over a local arena. The driver hands it to the
// graph passes (graph::PassEnvironment::evaluate), where constant folding
// evaluates constant subgraphs with it; tests use it to compare a graph
// before and after a rewrite.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace kiln {

// Evaluates `g` (copied; not modified) with inputs[i] the bytes of
// g.inputs[i]; returns the bytes of each g.outputs[i]. Throws UserError /
// InternalError like compilation does.
std::vector<std::vector<uint8_t>> evaluate_graph(const graph::Graph& g, const std::vector<std::vector<uint8_t>>& inputs);

}  // namespace kiln
